"""Reading fixture files: ``# error: TL301`` marks each line where a finding is expected."""

from __future__ import annotations

import re
from pathlib import Path

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
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


def _rules_for(code: str):
    """The rule alone; TL002 (unused noqa) needs the default rules whose findings it checks."""
    rules = all_rules()
    if code == "TL002":
        chosen = [r for c, r in rules.items() if r.default or c == code]
        return chosen, {r.code for r in chosen}
    return [rules[code]], {code, "TL001"}


def lint_with(path: Path, code: str, text: str | None = None):
    rules, codes = _rules_for(code)
    source = SourceFile.read(path) if text is None else SourceFile(str(path), text)
    result = lint_source(source, FileSettings.for_rules(rules, codes))
    result.diagnostics = [d for d in result.diagnostics if d.code == code]
    return result


def fix_with(path: Path, code: str, text: str | None = None):
    rules, codes = _rules_for(code)
    # TL002 judges the findings of the default rules; only its own fixes are its business
    unfixable = set(codes) - {code} if code == "TL002" else set()
    source = SourceFile.read(path) if text is None else SourceFile(str(path), text)
    return fix_source(source, FileSettings.for_rules(rules, codes, unfixable=unfixable),
                      unsafe=True)
