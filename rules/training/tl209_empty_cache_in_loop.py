from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope
from torchlint.engine.triage import calls, check, loops
from torchlint.rule import Rule
from torchlint.rules.training.graph import is_model_call, iterates_data
from torchlint.rules.training.loops import trains

_EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})


class EmptyCacheInLoop(Rule):
    """## What it does
    Flags `torch.cuda.empty_cache()` called on every iteration of a loop of steps (one
    that backpropagates, steps an optimizer, walks a data loader or calls a model), not
    guarded by an `if`.

    Not flagged: loops over other things (trackers, loggers, phases), a body that ends the
    loop unconditionally (`return`/`break`: clean-up between phases), a call under an `if`
    (periodic) or in an `except`/`finally` clause (out-of-memory recovery).

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
    requires = calls(*_EMPTY_CACHE) & loops() & check(
        "torchlint.rules.training.step_screens:may_flag_tl209")
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
                if child is anc.body and _step_loop(self.context, anc) and not _leaves(anc) and (
                        not _measures_memory(self.context, anc)):
                    self.report(node)
                return
            if isinstance(anc, cst.Try) and (child is not anc.body or anc.handlers):
                return  # an except/finally clause, or an out-of-memory retry loop
            if isinstance(anc, (cst.With, cst.Try, cst.IndentedBlock, cst.SimpleStatementLine,
                                cst.SimpleStatementSuite, cst.Expr)):
                continue
            return  # an if, a match, a def, a comprehension, a conditional expression...


def _step_loop(ctx, loop: cst.For | cst.While) -> bool:  # type: ignore[no-untyped-def]
    """A loop of steps: it trains (backpropagates or steps an optimizer) or walks a data
    loader. A loop over trackers, loggers, phases or models is not one."""
    if trains(ctx, loop) or iterates_data(loop):
        return True
    return any(is_model_call(ctx, n) for n in iter_scope(loop.body))  # serving requests


def _leaves(loop: cst.For | cst.While) -> bool:
    """The body ends the loop unconditionally (``return``/``break``/``raise``): it runs
    once, after the work, which is what clean-up between phases looks like."""
    body = loop.body
    statements = body.body if isinstance(body, cst.IndentedBlock) else [body]
    for stmt in statements:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ()
        if any(isinstance(s, (cst.Return, cst.Break, cst.Raise)) for s in smalls):
            return True
    return False


def _measures_memory(ctx, loop: cst.For | cst.While) -> bool:  # type: ignore[no-untyped-def]
    """The loop reads CUDA memory statistics (a profiler): each measurement needs the cache
    emptied first."""
    return any(isinstance(n, cst.Call) and (ctx.qualified_name(n.func) or "").startswith(
        ("torch.cuda.memory_", "torch.cuda.memory.memory_", "torch.cuda.max_memory",
         "torch.cuda.memory.max_memory", "torch.cuda.reset_peak"))
        for n in iter_scope(loop.body))
