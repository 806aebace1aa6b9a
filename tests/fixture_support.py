"""Reading fixture files: ``# error: TL301`` marks each line where a finding is expected."""

from __future__ import annotations

import re
from pathlib import Path

from torchlint.engine import lint_source
from torchlint.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
_EXPECT = re.compile(r"#\s*error:\s*(?P<codes>TL\d{3}(?:\s*,\s*TL\d{3})*)")


def fixture_files() -> list[Path]:
    """Every rule fixture: fixtures/TLxxx*.py and files under fixtures/TLxxx*/ (no .fixed)."""
    files = [p for p in FIXTURES.glob("TL*.py") if not p.name.endswith(".fixed.py")]
    for directory in FIXTURES.glob("TL*"):
        if directory.is_dir():
            files += [p for p in directory.rglob("*.py") if not p.name.endswith(".fixed.py")]
    return sorted(files)


def rule_code(path: Path) -> str:
    relative = path.relative_to(FIXTURES)
    return relative.parts[0][:5]


def fixed_path(path: Path) -> Path:
    return path.with_name(path.name[: -len(".py")] + ".fixed.py")


def expected(text: str) -> set[tuple[int, str]]:
    found = set()
    for number, line in enumerate(text.splitlines(), start=1):
        match = _EXPECT.search(line)
        if match:
            for code in match.group("codes").split(","):
                found.add((number, code.strip()))
    return found


def lint_with(path: Path, code: str, text: str | None = None):
    rule = all_rules()[code]
    source = SourceFile.read(path) if text is None else SourceFile(str(path), text)
    return lint_source(source, [rule], enabled_codes={code, "TL001"})


def fix_with(path: Path, code: str, text: str | None = None):
    rule = all_rules()[code]
    source = SourceFile.read(path) if text is None else SourceFile(str(path), text)
    return fix_source(source, [rule], unsafe=True, enabled_codes={code, "TL001"})
