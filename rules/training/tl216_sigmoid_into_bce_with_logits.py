from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix
from torchlint.engine.triage import api, check
from torchlint.rules.training.losses import (
    BCE_WITH_LOGITS,
    SIGMOID,
    ActivationIntoLoss,
    Producer,
)


class SigmoidIntoBceWithLogits(ActivationIntoLoss):
    """## What it does
    Flags a sigmoid output passed as the input (the first argument) of
    `F.binary_cross_entropy_with_logits` or of an `nn.BCEWithLogitsLoss` instance: the
    sigmoid call written in place, or a name bound to it earlier in the same function.
    A sigmoid passed as the target is not flagged, nor is `F.logsigmoid`.

    ## Why is this bad?
    The "with logits" losses apply the sigmoid themselves. Given probabilities, they
    squash them a second time: every input lands between sigmoid(0) = 0.5 and
    sigmoid(1) = 0.73, so the predicted probabilities can never approach 0 or 1, the loss
    cannot go below a high floor and the gradients are tiny. Training runs without error
    and quietly produces a poor model.

    ## Example
    ```python
    import torch
    import torch.nn as nn

    criterion = nn.BCEWithLogitsLoss()

    def step(model, x, y):
        return criterion(torch.sigmoid(model(x)), y)
    ```

    Use instead:
    ```python
    import torch
    import torch.nn as nn

    criterion = nn.BCEWithLogitsLoss()

    def step(model, x, y):
        return criterion(model(x), y)
    ```

    ## Fix safety
    Unsafe, and only when the sigmoid call is written as the argument itself: the call is
    replaced by its input. The loss changes, which is the point of the fix. No fix when
    the sigmoid output comes through a name: it may be used for something else as well.
    """

    code = "TL216"
    name = "sigmoid-into-bce-with-logits"
    triggers = ("binary_cross_entropy_with_logits", "BCEWithLogitsLoss")
    patterns = (r"(?:binary_cross_entropy_with_logits|BCEWithLogitsLoss)",
                r"(?:sigmoid|Sigmoid)")
    # a call of the loss, and an activation's output passed to it (the check)
    requires = api(BCE_WITH_LOGITS.function, BCE_WITH_LOGITS.layer) & check(
        "torchlint.rules.training.value_screens:may_flag_tl216")
    message = "{what} passed to a loss that applies sigmoid itself; pass the logits"
    fix_safety = "unsafe"
    fix_title = "Pass the logits"
    loss = BCE_WITH_LOGITS
    activation = SIGMOID

    def fix(self, loss_call: cst.Call, found: Producer) -> Fix | None:
        edits = self.unwrapped(found)
        return Fix.unsafe(*edits) if edits else None
