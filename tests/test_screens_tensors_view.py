"""TL501's ``ast`` check (``may_flag_tl501`` in ``rules/tensors/screens.py``) follows the
rule's decision: it holds where the view of a permuted tensor may merge dimensions put
apart (directly, through a local, an alias, a name another module may rebind, a notebook)
and rules out the clean shapes of real code (a view that only splits dimensions, a name
rebound since the producer, a narrowing of the outermost dimension). Every snippet is
also linted with the rule forced to run: where the check holds the rule reports, where it
does not the rule stays silent."""

from __future__ import annotations

import textwrap
from dataclasses import replace

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.engine.triage import triage
from torchlint.notebook import Notebook
from torchlint.registry import all_rules
from torchlint.rules.tensors.screens import may_flag_tl501
from torchlint.source import SourceFile


def _findings(text: str) -> list[int]:
    rule = all_rules()["TL501"]
    settings = replace(FileSettings.for_rules([rule], {"TL501"}), options=Options(preview=True))
    result = lint_source(SourceFile("t.py", text), settings, prefilter=False)
    return [d.line for d in result.diagnostics if d.code == "TL501"]


def _holds(text: str) -> bool:
    facts = triage(text)
    assert facts is not None
    return bool(may_flag_tl501(facts, Options()))


REPORTED = [
    # chained directly, through a local, through an alias of torch
    "import torch\ny = x.permute(0, 2, 1).view(8, -1)\n",
    """
    import torch
    def f(x):
        y = x.transpose(1, 2)
        return y.view(-1)
    """,
    "import torch as th\ny = th.transpose(x, 0, 1).view(-1)\n",
    "import torch\ny = (z := x.mT).view(-1)\n",
    # a name of another module the file binds twice: the rule reads it as a tensor's method
    """
    import torch
    try:
        import cupy as xp
    except ImportError:
        import numpy as xp
    y = xp.transpose(1, 2).view(-1)
    """,
    # the rank of the permuted tensor comes from what made it
    """
    import torch
    def f(x, b, n, h, d):
        q = x.view(b, n, h, d)
        return q.transpose(1, 2).view(b, h, -1)
    """,
    # the view spells its sizes with an unpacking's names and merges w and c
    """
    import torch
    def f(x):
        b, c, h, w = x.shape
        return x.permute(0, 2, 3, 1).view(b, h, w * c)
    """,
    # the last dimension kept, the leading ones transposed in a branch with no other
    """
    import torch
    def f(x, flip):
        if flip:
            x = x.transpose(0, 1)
        return x.view(-1, x.size(-1))
    """,
    # bindings inside a with block and a loop body count
    """
    import torch
    with torch.no_grad():
        y = x.transpose(1, 2)
    z = y.view(-1)
    """,
    """
    import torch
    for step in range(3):
        y = x.transpose(1, 2)
        z = y.view(-1)
    """,
]


CLEAN = [
    # a view that splits the transposed sequence dimension back into height and width
    """
    import torch
    def forward(self, x, H, W):
        B, N, C = x.shape
        return x.transpose(1, 2).view(B, C, H, W)
    """,
    "import torch\nout = out.permute([1, 0, 2, 3]).view(B, C, H, W)\n",
    "import torch\ny = x.T.view(4, 4)\nz = x.t().view(n, -1)\n",
    # the name was bound again since the producer
    """
    import torch
    def f(x):
        y = x.transpose(1, 2)
        y = y.contiguous()
        return y.view(-1)
    """,
    """
    import torch
    def f(x, a):
        if a:
            y = x.T
        else:
            y = x
        return y.view(-1)
    """,
    # narrowing the outermost dimension keeps a contiguous layout
    """
    import torch
    def batchify(data, bsz):
        nbatch = data.size(0) // bsz
        data = data.narrow(0, 0, nbatch * bsz)
        return data.view(bsz, -1).t().contiguous()
    """,
    "import torch\ny = torch.narrow(x, 0, 0, 2).view(-1)\n",
    # the view merges only dimensions the permutation kept in order (h and w)
    """
    import torch
    def f(x):
        b, c, h, w = x.shape
        return x.permute(0, 2, 3, 1).view(b, -1, c)
    """,
    # the sizes are unpacked from the permuted tensor, not from the one it permutes
    """
    import torch
    def to_superpixels(img):
        img = img.permute(1, 2, 0)
        h, w, c = img.size()
        return img.view(h * w, c)
    """,
    # expand_as has no layout the rule follows
    "import torch\ny = x.expand_as(z).view(-1)\n",
    # the permuted tensor of a known rank keeps as many chunks as the view asks for
    """
    import torch
    def f(x, B, nH, nW, ws, C):
        x = x.view(B, nH, ws, nW, ws, C)
        return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)
    """,
]


@pytest.mark.parametrize("source", REPORTED)
def test_the_check_holds_where_the_rule_reports(source: str) -> None:
    text = textwrap.dedent(source)
    assert _findings(text)
    assert _holds(text)


@pytest.mark.parametrize("source", CLEAN)
def test_the_check_rules_out_views_that_only_split(source: str) -> None:
    text = textwrap.dedent(source)
    assert not _findings(text)
    assert not _holds(text)


def test_a_notebooks_program_is_checked_across_its_cells() -> None:
    """The producer in one cell, the view in another, IPython syntax set aside."""
    notebook = Notebook.from_cells("n.ipynb", [
        (1, "%matplotlib inline\nimport torch"),
        (2, "x = torch.randn(2, 3, 4)\ny = x.transpose(1, 2)"),
        (3, "!nvidia-smi\nz = y.view(2, -1)"),
    ])
    assert _findings(notebook.program)
    assert _holds(notebook.program)


def test_the_rule_asks_its_check_last() -> None:
    data = all_rules()["TL501"].requires.data()  # type: ignore[union-attr]
    assert data[-1] == ("check", "torchlint.rules.tensors.screens:may_flag_tl501")
