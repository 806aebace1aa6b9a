#!/usr/bin/env python3
"""Check the rules' prefilters (``triggers`` and ``patterns``) against a code base.

    python benchmarks/triggers.py /path/to/repo [--select ALL] [--jobs N]

Every file is linted with every selected rule forced to run (no prefilter). For each
rule it prints how many files its prefilter lets through, how many hold a finding of it,
and every finding the prefilter would have hidden: that list must be empty. The last line
counts the files that some rule lets through (those are parsed) against all files.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor

from torchlint.config.discovery import discover
from torchlint.config.file_settings import FileSettings
from torchlint.config.selectors import expand_selectors
from torchlint.config.settings import Settings
from torchlint.engine.lint import lint_source
from torchlint.engine.prefilter import could_fire
from torchlint.registry import all_rules
from torchlint.source import DecodeError, SourceFile


def check_file(path: str, codes: tuple[str, ...]) -> tuple[str, list[str], list[str]] | None:
    """(path, codes whose prefilter passes, 'line:col code' of every finding)."""
    try:
        with open(path, "rb") as handle:
            source = SourceFile.from_bytes(path, handle.read())
    except (OSError, DecodeError):
        return None
    rules = [all_rules()[code] for code in codes]
    passing = [rule.code for rule in rules if could_fire(rule, source.text)]
    result = lint_source(source, FileSettings.for_rules(rules, set(codes)), prefilter=False)
    findings = [f"{d.line}:{d.column} {d.code}" for d in result.diagnostics]
    return path, passing, findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    directory = os.path.abspath(args.directory)
    files = discover([directory], Settings(root=directory), suffixes=(".py", ".pyi")).files
    codes = tuple(c for c in expand_selectors(args.select.split(","))
                  if c not in ("TL001", "TL002"))
    passed: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    hidden: list[str] = []
    parsed = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for item in pool.map(check_file, files, [codes] * len(files), chunksize=8):
            if item is None:
                continue
            path, passing, findings = item
            parsed += bool(passing)
            passed.update(passing)
            found_codes = {f.split()[1] for f in findings}
            flagged.update(found_codes)
            for finding in findings:
                if finding.split()[1] not in passing:
                    hidden.append(f"{os.path.relpath(path, directory)}:{finding}")
    print(f"{'rule':8} {'passes':>7} {'flagged':>8}")
    for code in codes:
        print(f"{code:8} {passed[code]:7} {flagged[code]:8}")
    for line in hidden:
        print(f"HIDDEN {line}")
    print(f"{parsed} of {len(files)} files pass some prefilter; {len(hidden)} findings hidden")
    return 1 if hidden else 0


if __name__ == "__main__":
    sys.exit(main())
