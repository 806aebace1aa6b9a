"""Property-based tests over generated and mutated sources (hypothesis).

Linting never raises; fixing keeps a file parseable and reaches a fixed point (a second
fix changes nothing). Sources come from the rule fixtures (code full of findings),
mutated line by line and character by character, and from small generated programs.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchlint.config.file_settings import FileSettings
from torchlint.config.settings import Settings
from torchlint.engine.lint import lint_source
from torchlint.engine.parse import parse
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.run.file import lint_one
from torchlint.run.outcome import Mode
from torchlint.source import SourceFile

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted(p for p in (ROOT / "fixtures").rglob("*.py") if not p.name.endswith(".fixed.py"))
TEXTS = [p.read_text(encoding="utf-8") for p in FIXTURES] or ["import torch\n"]
RULES = list(all_rules().values())
ALL = Settings(select=("ALL",), preview=True)  # the preview tier's fixes too (TL301's among them)
PROFILE = settings(max_examples=60, deadline=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SNIPPETS = [
    "import torch", "import torch.nn as nn", "import torch.nn.functional as F",
    "from torch import nn", "x = torch.ones(3).cuda()", "y = torch.zeros(2, 2).to(device)",
    "model.eval", "loss = F.dropout(x, p=0.5)", "t = x.permute(0, 2, 1).view(4, -1)",
    "crit = nn.MSELoss(size_average=False)", "v = torch.autograd.Variable(x)",
    "z = torch.LongTensor([1, 2])", "torch.nn.utils.clip_grad_norm(params, 1.0)",
    "x.cuda()", "with torch.cuda.amp.autocast():\n    pass", "g = r.expand(3, 4)\ng[0] = 1",
    "class M(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "        self.layers = [nn.Linear(2, 2)]\n    def forward(self, x):\n"
    "        return F.dropout(x)",
    "for a, b in loader:\n    a.to(device)", "def f(x):\n    return x", "# noqa: TL301",
    "if True:\n\tpass", "x = 1  # noqa", "@torch.no_grad()\ndef g(): pass",
    "torch.save(model, 'm.pt')", "m = torch.load('m.pt')", "opt = torch.optim.Adam(p, weight_decay=1)",
]
NOISE = ["(", ")", "[", "]", ":", "\n", "\t", " ", "\r\n", "\r", "#", "'", '"', "\\", "\x00",
         "lambda", "=", ".", ",", "*", "**", "async ", "yield", "é", "\ufeff", "\u2028"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(TEXTS))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(0, 4))):
        if not lines:
            break
        op = draw(st.sampled_from(["drop", "dup", "swap", "indent", "dedent", "char", "insert"]))
        i = draw(st.integers(0, len(lines) - 1))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "indent":
            lines[i] = "    " + lines[i]
        elif op == "dedent":
            lines[i] = lines[i].lstrip()
        elif op == "char":
            line = lines[i]
            k = draw(st.integers(0, len(line)))
            lines[i] = line[:k] + draw(st.sampled_from(NOISE)) + line[k + 1:]
        else:
            lines.insert(i, draw(st.sampled_from(SNIPPETS)) + "\n")
    return "".join(lines)


generated = st.lists(st.sampled_from(SNIPPETS), min_size=1, max_size=12).map("\n".join)
any_source = st.one_of(mutated(), generated, st.text(max_size=200))


def _parses(text: str) -> bool:
    try:
        parse(text)
    except Exception:
        return False
    return True


@PROFILE
@given(any_source)
def test_linting_never_raises(text: str) -> None:
    result = lint_source(SourceFile("gen.py", text), FileSettings.for_rules(RULES))
    assert all(d.line >= 1 and d.column >= 1 for d in result.diagnostics)
    if not result.parsed:
        assert [d.code for d in result.diagnostics] == ["TL001"]


@PROFILE
@given(st.one_of(mutated(), generated), st.booleans())
def test_fixing_keeps_code_parseable_and_is_idempotent(text: str, unsafe: bool) -> None:
    source = SourceFile("gen.py", text)
    first = fix_source(source, FileSettings.for_rules(RULES), unsafe=unsafe)
    if _parses(text):
        assert _parses(first.source.text), first.source.text
    else:
        assert first.source.text == text  # nothing is written into code that cannot parse
    second = fix_source(first.source, FileSettings.for_rules(RULES), unsafe=unsafe)
    assert second.source.text == first.source.text
    assert second.fixed == 0


@PROFILE
@given(st.one_of(mutated(), generated), st.sampled_from(["\n", "\r\n", "\r"]),
       st.booleans())
def test_the_runner_keeps_bytes_faithful(text: str, newline: str, bom: bool) -> None:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", newline)
    source = SourceFile("gen.py", text, bom=bom)
    outcome = lint_one(source, ALL.for_file(source.path), Mode(fix=True, unsafe=True))
    if outcome.fixed_text is None:
        return
    data = source.with_text(outcome.fixed_text).to_bytes()
    assert data.startswith(b"\xef\xbb\xbf") == bom
    decoded = SourceFile.from_bytes("gen.py", data).text
    assert _parses(decoded)
    if newline == "\r\n":  # a fix never brings in a different line ending
        assert "\n" not in decoded.replace("\r\n", "")
