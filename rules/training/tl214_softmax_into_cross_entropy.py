from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix
from torchlint.engine.triage import api, check
from torchlint.rules.training.losses import (
    CROSS_ENTROPY,
    SOFTMAX,
    ActivationIntoLoss,
    Producer,
)


class SoftmaxIntoCrossEntropy(ActivationIntoLoss):
    """## What it does
    Flags a softmax output passed as the input (the first argument) of
    `F.cross_entropy` or of an `nn.CrossEntropyLoss` instance: the softmax call written
    in place, or a name bound to it earlier in the same function. The target (second
    argument) is never looked at: soft targets from a softmax are correct, as is
    `log_softmax` as the input (applying it twice changes nothing).

    ## Why is this bad?
    Cross-entropy expects raw scores (logits) and applies `log_softmax` itself. Fed
    probabilities, it normalises a second time: the values it sees all lie in [0, 1], so
    even a perfectly confident prediction still gets a large loss, and the gradient
    flowing back through the extra softmax shrinks as the model grows confident. Training
    runs without any error but learns slowly and settles at a worse optimum.

    ## Example
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        probs = F.softmax(model(x), dim=1)
        return F.cross_entropy(probs, y)
    ```

    Use instead:
    ```python
    import torch.nn.functional as F

    def step(model, x, y):
        logits = model(x)
        return F.cross_entropy(logits, y)
    ```

    ## Fix safety
    Unsafe, and only when the softmax call is written as the argument itself: the call
    is replaced by its input tensor. The loss changes (that is the point), and it is the
    intended one only when the softmax ran over the class dimension. No fix when the
    softmax output comes through a name: it may be used for something else as well.
    """

    code = "TL214"
    name = "softmax-into-cross-entropy"
    triggers = ("cross_entropy", "CrossEntropyLoss")
    patterns = (r"(?:cross_entropy|CrossEntropyLoss)", r"(?:softmax|Softmax)")
    # a call of the loss, and an activation's output passed to it (the check)
    requires = api(CROSS_ENTROPY.function, CROSS_ENTROPY.layer) & check(
        "torchlint.rules.training.value_screens:may_flag_tl214")
    message = "{what} passed to cross-entropy, which applies log_softmax itself; pass the logits"
    fix_safety = "unsafe"
    fix_title = "Pass the logits"
    loss = CROSS_ENTROPY
    activation = SOFTMAX

    def fix(self, loss_call: cst.Call, found: Producer) -> Fix | None:
        edits = self.unwrapped(found)
        return Fix.unsafe(*edits) if edits else None
