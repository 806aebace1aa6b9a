#!/usr/bin/env python3
"""Benchmark torchlint on a directory: cold, warm, a bare libcst parse, and TorchFix.

    python benchmarks/bench.py /path/to/repo [--jobs N] [--select default|ALL|CODES]
                               [--torchfix-cmd "/venv/bin/torchfix"] [--repeat 3] [--json]

Each measurement runs in a fresh subprocess. For each it prints the wall time,
the CPU time (user + sys of the whole process tree: what matters on a busy
machine) and the peak memory of the process tree (the sum over its processes of
the proportional set size, sampled every 20 ms; RSS where PSS is not readable).

- ``torchlint cold``: ``torchlint check`` (the default rules unless ``--select``) with an
  empty cache directory.
- ``torchlint warm``: the same command again, the cache now filled.
- ``bare parse``:  ``libcst.parse_module`` on the same .py/.pyi files, with the same
  worker count and the same scheduling as torchlint's runner: the floor that
  torchlint's own work is measured against.
- ``torchfix``:     ``torchfix --select ALL -j N DIR`` when a command is given with
  ``--torchfix-cmd`` or ``torchfix`` is on PATH (install it in its own venv).

Targets: cold <= 1.5x bare parse; TorchFix >= 20x cold; warm <= 10 % of cold;
peak memory < 500 MB.
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
    if process.returncode not in (0, 1):
        sys.stderr.write(f"{name}: exit {process.returncode}\n{stderr.decode(errors='replace')}")
    peak_mb = max(peak / 1024, usage.ru_maxrss / 1024)
    return Measure(name, wall, usage.ru_utime + usage.ru_stime, peak_mb, process.returncode)


def best(name: str, command: list[str], repeat: int, before=None) -> Measure:
    """The fastest of ``repeat`` runs (``before`` runs first each time: e.g. empty the cache)."""
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        runs.append(measure(name, command))
    fastest = min(runs, key=lambda m: m.wall)
    fastest.peak_mb = max(m.peak_mb for m in runs)
    return fastest


def python_files(directory: str) -> list[str]:
    from torchlint.config.discovery import discover
    from torchlint.config.settings import Settings

    found = discover([directory], Settings(root=directory), suffixes=(".py", ".pyi"))
    return found.files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--select", default="default",
                        help="torchlint --select (default: 'default', the rules `torchlint "
                             "check` runs out of the box; e.g. ALL for every rule)")
    parser.add_argument("--torchfix-cmd", default=None,
                        help="TorchFix command, e.g. '/work/tfvenv/bin/torchfix' "
                             "(default: torchfix on PATH; 'none' skips it)")
    parser.add_argument("--torchlint-cmd", default=f"{shlex.quote(sys.executable)} -m torchlint",
                        help="how to start torchlint (default: this Python's -m torchlint)")
    parser.add_argument("--python", default=sys.executable,
                        help="Python with libcst and torchlint, for the bare parse")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measure, best kept")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args(argv)

    directory = os.path.abspath(args.directory)
    files = python_files(directory)
    work = tempfile.mkdtemp(prefix="torchlint-bench-")
    cache = os.path.join(work, "cache")
    listing = os.path.join(work, "files.txt")
    script = os.path.join(work, "bare_parse.py")
    Path(listing).write_text("\n".join(files) + "\n", encoding="utf-8")
    Path(script).write_text(BARE_PARSE, encoding="utf-8")

    selection = [] if args.select == "default" else ["--select", args.select]
    torchlint = [*shlex.split(args.torchlint_cmd), "check", directory, *selection,
                 "--jobs", str(args.jobs), "--cache-dir", cache, "--exit-zero", "--quiet"]
    results: list[Measure] = []
    try:
        results.append(best("bare parse", [args.python, script, listing, str(args.jobs)],
                            args.repeat))
        results.append(best("torchlint cold", torchlint, args.repeat,
                            before=lambda: shutil.rmtree(cache, ignore_errors=True)))
        results.append(best("torchlint warm", torchlint, args.repeat))
        torchfix = args.torchfix_cmd or shutil.which("torchfix")
        if torchfix and torchfix != "none":
            results.append(best("torchfix", [*shlex.split(torchfix), "--select", "ALL",
                                             "-j", str(args.jobs), directory], 1))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    by_name = {m.name: m for m in results}
    cold, warm, bare = by_name["torchlint cold"], by_name["torchlint warm"], by_name["bare parse"]
    ratios = {
        "cold / bare parse (target <= 1.5)": (cold.wall / bare.wall, cold.cpu / bare.cpu),
        "warm / cold (target <= 0.10)": (warm.wall / cold.wall, warm.cpu / cold.cpu),
    }
    if "torchfix" in by_name:
        tf = by_name["torchfix"]
        ratios["torchfix / cold (target >= 20)"] = (tf.wall / cold.wall, tf.cpu / cold.cpu)
    if args.json:
        print(json.dumps({"directory": directory, "files": len(files), "jobs": args.jobs,
                          "results": [asdict(m) for m in results],
                          "ratios": {k: {"wall": w, "cpu": c} for k, (w, c) in ratios.items()}},
                         indent=2))
        return 0
    print(f"{directory}: {len(files)} Python files, {args.jobs} jobs, --select {args.select}")
    print(f"{'':16} {'wall s':>8} {'cpu s':>8} {'ms/file':>8} {'peak MB':>8}")
    for m in results:
        per_file = 1000 * m.wall / max(len(files), 1)
        print(f"{m.name:16} {m.wall:8.2f} {m.cpu:8.2f} {per_file:8.1f} {m.peak_mb:8.0f}")
    for label, (wall, cpu) in ratios.items():
        print(f"{label:36} wall {wall:6.2f}x   cpu {cpu:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
