"""The fixer's guarantees, independent of any one rule."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.fixer import fix_source
from torchlint.rule import Rule
from torchlint.source import SourceFile


class RenameCallsAndDropImport(Rule):
    """Test rule: replaces ``helper(x)`` by ``x`` and deletes the ``helper`` import."""

    code = "TL998"
    name = "test-rename"
    message = "m"
    fix_safety = "safe"

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "helper":
            imports = [s for s in self.context.module.body
                       if isinstance(s, cst.SimpleStatementLine)
                       and isinstance(s.body[0], cst.ImportFrom)]
            if not self.context.is_expression_statement(node):
                self.report(node)  # no fix: the import stays needed
                return
            edits = [NodeEdit(node, self.context.code(node.args[0].value)),
                     NodeEdit(imports[0], kind="delete_line")]
            self.report(node, fix=Fix.safe(*edits))


def test_a_fix_that_removes_an_import_still_in_use_is_refused() -> None:
    text = "from lib import helper\nhelper(a)\ny = helper(b)\n"
    outcome = fix_source(SourceFile("t.py", text), FileSettings.for_rules([RenameCallsAndDropImport]))
    assert outcome.source.text == text


def test_a_fix_that_removes_an_unused_import_goes_in() -> None:
    text = "from lib import helper\nhelper(a)\n"
    outcome = fix_source(SourceFile("t.py", text), FileSettings.for_rules([RenameCallsAndDropImport]))
    assert outcome.source.text == "a\n"


class DropComment(Rule):
    """Test rule: replaces a call whose span holds a comment."""

    code = "TL997"
    name = "test-drop-comment"
    message = "m"
    fix_safety = "safe"

    def visit_Call(self, node: cst.Call) -> None:
        self.report(node, fix=Fix.safe(NodeEdit(node, "g()")))


def test_a_fix_that_drops_a_comment_is_refused() -> None:
    text = "f(  # keep\n  1)\nh(2)\n"
    outcome = fix_source(SourceFile("t.py", text), FileSettings.for_rules([DropComment]))
    assert outcome.source.text == "f(  # keep\n  1)\ng()\n"


class Crashes(Rule):
    """Test rule that raises on every call."""

    code = "TL996"
    name = "test-crash"
    message = "m"

    def visit_Call(self, node: cst.Call) -> None:
        raise ValueError("boom")


def test_a_crashing_rule_is_isolated_and_the_others_still_report() -> None:
    from torchlint.engine.lint import lint_source
    from torchlint.registry import all_rules

    source = SourceFile("t.py", "import torch\nfor _ in range(2):\n    x = torch.ones(1).cuda()\n")
    result = lint_source(source, FileSettings.for_rules([Crashes, all_rules()["TL301"]], {"TL996", "TL301"}))
    assert [d.code for d in result.diagnostics] == ["TL301"]
    assert result.rule_failures == ["internal error in TL996: ValueError: boom"]


def _fixtures() -> list[Path]:
    return sorted(p for p in (Path(__file__).resolve().parent.parent / "fixtures").glob("TL*.py")
                  if not p.name.endswith(".fixed.py"))


@pytest.mark.parametrize("fixture", _fixtures(), ids=lambda p: p.stem)
def test_fixes_keep_a_files_crlf_line_endings(fixture: Path) -> None:
    """A fix that spreads generated code over lines (an import losing one of its
    parenthesised names) writes the file's own line ending, never a bare newline."""
    text = fixture.read_text(encoding="utf-8").replace("\r\n", "\n").replace("\n", "\r\n")
    settings = Settings(select=("ALL",), preview=True).for_file(fixture.name)
    outcome = fix_source(SourceFile(fixture.name, text), settings, unsafe=True)
    fixed = outcome.source.text
    assert "\n" not in fixed.replace("\r\n", ""), fixture.name
