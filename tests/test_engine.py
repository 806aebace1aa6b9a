"""Engine behaviour that no single rule owns."""

from __future__ import annotations

from torchlint.engine import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def test_files_no_rule_can_fire_on_are_still_checked_for_syntax() -> None:
    rules = list(all_rules().values())
    broken = SourceFile("x.py", "def f(:\n    pass\n")
    result = lint_source(broken, rules)
    assert [d.code for d in result.diagnostics] == ["TL001"]
    plain = SourceFile("y.py", "def f(a):\n    return a + 1\n")
    assert lint_source(plain, rules).diagnostics == []


def test_every_rule_declares_what_it_needs_to_see() -> None:
    """A rule without triggers runs on every file; each should say what it looks for."""
    missing = [code for code, rule in all_rules().items()
               if not rule.triggers and code not in ("TL001", "TL002")]
    assert not missing, f"rules without triggers: {missing}"
