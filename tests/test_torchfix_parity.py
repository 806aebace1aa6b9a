"""torchlint reports every problem TorchFix reports, under the code the parity map names.

``fixtures/torchfix/TORnnn.py`` holds TorchFix's cases for one of its codes. A line marked
``# TOR101 -> TL707`` is one TorchFix reports as TOR101 and torchlint must report as TL707;
``TOR103@2`` says TorchFix reports that code on line 2 (a from-import) and ``TL706@3`` that
torchlint reports on line 3 (TL706 reports a from-import of a removed function once, at the
import, not at each call through it). torchlint runs as a user would switch to it: the CLI
with ``--select ALL --preview``.

Some mapped rules are built on other branches; a case whose torchlint code is not in this
version's registry is skipped, and passes once that rule is merged. Where TorchFix is
installed (``TORCHLINT_TORCHFIX``, else ``/tmp/tfh/bin/torchfix``) the marks themselves are
checked against it too.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from torchlint.registry import all_rules

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "torchfix"

# TorchFix code -> the torchlint codes it maps to (RULES.md, "TorchFix parity map")
PARITY_MAP: dict[str, set[str]] = {
    "TOR001": {"TL706"},
    "TOR002": {"TL212"},
    "TOR003": {"TL718"},
    "TOR004": {"TL706"},
    "TOR101": {f"TL{n}" for n in range(707, 718)} | {"TL703", "TL721"},
    "TOR102": {"TL601"},
    "TOR103": {f"TL{n}" for n in range(707, 718)} | {"TL703", "TL721"},
    "TOR104": {"TL902"},
    "TOR105": {"TL902"},
    "TOR106": {"TL503"},
    "TOR107": {"TL504"},
    "TOR108": {"TL505"},
    "TOR201": {"TL719"},
    "TOR202": {"TL720"},
    "TOR401": {"TL307"},
    "TOR402": {"TL211"},
}
# left out on purpose (RULES.md): style, a micro-optimisation, pytorch-internal
NOT_TAKEN = {"TOR203", "TOR109", "TOR901"}

_MARK = re.compile(r"#\s*(?P<tor>TOR\d{3}(?:@\d+)?(?:\s+TOR\d{3}(?:@\d+)?)*)\s*->\s*"
                   r"(?P<tl>TL\d{3})(?:@(?P<line>\d+))?")


class Mark:
    def __init__(self, path: Path, line: int, tor: list[tuple[str, int]], code: str,
                 at: int) -> None:
        self.path, self.line, self.tor, self.code, self.at = path, line, tor, code, at

    def __repr__(self) -> str:
        return f"{self.path.name}:{self.line}"


def _marks() -> list[Mark]:
    marks = []
    for path in sorted(CASES.glob("TOR*.py")):
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _MARK.search(text)
            if match is None:
                continue
            tor = []
            for item in match.group("tor").split():
                code, _, line = item.partition("@")
                tor.append((code, int(line) if line else number))
            at = int(match.group("line")) if match.group("line") else number
            marks.append(Mark(path, number, tor, match.group("tl"), at))
    return marks


MARKS = _marks()


def _ids(marks: list[Mark]) -> list[str]:
    return [f"{m.path.stem}-{m.line}-{m.code}" for m in marks]


@pytest.fixture(scope="module")
def torchlint_findings() -> set[tuple[str, int, str]]:
    """(file name, line, code) of every torchlint finding on the parity cases."""
    done = subprocess.run(
        [sys.executable, "-m", "torchlint", "check", "--select", "ALL", "--preview",
         "--no-cache", "--exit-zero", "--output-format", "json", "-q", str(CASES)],
        capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return {(Path(d["filename"]).name, d["location"]["row"], d["code"])
            for d in json.loads(done.stdout)}


@pytest.mark.parametrize("mark", MARKS, ids=_ids(MARKS))
def test_torchlint_reports_the_mapped_code(mark: Mark,
                                           torchlint_findings: set[tuple[str, int, str]]) -> None:
    if mark.code not in all_rules():
        pytest.skip(f"{mark.code} is not in this version yet")
    assert (mark.path.name, mark.at, mark.code) in torchlint_findings, (
        f"{mark.path.name}:{mark.line}: TorchFix reports {mark.tor}, torchlint no {mark.code}"
        f" on line {mark.at}")


def test_every_mapped_code_has_cases() -> None:
    found: dict[str, set[str]] = defaultdict(set)
    for mark in MARKS:
        for tor, _ in mark.tor:
            assert tor in PARITY_MAP and tor not in NOT_TAKEN, mark
            assert mark.code in PARITY_MAP[tor], (mark, tor)
            found[tor].add(mark.code)
    assert set(found) == set(PARITY_MAP)
    # TOR101/TOR103 cover many rules: each symbol of TorchFix's list has its rule
    assert found["TOR101"] >= {"TL703", *(f"TL{n}" for n in (707, 708, 709, 711, 712, 713,
                                                              714, 715, 717))}
    assert {p.stem for p in CASES.glob("TOR*.py")} == set(PARITY_MAP)


def test_every_mapped_code_is_in_the_catalogue() -> None:
    """The codes not yet in the registry are the ones built elsewhere, not typos."""
    from torchlint import catalog

    mapped = set().union(*PARITY_MAP.values())
    missing = mapped - set(all_rules())
    assert missing <= {"TL212", "TL503", "TL504", "TL505", *(f"TL{n}" for n in range(706, 718)),
                       "TL721"}, missing
    assert mapped - missing <= set(catalog.BUILTIN)


def _torchfix() -> str | None:
    for candidate in (os.environ.get("TORCHLINT_TORCHFIX"), "/tmp/tfh/bin/torchfix"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def test_marks_are_what_torchfix_reports() -> None:
    """Each mark names a code TorchFix really reports on that line (needs TorchFix)."""
    torchfix = _torchfix()
    if torchfix is None:
        pytest.skip("TorchFix is not installed here (set TORCHLINT_TORCHFIX)")
    done = subprocess.run([torchfix, "--select", "ALL", "."], capture_output=True, text=True,
                          cwd=CASES, timeout=300, check=False)
    reported = {(Path(m[0]).name, int(m[1]), m[2]) for m in re.findall(
        r"(TOR\d{3}\.py):(\d+):\d+: (TOR\d{3})", done.stdout + done.stderr)}
    assert reported, done.stdout + done.stderr
    missing = [(mark, tor, line) for mark in MARKS for tor, line in mark.tor
               if (mark.path.name, line, tor) not in reported]
    assert not missing
