from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg
from torchlint.engine.triage import api, check
from torchlint.rule import Rule

# the dim argument's position: F.softmax(input, dim), nn.Softmax(dim)
_FUNCTIONS = {f"torch.nn.functional.{name}": 1 for name in ("softmax", "log_softmax", "softmin")}
_LAYERS = {f"torch.nn.{name}": 0 for name in ("Softmax", "LogSoftmax", "Softmin")}
_DIM_POSITION = {**_FUNCTIONS, **_LAYERS}


class SoftmaxImplicitDim(Rule):
    """## What it does
    Flags `F.softmax`, `F.log_softmax` and `F.softmin` called without `dim` (neither as
    a keyword nor as the second positional argument) or with `dim=None`, and
    `nn.Softmax()`, `nn.LogSoftmax()` and `nn.Softmin()` built without `dim`. Not
    `torch.softmax(x, d)` or `x.softmax(d)`, where `dim` is required, nor
    `nn.Softmax2d` or `F.gumbel_softmax`.

    ## Why is this bad?
    Without `dim`, torch guesses the dimension from the number of dimensions of the
    input: dimension 0 for 0-, 1- and 3-D inputs, dimension 1 otherwise, and warns that
    this choice is deprecated. For a 3-D `(batch, sequence, classes)` tensor the guess is
    the batch dimension, so each position is normalised across the examples of the batch
    instead of across its classes: the values look like probabilities and nothing fails.

    ## Example
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    head = nn.Sequential(nn.Linear(128, 10), nn.Softmax())

    def probabilities(logits):
        return F.softmax(logits)
    ```

    Use instead:
    ```python
    import torch.nn as nn
    import torch.nn.functional as F

    head = nn.Sequential(nn.Linear(128, 10), nn.Softmax(dim=1))

    def probabilities(logits):
        return F.softmax(logits, dim=-1)
    ```

    ## Fix safety
    No fix: which dimension is meant cannot be read from the code. The implicit choice
    depends on the input's number of dimensions, so writing `dim=-1` (or `dim=1`) would
    change the results for some inputs; pass the dimension of the classes yourself.
    """

    code = "TL502"
    name = "softmax-implicit-dim"
    triggers = ("softmax", "Softmax", "softmin", "Softmin")
    requires = api(*_DIM_POSITION) & check("torchlint.rules.tensors.screens:may_flag_tl502")
    message = "{function} without dim picks the dimension from the input's ndim (deprecated); pass dim"

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        position = _DIM_POSITION.get(qual or "")
        if position is None or any(arg.star for arg in node.args):
            return
        dim = get_arg(node, "dim", position)
        if dim is not None and not (isinstance(dim.value, cst.Name) and dim.value.value == "None"):
            return
        assert qual is not None
        short = qual.rsplit(".", 1)[1]
        self.report(node, function=f"F.{short}" if qual in _FUNCTIONS else f"nn.{short}")
