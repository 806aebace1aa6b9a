from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import method_call
from torchlint.engine.triage import calls_method, check
from torchlint.rule import Rule
from torchlint.rules.training.loops import is_autocast_item


class BackwardInsideAutocast(Rule):
    """## What it does
    Flags a `.backward()` call written inside a `with autocast(...)` block
    (`torch.autocast`, `torch.amp.autocast`, `torch.cuda.amp.autocast`). Not in test files,
    which probe autocast behaviour on purpose, and not inside `autocast(enabled=False)`.

    ## Why is this bad?
    Autocast is meant to wrap the forward pass and the loss only. The backward pass
    already runs each operation in the dtype its forward used; running it under
    autocast is not recommended by PyTorch and can pick different kernels or dtypes for
    the gradient computation. Close the block after the loss and call backward outside.

    ## Example
    ```python
    import torch

    def step(model, x, y, optimizer, scaler, loss_fn):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    Use instead:
    ```python
    import torch

    def step(model, x, y, optimizer, scaler, loss_fn):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    ```

    ## Fix safety
    No fix: moving the call out of the block means re-indenting the code around it.
    """

    code = "TL204"
    name = "backward-inside-autocast"
    triggers = ("autocast",)
    # a `.backward()` call inside a `with` block
    patterns = ("backward", r"\bwith\b")
    requires = calls_method("backward") & check(
        "torchlint.rules.training.step_screens:may_flag_tl204")
    message = "backward() runs inside an autocast block; call it after the block ends"

    def visit_Call(self, node: cst.Call) -> None:
        if method_call(node, "backward") is None:
            return
        ctx = self.context
        if ctx.is_test_file:
            return  # tests probe autocast semantics on purpose (pytest.raises around it)
        ancestors = ctx.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(anc, cst.With) and ancestors[i + 1] is anc.body:
                verdicts = [is_autocast_item(ctx, item.item, anc) for item in anc.items]
                if False in verdicts:
                    return  # an inner autocast(enabled=False) region
                if True in verdicts:
                    self.report(node)
                    return
