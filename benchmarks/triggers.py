#!/usr/bin/env python3
"""Check the rules' prefilters (``triggers`` and ``patterns`` on the text, ``requires`` on
the ``ast`` facts) against code bases.

    python benchmarks/triggers.py /path/to/repo [/another/repo ...] [--select ALL] [--jobs N]
                                  [--no-preview]

Every file (notebooks included: their code cells as one program) is linted with every
selected rule forced to run (no prefilter), preview on (``--no-preview``: off, and only the
default tier's findings count; a check may rule preview shapes out there). A rule's
prefilter lets a file through when both the run's screen (which knows the project, as a
run does) and the engine's own prefilter do. For each rule it prints how many files its
prefilter lets through, how many hold a finding of it, and every finding the prefilter
would have hidden: that list must be empty. The last line counts the files that some rule
lets through (those are parsed by libcst) against all files.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # check this checkout's rules and triggers, wherever it is
    sys.path.insert(0, str(ROOT))

from torchlint.config.discovery import discover  # noqa: E402
from torchlint.config.selectors import expand_selectors  # noqa: E402
from torchlint.config.settings import Settings  # noqa: E402
from torchlint.engine.lint import lint_source  # noqa: E402
from torchlint.engine.prefilter import could_fire, star_import_binds  # noqa: E402
from torchlint.engine.screen import screen  # noqa: E402
from torchlint.engine.triage import triage  # noqa: E402
from torchlint.notebook import Notebook, NotebookError  # noqa: E402
from torchlint.registry import all_rules  # noqa: E402
from torchlint.source import DecodeError, SourceFile  # noqa: E402


def _source(path: str) -> SourceFile | None:
    try:
        if path.endswith(".ipynb"):
            notebook = Notebook.read(path)
            if not notebook.cells or not notebook.is_python:
                return None
            return SourceFile(path=path, text=notebook.program)
        with open(path, "rb") as handle:
            return SourceFile.from_bytes(path, handle.read())
    except (OSError, DecodeError, NotebookError, ValueError, RecursionError):
        return None


_SETTINGS: dict[str, Settings] = {}


_PREVIEW = [True]


def _settings(root: str) -> Settings:
    """One configuration per repository, as a run has (its project knowledge included)."""
    if root not in _SETTINGS:
        _SETTINGS[root] = Settings(select=("ALL",), preview=_PREVIEW[0], root=root)
    return _SETTINGS[root]


def check_file(path: str, codes: tuple[str, ...], root: str
               ) -> tuple[str, list[str], list[str]] | None:
    """(path, codes whose prefilter passes, 'line:col code' of every finding)."""
    source = _source(path)
    if source is None:
        return None
    rules = [all_rules()[code] for code in codes]
    base = _settings(root).for_file(path)
    settings = replace(base, codes=frozenset(codes), rule_classes=tuple(rules))
    options = settings.options
    # the rules a run parses the file for: the screen's (with the project known, as in a
    # run), and of those, the ones the engine's own prefilter lets run
    screened = screen(source, settings)
    facts = triage(source.text)
    star = star_import_binds(source.text, settings.project)  # the engine runs every rule
    passing = [rule.code for rule in rules if (screened is None or rule.code in screened) and (
        star or could_fire(rule, source.text, options) and (
            facts is None or rule.requires is None or rule.requires.holds(facts, options)))]
    result = lint_source(source, settings, prefilter=False)
    findings = [f"{d.line}:{d.column} {d.code}" for d in result.diagnostics]
    return path, passing, findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", nargs="+")
    parser.add_argument("--select", default="ALL")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-preview", action="store_true",
                        help="preview off: only the default tier's findings count")
    args = parser.parse_args(argv)
    _PREVIEW[0] = not args.no_preview  # (the workers fork after this)
    files: list[str] = []
    roots: list[str] = []
    for directory in map(os.path.abspath, args.directory):
        found = discover([directory], Settings(root=directory),
                         suffixes=(".py", ".pyi", ".ipynb")).files
        files += found
        roots += [directory] * len(found)
    codes = tuple(c for c in expand_selectors(args.select.split(","))
                  if c not in ("TL001", "TL002"))
    passed: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    hidden: list[str] = []
    parsed = 0
    total, done = Counter(roots), Counter[str]()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for root, item in zip(roots, pool.map(check_file, files, [codes] * len(files), roots,
                                              chunksize=8)):
            done[root] += 1
            if done[root] == total[root]:
                print(f"checked {root}: {total[root]} files", flush=True)
            if item is None:
                continue
            path, passing, findings = item
            parsed += bool(passing)
            passed.update(passing)
            found_codes = {f.split()[1] for f in findings}
            flagged.update(found_codes)
            for finding in findings:
                if finding.split()[1] not in passing:
                    hidden.append(f"{os.path.relpath(path, root)}:{finding}")
                    print(f"HIDDEN {hidden[-1]}", flush=True)  # at once: a long run may stop
    print(f"{'rule':8} {'passes':>7} {'flagged':>8}")
    for code in codes:
        print(f"{code:8} {passed[code]:7} {flagged[code]:8}")
    print(f"{parsed} of {len(files)} files pass some prefilter; {len(hidden)} findings hidden")
    return 1 if hidden else 0


if __name__ == "__main__":
    sys.exit(main())
