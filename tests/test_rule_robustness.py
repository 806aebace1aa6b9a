"""No rule ever fails on valid Python: every rule runs over every fixture joined with the
constructs that break naive analyses (star imports, walrus, match, async, decorators,
lambdas, global/nonlocal, PEP 695 generics, very long chains), and over generated mixes
of them, without a single internal error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from fixture_support import FIXTURES, fixture_files
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

EVERY_RULE = FileSettings.for_rules(all_rules().values())

CONSTRUCTS = {
    "star import": "from os.path import *\nfrom torch.nn import *\n",
    "walrus": "if (n := len(xs)) > 2:\n    model = (m := nn.Linear(n, n))\n",
    "match": textwrap.dedent("""\
        match batch:
            case {"x": x, "y": [y, *rest]} if rest:
                loss = F.cross_entropy(model(x), y)
            case (x, y) | [x, y]:
                losses.append(loss)
            case Net(layers=[first, *_]):
                pass
            case _:
                pass
        """),
    "async": textwrap.dedent("""\
        async def train(model, loader, opt):
            async with lock:
                async for x, y in loader:
                    loss = crit(model(x), y)
                    loss.backward()
                    opt.step()
                    history.append(await fetch(loss))
            return [z async for z in agen()]
        """),
    "decorators": textwrap.dedent("""\
        @torch.no_grad()
        @functools.lru_cache(maxsize=None)
        @register(lambda m: m.eval())
        def evaluate(model, loader):
            return [model(x) for x in loader]
        """),
    "lambdas": "f = lambda model, x: model(x).view(2, -1)\ng = lambda: (yield)\n",
    "global and nonlocal": textwrap.dedent("""\
        def outer():
            global model
            losses = []
            def inner(x):
                nonlocal losses
                losses = losses + [crit(model(x), x)]
            return inner
        """),
    "PEP 695": textwrap.dedent("""\
        type Batch[T] = tuple[T, T]

        class Net[T](nn.Module):
            def __init__(self):
                super().__init__()
                self.blocks = [nn.Linear(2, 2) for _ in range(3)]

            def forward[U](self, x: U) -> U:
                return self.blocks[0](x).permute(1, 0).view(-1)

        def train[M: nn.Module](model: M, loader):
            for x in loader:
                model(x).sum().backward()
        """),
    "long chains": "v = x" + "".join(f".a{i}" for i in range(300)) + "\n"
                   "w = torch" + "".join(f".m{i}()" for i in range(200)) + "\n"
                   "u = y" + "[0]" * 300 + "\n"
                   "s = " + " + ".join(["loss"] * 300) + "\n",
    "comprehension scopes": textwrap.dedent("""\
        outs = [model(x) for x in xs if (k := x)]
        table = {name: nn.Linear(2, 2) for name in names}
        gen = (F.dropout(t) for t in ts)
        """),
    "try/with/else": textwrap.dedent("""\
        try:
            with torch.no_grad(), open(p) as fh:
                ckpt = torch.load(fh)
        except* ValueError:
            pass
        else:
            model.load_state_dict(ckpt)
        finally:
            del ckpt
        """),
}


def _block() -> str:
    return "\n".join(CONSTRUCTS.values())


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_rule_survives_every_fixture_joined_with_hostile_constructs(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    if text.startswith("from __future__"):
        return  # a future import must stay first; the other fixtures cover these rules
    for where in ("before", "after"):
        joined = _block() + "\n" + text if where == "before" else text + "\n" + _block()
        result = lint_source(SourceFile("f.py", joined), EVERY_RULE)
        if not result.parsed:
            continue  # a fixture that is itself a syntax error (TL001)
        assert result.rule_failures == [], (where, result.rule_failures)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(sorted(CONSTRUCTS)), min_size=1, max_size=5),
       st.sampled_from(["module", "function", "method"]))
def test_generated_mixes_of_constructs(names: list[str], where: str) -> None:
    body = "\n".join(CONSTRUCTS[name] for name in names)
    if where == "function":
        body = "def run(model, loader, opt):\n" + textwrap.indent(body, "    ") + "    pass\n"
    elif where == "method":
        body = ("class Trainer(nn.Module):\n    def step(self, model, loader):\n"
                + textwrap.indent(body, "        ") + "        pass\n")
    text = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n" + body
    result = lint_source(SourceFile("gen.py", text), EVERY_RULE)
    assert result.rule_failures == [], result.rule_failures
