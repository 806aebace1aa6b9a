#!/usr/bin/env python3
"""What the size analysis behind TL510-TL512 proves on real code, per repository.

    python benchmarks/shapes.py /work/corpus [--repos examples,minGPT] [--jobs N] [--details]

For each repository (each folder under the given one) every ``.py`` file is read, its size
chains inferred (``torchlint.analysis.sizes``), and three numbers printed: chains proved
consistent (at least one comparison of two known sizes or ranks, and no mismatch),
chains stopped at an unknown (a reshape, a branch, an unknown call or size), and
findings (TL510/TL511/TL512). ``--details`` lists every finding. The project's other files
are read as ``torchlint check`` reads them (constructions, constants, classes used as
layers). Notebooks are not read.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from torchlint.analysis.context import FileContext  # noqa: E402
from torchlint.analysis.project import Project  # noqa: E402
from torchlint.analysis.sizes import size_facts  # noqa: E402
from torchlint.engine.parse import parse  # noqa: E402
from torchlint.source import DecodeError, SourceFile  # noqa: E402

_CODES = {"size": "TL510", "flatten": "TL511", "rank": "TL512"}
_HINTS = ("Linear", "Conv", "Norm", "LSTM", "GRU", "RNN", "Embedding", "Sequential")
# the project's other files, as a run of ``torchlint check`` reads them (one per process)
_PROJECT = Project()


def file_counts(path: str) -> tuple[int, int, list[str]]:
    """(chains proved consistent, chains stopped, findings as 'path: CODE message')."""
    try:
        with open(path, "rb") as handle:
            source = SourceFile.from_bytes(path, handle.read())
    except (OSError, DecodeError):
        return 0, 0, []
    if not any(hint in source.text for hint in _HINTS):
        return 0, 0, []
    try:
        module = parse(source.text)
    except Exception:  # noqa: BLE001 - a file libcst cannot parse has no chains
        return 0, 0, []
    facts = size_facts(FileContext(path, module, project=_PROJECT))
    proved = sum(1 for c in facts.chains if c.checks and not c.mismatches)
    stopped = sum(1 for c in facts.chains if c.stopped)
    findings = [f"{path}: {_CODES[m.kind]} {m.message}"
                for found in facts.by_node.values() for m in found]
    return proved, stopped, findings


def python_files(root: str) -> list[str]:
    found = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        found += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("--repos", default="", help="comma-separated folder names (default: all)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--details", action="store_true", help="list every finding")
    args = parser.parse_args()
    repos = [r for r in args.repos.split(",") if r] or sorted(
        d for d in os.listdir(args.corpus) if os.path.isdir(os.path.join(args.corpus, d)))
    totals = [0, 0, 0]
    details: list[str] = []
    print(f"{'repository':<32} {'proved':>7} {'stopped':>8} {'findings':>9}")
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for repo in repos:
            files = python_files(os.path.join(args.corpus, repo))
            proved = stopped = 0
            findings: list[str] = []
            for p, s, f in pool.map(file_counts, files, chunksize=8):
                proved, stopped = proved + p, stopped + s
                findings += f
            print(f"{repo:<32} {proved:>7} {stopped:>8} {len(findings):>9}", flush=True)
            totals = [totals[0] + proved, totals[1] + stopped, totals[2] + len(findings)]
            details += findings
    print(f"{'total':<32} {totals[0]:>7} {totals[1]:>8} {totals[2]:>9}")
    if args.details:
        print("\n".join(details))
    return 0


if __name__ == "__main__":
    sys.exit(main())
