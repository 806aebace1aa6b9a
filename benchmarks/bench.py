#!/usr/bin/env python3
"""Benchmark torchlint on code bases, as ratios to yardsticks measured in the same run.

    python benchmarks/bench.py DIR [DIR ...] [--jobs 2] [--select default|ALL|CODES]
                               [--repeat 3] [--ruff-cmd ruff] [--json]

Each measurement runs in a fresh subprocess; CPU time is user + sys of the whole process
tree (what matters on a busy machine), also wall time and peak memory (the summed
proportional set size of the tree, sampled every 20 ms; RSS where PSS is not readable).
Per code base and per round, every command runs once, in turn: the ratios are taken
round by round and their median is printed (pairing keeps them meaningful when the
machine's speed drifts).

- ``ast parse``: CPython's ``ast.parse`` of the same .py/.pyi files in one process: the
  floor of any Python linter.
- ``libcst parse``: ``libcst.parse_module`` on the same files, with the runner's workers.
- ``cold``: ``torchlint check --no-cache`` (the default rules unless ``--select``).
- ``warm``: the same command with a filled cache.
- ``ruff``: ``ruff check --select ALL --no-cache`` on the directory, when Ruff is installed.
- ``one file``: ``torchlint check --no-cache`` of the code base's median-sized file, against
  a bare Python process that parses that file with ``ast`` (``one file / ast``).
- ``libcst files``: how many files the triage sends to libcst (the rest are answered from
  the ``ast`` facts alone), of all files.
- ``floor``: the least a run whose rules are libcst visitors must do, in one process:
  start Python, import libcst, ``ast.parse`` every file (the triage; CPython's syntax
  errors) and ``libcst.parse_module`` the files that have findings (they are listed by one
  untimed run first). No rule runs in it, so ``floor / ast parse`` is a lower bound of
  ``cold / ast parse`` that no screening can go below.

Targets: cold <= 4x ast parse; warm <= 10 % of cold; one file <= 8x its bare ast process.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # count with this checkout's screen, whatever the folder
    sys.path.insert(0, str(ROOT))

AST_PARSE = r"""
import ast, sys

for path in open(sys.argv[1], encoding="utf-8").read().splitlines():
    try:
        with open(path, "rb") as handle:
            ast.parse(handle.read())
    except (SyntaxError, ValueError):
        pass
"""

# the same ast parse, then libcst's parse of the files listed second
FLOOR = AST_PARSE + r"""
import libcst

for path in open(sys.argv[2], encoding="utf-8").read().splitlines():
    try:
        with open(path, "rb") as handle:
            libcst.parse_module(handle.read())
    except Exception:
        pass
"""

ONE_AST = "import ast, sys\nwith open(sys.argv[1], 'rb') as f:\n    ast.parse(f.read())\n"

BARE_PARSE = r"""
import sys, os
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
import libcst
from torchlint.run.runner import _chunks

def parse_chunk(paths):
    n = 0
    for path in paths:
        try:
            with open(path, "rb") as handle:
                libcst.parse_module(handle.read())
            n += 1
        except Exception:
            pass
    return n

