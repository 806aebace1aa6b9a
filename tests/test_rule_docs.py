"""Every rule documents itself, and its documented examples behave as documented."""

from __future__ import annotations

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.rule import DOC_SECTIONS
from torchlint.source import SourceFile

RULES = list(all_rules().values())
EXAMPLES_EXEMPT = {"TL001"}  # the syntax-error "rule" is reported by the engine itself


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_doc_has_every_section(rule) -> None:
    doc = rule.doc()
    for section in DOC_SECTIONS:
        assert section in doc, f"{rule.code} doc lacks {section!r}"
    assert rule.summary()


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_example_triggers_and_use_instead_does_not(rule) -> None:
    if rule.code in EXAMPLES_EXEMPT:
        pytest.skip("reported by the engine")
    # every rule runs, so that rules about other findings (TL002) see them
    codes = set(all_rules())
    bad = SourceFile("example.py", rule.doc_example("## Example"))
    good = SourceFile("example.py", rule.doc_example("Use instead:"))
    assert bad.text.strip() and good.text.strip()
    found_bad = lint_source(bad, FileSettings.for_rules(RULES, codes)).diagnostics
    found_good = lint_source(good, FileSettings.for_rules(RULES, codes)).diagnostics
    assert any(d.code == rule.code for d in found_bad), f"{rule.code}: Example does not trigger"
    assert not [d for d in found_good if d.code == rule.code], f"{rule.code}: Use instead triggers"


def test_codes_and_names_are_unique_and_well_formed() -> None:
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    for code, rule in all_rules().items():
        assert rule.code == code and code.startswith("TL") and len(code) == 5
        assert rule.fix_safety in ("safe", "unsafe", "sometimes", "none")


ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_summary_is_one_complete_sentence(rule) -> None:
    # what `torchlint rules`, the README's table and SARIF's shortDescription show
    summary = rule.summary()
    assert summary.endswith("."), summary
    assert summary.count("`") % 2 == 0, summary
    assert summary.count("(") == summary.count(")"), summary
    assert summary.count("[") == summary.count("]"), summary
    assert not summary.lower().endswith(ABBREVIATIONS), summary
    what = " ".join(rule.doc().split("## What it does", 1)[1].split("##", 1)[0].split())
    assert what.startswith(summary)


def test_summary_does_not_end_at_an_abbreviation_or_a_period_in_code() -> None:
    from torchlint.rule import Rule

    class Sample(Rule):
        """## What it does
        Flags a list of losses, e.g. `losses.append(loss)`, i.e. one that grows (as in
        `x.grad.zero_()` or `y. z`). Then more.

        ## Why is this bad?
        ...
        """

    assert Sample.summary() == ("Flags a list of losses, e.g. `losses.append(loss)`, i.e. one "
                                "that grows (as in `x.grad.zero_()` or `y. z`).")
