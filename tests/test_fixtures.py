"""One driver for every rule fixture: expected findings, silence elsewhere, exact fixes."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixture_support import (
    FIXTURES,
    expected,
    fix_with,
    fixed_path,
    fixture_files,
    lint_with,
    rule_code,
)

from torchlint.engine.parse import parse
from torchlint.registry import all_rules

FILES = fixture_files()
IDS = [str(p.relative_to(FIXTURES)) for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_findings_match_marks(path: Path) -> None:
    code = rule_code(path)
    text = path.read_text(encoding="utf-8")
    result = lint_with(path, code)
    found = {(d.line, d.code) for d in result.diagnostics}
    assert found == expected(text), "\n".join(
        f"{d.line}:{d.column} {d.code} {d.message}" for d in result.diagnostics
    )


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fix_output_is_exact(path: Path, request: pytest.FixtureRequest) -> None:
    code = rule_code(path)
    original = path.read_text(encoding="utf-8")
    outcome = fix_with(path, code)
    target = fixed_path(path)
    if outcome.source.text == original:
        assert not target.exists(), f"{target.name} exists but the fixer changes nothing"
        return
    if request.config.getoption("--update-fixtures") or not target.exists():
        if not request.config.getoption("--update-fixtures"):
            pytest.fail(f"{target.name} is missing; run pytest --update-fixtures and review it")
        target.write_text(outcome.source.text, encoding="utf-8")
    assert outcome.source.text == target.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_fix_is_idempotent_and_parses(path: Path) -> None:
    code = rule_code(path)
    first = fix_with(path, code)
    if code == "TL001":  # the fixture is a file that does not parse; nothing may change it
        assert first.source.text == path.read_text(encoding="utf-8")
        return
    parse(first.source.text)
    second = fix_with(path, code, first.source.text)
    assert second.source.text == first.source.text
    assert second.fixed == 0


def test_every_rule_has_a_fixture() -> None:
    covered = {rule_code(p) for p in FILES}
    missing = sorted(set(all_rules()) - covered)
    assert not missing, f"rules without a fixture: {missing}"


def test_every_fixture_belongs_to_a_rule() -> None:
    orphans = [p.name for p in FILES if rule_code(p) not in all_rules()]
    orphans += [p.name for p in FIXTURES.rglob("*.fixed.py")
                if p.name.startswith("TL") and not p.with_name(
                    p.name.replace(".fixed.py", ".py")).exists()]
    assert not orphans


def test_every_fixture_has_positives_and_silent_lines() -> None:
    for path in FILES:
        text = path.read_text(encoding="utf-8")
        if rule_code(path) in ("TL001",):
            continue
        marks = expected(text)
        assert marks or "# no-error-expected" in text, f"{path.name} has no '# error:' mark"


@pytest.mark.parametrize("path", FILES, ids=IDS)
def test_a_star_import_changes_nothing(path: Path) -> None:
    """``from X import *`` binds no name we can know: every rule still runs and finds the
    same (a star import used to crash the import index, silently skipping TL206, TL208 and
    TL702-TL705 on the whole file)."""
    code = rule_code(path)
    text = path.read_text(encoding="utf-8")
    if code == "TL001" or not text.endswith("\n"):
        return
    plain = lint_with(path, code, text)
    starred = lint_with(path, code, text + "from math import *\n")
    assert [(d.line, d.column, d.code, d.message) for d in starred.diagnostics] == [
        (d.line, d.column, d.code, d.message) for d in plain.diagnostics]
    assert starred.rule_failures == []


def test_star_imports_do_not_hide_the_import_index_rules() -> None:
    """The rules that read the import index, each on a file that also has a star import."""
    cases = {
        "TL206": "import torch\nfrom math import *\nd = torch.sqrt(x ** 2 + y ** 2)\n",
        "TL208": "import torch\nfrom math import *\nopt = torch.optim.Adam(p, weight_decay=1e-4)\n",
        "TL702": "import torch\nfrom math import *\ntorch.nn.utils.clip_grad_norm(p, 1.0)\n",
        "TL703": "import torch\nfrom math import *\nscaler = torch.cuda.amp.GradScaler()\n",
        "TL704": "import torch\nfrom torch.autograd import *\nx = torch.autograd.Variable(t)\n",
        "TL705": "import torch\nfrom math import *\nx = torch.FloatTensor([1.0])\n",
    }
    for code, text in cases.items():
        result = lint_with(Path("star.py"), code, text)
        assert [d.code for d in result.diagnostics] == [code], (code, result.diagnostics)
