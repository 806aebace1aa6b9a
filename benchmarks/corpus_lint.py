"""What the precision and recall harnesses share: the corpus list and one torchlint run
over a repository, as findings.

The run imports torchlint from the checkout these benchmarks belong to (not whichever
torchlint is installed), so a harness measures the rules beside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "benchmarks" / "precision" / "corpus.tsv"
if str(ROOT) not in sys.path:  # the harnesses read the rules (tiers) of this checkout
    sys.path.insert(0, str(ROOT))


@dataclass(frozen=True)
class Finding:
    repo: str
    path: str  # relative to the repository; a notebook cell is "path#cellN"
    line: int
    column: int
    code: str
    message: str
    fix: str = ""  # "safe: ..." / "unsafe: ..." (the edits), empty without a fix

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.path, self.line, self.code)


def read_corpus(path: Path = CORPUS) -> list[dict[str, str]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, repository, commit, kind = line.split("\t")
            rows.append({"name": name, "repository": repository, "commit": commit,
                         "kind": kind})
    return rows


def lint(directory: Path, repo: str, jobs: int | None,
         options: tuple[str, ...] = ("--select", "ALL", "--preview"),
         ) -> tuple[list[Finding], list[str]]:
    """Findings of ``torchlint check OPTIONS`` run in ``directory``, and its error lines."""
    command = [sys.executable, "-m", "torchlint", "check", *options,
               "--output-format", "json", "--no-cache", "-q", "--exit-zero", "."]
    if jobs:
        command += ["--jobs", str(jobs)]
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    done = subprocess.run(command, cwd=directory, capture_output=True, text=True,
                          errors="replace",
                          env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": path})
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    if done.returncode not in (0, 1, 2) or not done.stdout.strip().startswith("["):
        return [], errors or [f"exit {done.returncode}: {done.stderr.strip()[:300]}"]
    findings = []
    for row in json.loads(done.stdout):
        location = row["location"]
        path = row["filename"].removeprefix("./")
        if row.get("cell") is not None:  # a notebook: lines count within the cell
            path = f"{path}#cell{row['cell']}"
        findings.append(Finding(repo, path, location["row"], location["column"], row["code"],
                                row["message"], _describe_fix(row.get("fix"))))
    return findings, errors


def _describe_fix(fix: dict | None) -> str:
    if not fix:
        return ""
    edits = []
    for edit in fix.get("edits", []):
        start, end = edit.get("location", {}), edit.get("end_location", {})
        edits.append(f"{start.get('row')}:{start.get('column')}-{end.get('row')}:"
                     f"{end.get('column')} -> {edit.get('content')!r}")
    return f"{fix.get('applicability')}: " + "; ".join(edits)
