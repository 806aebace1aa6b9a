#!/usr/bin/env python3
"""Record what torchlint says about some directories, and compare two such records.

A change that should not alter behaviour (a refactoring) is checked by taking a snapshot
with the old code and one with the new, then comparing them:

    python benchmarks/snapshot.py take --out before.json fixtures fixtures/demo /path/to/repo
    # ... change the code, reinstall ...
    python benchmarks/snapshot.py take --out after.json fixtures fixtures/demo /path/to/repo
    python benchmarks/snapshot.py compare before.json after.json

For each directory a snapshot holds the output of
``torchlint check --select ALL --output-format json --no-cache DIR`` (the findings, with
their fixes' edits) and of ``torchlint check --select ALL --diff --unsafe-fixes --no-cache
DIR`` (every fix as a diff), with both exit codes and what was printed on stderr.
``--torchlint`` names the command to run (default: ``torchlint`` on PATH), so two
installations can be compared without reinstalling. ``compare`` exits 1 and lists the
first differences when the two snapshots differ.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

RUNS = {
    "findings": ["check", "--select", "ALL", "--output-format", "json", "--no-cache", "-q"],
    "diff": ["check", "--select", "ALL", "--diff", "--unsafe-fixes", "--no-cache", "-q"],
}


def take(command: list[str], directories: list[str], jobs: int | None) -> dict[str, object]:
    snapshot: dict[str, object] = {}
    for directory in directories:
        entry: dict[str, object] = {}
        for name, arguments in RUNS.items():
            extra = ["--jobs", str(jobs)] if jobs else []
            done = subprocess.run([*command, *arguments, *extra, "."], cwd=directory,
                                  capture_output=True, text=True, errors="replace",
                                  env={**os.environ, "NO_COLOR": "1"})
            entry[name] = {"exit": done.returncode, "stdout": done.stdout,
                           "stderr": sorted(done.stderr.splitlines())}
        snapshot[os.path.abspath(directory)] = entry
        findings = entry["findings"]["stdout"]  # type: ignore[index]
        count = len(json.loads(findings)) if findings.strip().startswith("[") else "?"
        print(f"{directory}: {count} findings", file=sys.stderr)
    return snapshot


def compare(before: dict[str, dict], after: dict[str, dict]) -> list[str]:
    problems: list[str] = []
    for directory in sorted(set(before) | set(after)):
        if directory not in before or directory not in after:
            problems.append(f"{directory}: only in one snapshot")
            continue
        for run in RUNS:
            old, new = before[directory][run], after[directory][run]
            for part in ("exit", "stderr", "stdout"):
                if old[part] == new[part]:
                    continue
                if part == "stdout" and run == "findings":
                    problems.extend(_finding_differences(directory, old[part], new[part]))
                else:
                    problems.append(f"{directory} [{run}] {part} differs:\n"
                                    f"  before: {str(old[part])[:500]}\n"
                                    f"  after:  {str(new[part])[:500]}")
    return problems


def _finding_differences(directory: str, old: str, new: str) -> list[str]:
    try:
        old_rows = {json.dumps(r, sort_keys=True) for r in json.loads(old)}
        new_rows = {json.dumps(r, sort_keys=True) for r in json.loads(new)}
    except ValueError:
        return [f"{directory} [findings] output is not JSON in one snapshot"]
    lines = [f"{directory} [findings] - {row}" for row in sorted(old_rows - new_rows)]
    lines += [f"{directory} [findings] + {row}" for row in sorted(new_rows - old_rows)]
    return lines or [f"{directory} [findings] same findings, other order"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="action", required=True)
    take_parser = sub.add_parser("take", help="run torchlint over directories, save the output")
    take_parser.add_argument("directories", nargs="+")
    take_parser.add_argument("--out", required=True, type=Path)
    take_parser.add_argument("--torchlint", default="torchlint",
                             help="the command to run (e.g. '/venv/bin/torchlint')")
    take_parser.add_argument("--jobs", type=int, default=None)
    compare_parser = sub.add_parser("compare", help="list the differences of two snapshots")
    compare_parser.add_argument("before", type=Path)
    compare_parser.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.action == "take":
        snapshot = take(shlex.split(args.torchlint), args.directories, args.jobs)
        args.out.write_text(json.dumps(snapshot, indent=1, sort_keys=True), encoding="utf-8")
        return 0
    problems = compare(json.loads(args.before.read_text(encoding="utf-8")),
                       json.loads(args.after.read_text(encoding="utf-8")))
    for problem in problems[:200]:
        print(problem)
    print(f"{len(problems)} difference(s)" if problems else "identical")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
