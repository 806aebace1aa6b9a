from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api, check
from torchlint.fix.edits import sibling_reference
from torchlint.rules.training.losses import (
    BCE,
    SIGMOID,
    ActivationIntoLoss,
    Producer,
    unused_import_edits,
)


class SigmoidThenBce(ActivationIntoLoss):
    """## What it does
    Flags a sigmoid output passed as the input (the first argument) of
    `F.binary_cross_entropy` or of an `nn.BCELoss` instance: the sigmoid call written in
    place, or a name bound to it earlier in the same function. Inputs not shown to be a
    sigmoid output (a model whose last layer is `nn.Sigmoid`) are left alone: that is a
    deliberate and correct design.

    Opt-in: the result is mathematically correct; this is about numerical robustness.

    ## Why is this bad?
    Once float32 probabilities saturate to exactly 0 or 1, `binary_cross_entropy` has
    to clamp its logarithm (at -100) and the gradient through the sigmoid vanishes, so
    confidently wrong examples stop contributing. `binary_cross_entropy_with_logits`
    computes the same loss from the logits with the log-sum-exp trick and stays exact.
    Also, `binary_cross_entropy` refuses to run inside an autocast region, while the
    logits version is autocast-safe.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    def step(model, x, y):
        return F.binary_cross_entropy(torch.sigmoid(model(x)), y)
    ```

    Use instead:
    ```python
    import torch
    import torch.nn.functional as F

    def step(model, x, y):
        return F.binary_cross_entropy_with_logits(model(x), y)
    ```

    ## Fix safety
    Unsafe, and only for the functional form with the sigmoid call written as the
    argument itself: the call becomes `F.binary_cross_entropy_with_logits(<the sigmoid's
    input>, ...)` with the other arguments unchanged. Values agree up to rounding except
    where the old loss clamped its logarithm, and gradients differ there too. No fix for
    `nn.BCELoss` instances (the module may be shared) or when the sigmoid output comes
    through a name.
    """

    code = "TL217"
    name = "sigmoid-then-bce"
    default = False
    triggers = ("binary_cross_entropy", "BCELoss")
    patterns = (r"(?:binary_cross_entropy|BCELoss)", r"(?:sigmoid|Sigmoid)")
    # a call of the loss, and an activation's output passed to it (the check)
    requires = api(BCE.function, BCE.layer) & check(
        "torchlint.rules.training.value_screens:may_flag_tl217")
    message = ("{what} passed to binary_cross_entropy; binary_cross_entropy_with_logits on "
               "the logits is numerically stable")
    fix_safety = "unsafe"
    fix_title = "Use binary_cross_entropy_with_logits"
    loss = BCE
    activation = SIGMOID

    def fix(self, loss_call: cst.Call, found: Producer) -> Fix | None:
        func = loss_call.func
        if self.context.qualified_name(func) != BCE.function:
            return None
        unwrapped = self.unwrapped(found)
        renamed = sibling_reference(self.context, func, BCE.function + "_with_logits")
        if unwrapped is None or renamed is None:
            return None
        text, need = renamed
        cleanup: tuple[NodeEdit, ...] = ()
        if isinstance(func, cst.Name):
            cleanup = unused_import_edits(self.context, func, self._rewritten_loss)
        return Fix.unsafe(NodeEdit(func, text), *unwrapped, *cleanup, imports=(need,) if need else ())

    def _rewritten_loss(self, call: cst.Call) -> bool:
        """A functional BCE call whose input is a sigmoid call written in place."""
        arg = get_arg(call, "input", 0)
        return arg is not None and isinstance(arg.value, cst.Call) and self.unwraps(arg.value)
