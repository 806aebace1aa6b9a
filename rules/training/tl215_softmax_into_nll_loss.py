from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api, check
from torchlint.fix.edits import sibling_reference
from torchlint.rules.training.losses import (
    NLL,
    SOFTMAX,
    ActivationIntoLoss,
    Producer,
    unused_import_edits,
)

_LOG_SOFTMAX = {"torch.softmax": "torch.log_softmax",
                "torch.nn.functional.softmax": "torch.nn.functional.log_softmax"}


class SoftmaxIntoNllLoss(ActivationIntoLoss):
    """## What it does
    Flags a softmax output (not `log_softmax`) passed as the input (the first argument)
    of `F.nll_loss` or of an `nn.NLLLoss` instance: the softmax call written in place, or
    a name bound to it earlier in the same function. `torch.log(F.softmax(...))` and
    `.log()` of it are log-probabilities and are not flagged; neither is a softmax passed
    as the target.

    ## Why is this bad?
    `nll_loss` does no normalisation of its own: it picks `-input[target]`, which is the
    cross-entropy only when the input holds log-probabilities. Fed probabilities, it
    minimises `-p[y]` instead, a bounded objective whose gradient vanishes for confident
    wrong predictions; the model still trains, just much worse, and nothing fails.

    ## Example
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        return F.nll_loss(F.softmax(model(x), dim=1), y)
    ```

    Use instead:
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        return F.nll_loss(F.log_softmax(model(x), dim=1), y)
    ```

    ## Fix safety
    Unsafe, and only when the softmax call is written as the argument itself:
    `softmax` becomes `log_softmax` with the same arguments (`torch.softmax`,
    `F.softmax`, `x.softmax(...)`, and `nn.Softmax(...)(x)` built in place). The loss
    value changes, which is the point of the fix. No fix when the softmax output comes
    through a name: it may be used for something else as well.
    """

    code = "TL215"
    name = "softmax-into-nll-loss"
    triggers = ("nll_loss", "NLLLoss")
    patterns = (r"(?:nll_loss|NLLLoss)", r"(?:softmax|Softmax)")
    # a call of the loss, and an activation's output passed to it (the check)
    requires = api(NLL.function, NLL.layer) & check(
        "torchlint.rules.training.value_screens:may_flag_tl215")
    message = "{what} passed to NLL loss, which expects log-probabilities; use log_softmax"
    fix_safety = "unsafe"
    fix_title = "Use log_softmax"
    loss = NLL
    activation = SOFTMAX

    def fix(self, loss_call: cst.Call, found: Producer) -> Fix | None:
        func = found.call.func
        if found.form == "method" and isinstance(func, cst.Attribute):
            return Fix.unsafe(NodeEdit(func.attr, "log_softmax"))
        if found.form == "layer":
            # nn.Softmax(dim=1)(x) built in place; an instance bound to a name may serve
            # other calls that need probabilities
            if isinstance(func, cst.Call) and isinstance(func.func, cst.Attribute):
                return Fix.unsafe(NodeEdit(func.func.attr, "LogSoftmax"))
            return None
        new = _LOG_SOFTMAX.get(self.context.qualified_name(func) or "")
        renamed = sibling_reference(self.context, func, new) if new is not None else None
        if renamed is None:
            return None
        text, need = renamed
        cleanup: tuple[NodeEdit, ...] = ()
        if isinstance(func, cst.Name):
            cleanup = unused_import_edits(
                self.context, func, lambda use: use is found.call or self.nested(use))
        return Fix.unsafe(NodeEdit(func, text), *cleanup, imports=(need,) if need else ())
