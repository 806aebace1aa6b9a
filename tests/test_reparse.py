"""Parsing a new version of a text by parsing again only the statement that changed: the
tree is always the one a whole parse builds."""

from __future__ import annotations

import random

import pytest

from torchlint.engine.parse import _parse_whole
from torchlint.engine.reparse import Reparser

BLOCK = '''
@decorated({n})
class Block{n}(nn.Module):
    """A block."""

    def __init__(self, width):
        super().__init__()
        self.layers = [nn.Linear(width, width) for _ in range(3)]  # plain list
        # a comment inside

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return x.view(x.size(0), -1)
        # trailing comment in the block


def train_{n}(model, loader, optimizer):
    text = """a string
with lines"""
    for inputs, targets in loader:
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
    return (loss,
            text)

# between statements
'''


def _program(blocks: int) -> str:
    return "import torch\nfrom torch import nn\n" + "".join(
        BLOCK.format(n=n) for n in range(blocks)) + "END = 1\n"


_INSERTS = ["    y = 1\n", "z = 2\n", "# hi\n", "        q()\n", "\n", "    # c\n", "  \n",
            "\t\n", "  # x\n", "else:\n", "@d\n", 'x = """\n', "    return\n"]
_CHARS = ["x", "(", ")", ":", " ", "#", "+", "\n", "\\", '"""', "'", "[", "]", "\t"]


def _edit(text: str, rng: random.Random) -> str:
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines))
    kind = rng.choice(["char", "line", "delete", "comment", "indent", "dedent"])
    if kind == "char":
        at = rng.randrange(len(lines[i]))
        lines[i] = lines[i][:at] + rng.choice(_CHARS) + lines[i][at:]
    elif kind == "line":
        lines.insert(i, rng.choice(_INSERTS))
    elif kind == "delete":
        del lines[i]
    elif kind == "comment":
        lines[i] = lines[i].rstrip("\n") + "  # note\n"
    elif kind == "dedent":
        lines[i] = lines[i][4:] if lines[i].startswith("    ") else lines[i]
    else:
        lines[i] = "    " + lines[i]
    return "".join(lines)


def _whole(text: str):  # type: ignore[no-untyped-def]
    try:
        return _parse_whole(text)
    except Exception:  # noqa: BLE001 - any parse failure
        return None


@pytest.mark.parametrize("seed", [1, 2])
def test_random_edits_give_the_tree_of_a_whole_parse(seed: int) -> None:
    rng = random.Random(seed)
    reparser = Reparser(2, _parse_whole)
    text = _program(8)
    reparser.parse(text)
    compared = 0
    for _ in range(80):
        new = _edit(text, rng)
        expected = _whole(new)
        try:
            got = reparser.parse(new)
        except Exception:  # noqa: BLE001 - must fail exactly where the whole parse fails
            got = None
        assert (got is None) == (expected is None), new
        if got is None:
            continue
        assert got.code == expected.code  # (libcst loses a line holding only a backslash)
        assert got.deep_equals(expected)
        compared += 1
        text = new
    assert compared > 30
    assert reparser.spliced > 20  # most edits changed one statement


def test_a_change_inside_one_statement_parses_that_statement_alone() -> None:
    reparser = Reparser(2, _parse_whole)
    text = _program(4)
    first = reparser.parse(text)
    new = text.replace("def train_2(model,", "def train_2(net, model,")
    second = reparser.parse(new)
    assert reparser.spliced == 1 and second.deep_equals(_parse_whole(new))
    # the other statements are the very nodes of the earlier tree
    same = sum(a is b for a, b in zip(first.body, second.body))
    assert same == len(first.body) - 1
    assert reparser.parse(new) is second  # a text parsed before is answered at once


@pytest.mark.parametrize("change", [
    ("import torch\n", "import torch, os\n"),  # the first statement
    ("END = 1\n", "END = 2\n"),  # the last statement
    ("# between statements\n", "# between statements\nx = 1\n"),  # a new statement
    ("# between statements\n\n@decorated(2)", "    \n# between statements\n\n@decorated(2)"),
])
def test_edges_new_statements_and_indented_lines_between_blocks_parse_whole(
        change: tuple[str, str]) -> None:
    reparser = Reparser(2, _parse_whole)
    text = _program(4)
    reparser.parse(text)
    new = text.replace(*change, 1)
    assert new != text
    got = reparser.parse(new)
    assert reparser.spliced == 0
    assert got.deep_equals(_parse_whole(new))


def test_a_backslash_joining_the_next_statement_parses_whole() -> None:
    reparser = Reparser(2, _parse_whole)
    text = _program(4)
    reparser.parse(text)
    joined = text.replace("# between statements\n\n@decorated(2)",
                          "# between statements\n\\\n@decorated(2)")
    assert _whole(joined) is None
    with pytest.raises(Exception):  # noqa: B017, PT011 - whatever libcst raises
        reparser.parse(joined)


def test_typing_a_comment_at_the_end_changes_only_the_footer() -> None:
    reparser = Reparser(2, _parse_whole)
    text = _program(4)
    reparser.parse(text)
    for typed in ["#", "#", " note", "\n", "# another", "\n\n", "#"]:
        text += typed
        assert reparser.parse(text).deep_equals(_parse_whole(text))
    assert reparser.spliced == 7
    # an indented comment may belong to the last block, code is a new statement
    for tail in ["    # in a block?\n", "x = 2\n"]:
        before = reparser.spliced
        new = text + "\n" + tail
        assert reparser.parse(new).deep_equals(_parse_whole(new))
        assert reparser.spliced == before


def test_a_version_changed_after_the_last_statement_keeps_the_rules_reports(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """In an editor, typing a comment at the end of a file runs no rule again: the same
    findings, at the same places, and a ``# noqa`` typed there is still judged."""
    import torchlint.engine.lint as lint
    from torchlint.config.settings import Settings
    from torchlint.engine.parse import remember_parses
    from torchlint.source import SourceFile

    walks = []
    real = lint.run_rules
    monkeypatch.setattr(lint, "run_rules", lambda *a, **k: walks.append(1) or real(*a, **k))
    path = str(tmp_path / "model.py")
    settings = Settings(root=str(tmp_path), select=("TL101", "TL002")).for_file(path)
    texts = [_program(3)]
    for typed in ["#", " note\n", "# noqa: TL101\n"]:
        texts.append(texts[-1] + typed)
    expected = [lint.lint_source(SourceFile(path, t), settings).diagnostics for t in texts]
    walks.clear()
    remember_parses(2)
    try:
        found = [lint.lint_source(SourceFile(path, t), settings).diagnostics for t in texts]
    finally:
        remember_parses(0)
    assert found == expected
    assert len(walks) == 1  # the rules ran on the first version only
    first, got = expected[0], expected[-1]
    assert first and [d.code for d in got] == [d.code for d in first] + ["TL002"]
