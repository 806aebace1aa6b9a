from __future__ import annotations

import libcst as cst

from torchlint.rule import Rule

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})


class EmptyCacheInLoop(Rule):
    """## What it does
    Flags `torch.cuda.empty_cache()` called on every iteration of a `for`/`while` loop,
    not guarded by an `if`.

    ## Why is this bad?
    `empty_cache()` hands the allocator's unused cached blocks back to the driver. It
    frees no tensor that is still referenced, so it cannot fix a leak or lower peak
    memory, and the next iteration has to ask the driver for the same memory again,
    which is slow and synchronises the device. Called every step it only costs time.
    It is useful occasionally, e.g. between phases or every few hundred steps.

    ## Example
    ```python
    import torch

    def train(model, loader, step_fn):
        for batch in loader:
            step_fn(model, batch)
            torch.cuda.empty_cache()
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, step_fn):
        for i, batch in enumerate(loader):
            step_fn(model, batch)
            if i % 1000 == 0:
                torch.cuda.empty_cache()
    ```

    ## Fix safety
    No fix: whether to drop the call or run it periodically is the author's choice.
    """

    code = "TL209"
    name = "empty-cache-in-loop"
    triggers = ("empty_cache",)
    # the call sits in a loop body
    patterns = (r"\b(?:for|while)\b",)
    message = ("torch.cuda.empty_cache() runs on every loop iteration; it frees no live "
               "tensor and slows each step: drop it or run it under an if")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if ctx.qualified_name(node.func) not in _EMPTY_CACHE:
            return
        ancestors = ctx.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            child = ancestors[i + 1]
            if isinstance(anc, (cst.For, cst.While)):
                if child is anc.body:
                    self.report(node)
                return
            if isinstance(anc, cst.Try) and (child is not anc.body or anc.handlers):
                return  # an except/finally clause, or an out-of-memory retry loop
            if isinstance(anc, (cst.With, cst.Try, cst.IndentedBlock, cst.SimpleStatementLine,
                                cst.SimpleStatementSuite, cst.Expr)):
                continue
            return  # an if, a match, a def, a comprehension, a conditional expression...