if __name__ == "__main__":
    jobs = int(sys.argv[2])
    paths = open(sys.argv[1], encoding="utf-8").read().splitlines()
    if jobs <= 1:
        parse_chunk(paths)
    else:
        ctx = multiprocessing.get_context(
            "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            sum(pool.map(parse_chunk, _chunks(paths, jobs)))
"""


@dataclass
class Measure:
    name: str
    wall: float  # seconds
    cpu: float  # seconds, user + sys, the process and its waited-for children
    peak_mb: float  # peak of the summed memory of the process tree
    returncode: int


def _children_of(root: int) -> list[int]:
    """``root`` and its descendants, from /proc (Linux); just ``root`` elsewhere."""
    parents: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return [root]
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(parents.get(pid, ()))
    return tree


def _memory_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/statm", "rb") as handle:
            return int(handle.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)
    except (OSError, ValueError):
        return 0


def measure(name: str, command: list[str], env: dict[str, str] | None = None) -> Measure:
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=env)
    peak = 0
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            total = sum(_memory_kb(pid) for pid in _children_of(process.pid))
            peak = max(peak, total)
            stop.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stderr = process.stderr.read() if process.stderr else b""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    stop.set()
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1) or name.endswith(("parse", "ast")) and process.returncode:
        sys.stderr.write(f"{name}: exit {process.returncode}\n{stderr.decode(errors='replace')}")
    peak_mb = max(peak / 1024, usage.ru_maxrss / 1024)
    return Measure(name, wall, usage.ru_utime + usage.ru_stime, peak_mb, process.returncode)


def python_files(directory: str) -> list[str]:
    from torchlint.config.discovery import discover
    from torchlint.config.settings import Settings

    found = discover([directory], Settings(root=directory), suffixes=(".py", ".pyi"))
    return found.files


def files_with_findings(check: list[str], env: dict[str, str]) -> list[str]:
    """The files the cold run reports findings in (one untimed run, JSON output)."""
    done = subprocess.run([*check, "--no-cache", "--output-format", "json"], env=env,
                          capture_output=True, text=True, check=False)
    try:
        findings = json.loads(done.stdout or "[]")
    except json.JSONDecodeError:
        sys.stderr.write(f"no findings could be read: {done.stderr}")
        return []
    return sorted({os.path.abspath(f["filename"]) for f in findings})


def libcst_files(directory: str, files: list[str], select: str) -> int:
    """How many of ``files`` the screen cannot answer, so that libcst parses them."""
    from torchlint.config.settings import Settings
    from torchlint.engine.screen import certainly_clean
    from torchlint.source import DecodeError, SourceFile

    settings = Settings(root=directory) if select == "default" else Settings(
        root=directory, select=tuple(select.split(",")))
    parsed = 0
    for path in files:
        try:
            with open(path, "rb") as handle:
                source = SourceFile.from_bytes(path, handle.read())
        except (OSError, DecodeError):
            continue
        parsed += not certainly_clean(source, settings.for_file(path))
    return parsed


def median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def bench(directory: str, args: argparse.Namespace, work: str) -> dict[str, object]:
    files = python_files(directory)
    cache = os.path.join(work, "cache")
    listing = os.path.join(work, "files.txt")
    Path(listing).write_text("\n".join(files) + "\n", encoding="utf-8")
    scripts = {}
    for name, text in (("ast", AST_PARSE), ("libcst", BARE_PARSE), ("one", ONE_AST),
                       ("floor", FLOOR)):
        # not ast.py nor libcst.py: a script's folder comes first on sys.path
        scripts[name] = os.path.join(work, f"parse_{name}.py")
        Path(scripts[name]).write_text(text, encoding="utf-8")
    one = sorted(files, key=os.path.getsize)[len(files) // 2] if files else None
    selection = [] if args.select == "default" else ["--select", args.select]
    torchlint = shlex.split(args.torchlint_cmd)
    check = [*torchlint, "check", directory, *selection, "--jobs", str(args.jobs),
             "--exit-zero", "--quiet"]
    # the torchlint of this checkout, wherever the benchmark is run from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    found = os.path.join(work, "found.txt")
    Path(found).write_text("".join(f"{path}\n" for path in files_with_findings(check, env)),
                           encoding="utf-8")
    commands: dict[str, list[str]] = {
        "ast parse": [args.python, scripts["ast"], listing],
        "floor": [args.python, scripts["floor"], listing, found],
        "libcst parse": [args.python, scripts["libcst"], listing, str(args.jobs)],
        "cold": [*check, "--no-cache"],
        "warm": [*check, "--cache-dir", cache],
    }
    ruff = args.ruff_cmd or shutil.which("ruff")
    if ruff and ruff != "none":
        commands["ruff"] = [*shlex.split(ruff), "check", "--select", "ALL", "--no-cache",
                            "--exit-zero", "--quiet", directory]
    if one is not None:
        commands["one file"] = [*torchlint, "check", "--no-cache", "--exit-zero", "--quiet",
                                *selection, one]
        commands["one file ast"] = [args.python, scripts["one"], one]
    # fill the cache once for the warm runs
    subprocess.run([*check, "--cache-dir", cache], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    rounds: list[dict[str, Measure]] = []
    for _ in range(args.repeat):
        rounds.append({name: measure(name, command, env) for name, command in commands.items()})
    pairs = {
        "cold / ast parse (target <= 4)": ("cold", "ast parse"),
        "cold / libcst parse": ("cold", "libcst parse"),
        "floor / ast parse": ("floor", "ast parse"),
        "cold / floor": ("cold", "floor"),
        "warm / cold (target <= 0.10)": ("warm", "cold"),
        "one file / ast (target <= 8)": ("one file", "one file ast"),
        "cold / ruff": ("cold", "ruff"),
    }
    ratios = {label: median([r[a].cpu / max(r[b].cpu, 1e-9) for r in rounds])
              for label, (a, b) in pairs.items() if a in commands and b in commands}
    results = {name: Measure(name, median([r[name].wall for r in rounds]),
                             median([r[name].cpu for r in rounds]),
                             max(r[name].peak_mb for r in rounds),
                             rounds[-1][name].returncode) for name in commands}
    return {"directory": directory, "files": len(files),
            "libcst files": libcst_files(directory, files, args.select),
            "one file": one, "results": results, "ratios": ratios}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directories", nargs="+")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--select", default="default",
                        help="torchlint --select (default: 'default', the rules `torchlint "
                             "check` runs out of the box; e.g. ALL for every rule)")
    parser.add_argument("--ruff-cmd", default=None,
                        help="Ruff command (default: ruff on PATH; 'none' skips it)")
    parser.add_argument("--torchlint-cmd", default=f"{shlex.quote(sys.executable)} -m torchlint",
                        help="how to start torchlint (default: this Python's -m torchlint)")
    parser.add_argument("--python", default=sys.executable,
                        help="Python with libcst and torchlint, for the bare parses")
    parser.add_argument("--repeat", type=int, default=3, help="rounds; medians are printed")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    reports = []
    for directory in map(os.path.abspath, args.directories):
        work = tempfile.mkdtemp(prefix="torchlint-bench-")
        try:
            report = bench(directory, args, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        reports.append(report)
        if not args.json:  # each code base as soon as it is measured
            print_report(report, args)
    if args.json:
        print(json.dumps([{**r, "results": [asdict(m) for m in r["results"].values()]}
                          for r in reports], indent=2))
    return 0


def print_report(report: dict[str, object], args: argparse.Namespace) -> None:
    files = report["files"]
    print(f"{report['directory']}: {files} Python files, {args.jobs} jobs, "
          f"--select {args.select}, {args.repeat} rounds (medians)")
    print(f"  libcst parses {report['libcst files']} of {files} files; one file: "
          f"{report['one file']}")
    print(f"  {'':14} {'wall s':>8} {'cpu s':>8} {'peak MB':>8}")
    for m in report["results"].values():  # type: ignore[attr-defined]
        print(f"  {m.name:14} {m.wall:8.2f} {m.cpu:8.2f} {m.peak_mb:8.0f}")
    for label, ratio in report["ratios"].items():  # type: ignore[attr-defined]
        print(f"  {label:34} cpu {ratio:6.2f}x")
    sys.stdout.flush()

if __name__ == "__main__":
    sys.exit(main())
