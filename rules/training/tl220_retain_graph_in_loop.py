from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere
from torchlint.analysis.nodes import get_arg, is_literal_true, iter_nodes
from torchlint.engine.triage import calls_method, check, loops
from torchlint.rule import Rule
from torchlint.rules.training.steps import backprop_calls, is_backward_method, passes_create_graph


class RetainGraphInLoop(Rule):
    """## What it does
    Flags `loss.backward(retain_graph=True)` in a loop body that computes `loss` itself and
    back-propagates only once per iteration: no other `.backward()`,
    `torch.autograd.grad(...)` or `torch.autograd.backward(...)` in the body, and no
    `create_graph=True`. Two backward passes per iteration (a GAN, several losses over one
    graph), a loss computed before the loop and back-propagated repeatedly, and
    higher-order gradients need the flag and are not flagged.

    ## Why is this bad?
    With one backward pass per iteration nothing reads the graph again within the
    iteration, so `retain_graph=True` is never needed for the current loss. It is usually
    there because backward failed with "Trying to backward through the graph a second
    time": a tensor carried over from the previous iteration (an RNN hidden state, a
    running average, a cached embedding) still links every new graph to the old ones.
    The flag hides that error instead of cutting the link with `.detach()`, so every
    iteration back-propagates through all earlier ones and keeps their buffers alive:
    step time and memory grow until the run runs out of memory.

    ## Example
    ```python
    import torch

    def train(rnn, head, batches, optimizer, loss_fn):
        hidden = torch.zeros(1, 4, 32)
        for x, y in batches:
            out, hidden = rnn(x, hidden)
            loss = loss_fn(head(out), y)
            optimizer.zero_grad()
            loss.backward(retain_graph=True)
            optimizer.step()
    ```

    Use instead:
    ```python
    import torch

    def train(rnn, head, batches, optimizer, loss_fn):
        hidden = torch.zeros(1, 4, 32)
        for x, y in batches:
            hidden = hidden.detach()
            out, hidden = rnn(x, hidden)
            loss = loss_fn(head(out), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    ```

    ## Fix safety
    No fix: dropping the flag alone turns the hidden problem into an error; what to
    detach is the author's decision.
    """

    code = "TL220"
    name = "retain-graph-in-loop"
    triggers = ("retain_graph",)
    patterns = ("backward",)
    requires = calls_method("backward") & loops() & check(
        "torchlint.rules.training.step_screens:may_flag_tl220")
    message = ("retain_graph=True with one backward() per iteration keeps graph buffers alive "
               "and can hide tensors carried across iterations without .detach()")

    def visit_Call(self, node: cst.Call) -> None:
        if not is_backward_method(node) or not _retains(node):
            return
        ctx = self.context
        loop = ctx.current_loop()
        if loop is None or not ctx.imports_from("torch"):
            return
        assert isinstance(node.func, cst.Attribute)
        names = _tensor_names(node.func.value)
        if not names or not all(binds_anywhere(loop.body, name) for name in names):
            return  # a loss built before the loop, back-propagated again each iteration
        if any(call is not node for call in backprop_calls(ctx, loop.body)):
            return
        if passes_create_graph(loop.body):
            return
        self.report(node)


def _retains(call: cst.Call) -> bool:
    arg = get_arg(call, "retain_graph")
    return arg is not None and is_literal_true(arg.value)


def _tensor_names(expr: cst.BaseExpression) -> list[str] | None:
    """The names the back-propagated value is made of: ``loss``, ``scaler.scale(loss)``,
    ``loss.mean()``, ``(a + b) / 2``; None for anything else (attributes, subscripts,
    calls of functions)."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, (cst.Integer, cst.Float)):
        return []
    if isinstance(expr, cst.BinaryOperation):
        left, right = _tensor_names(expr.left), _tensor_names(expr.right)
        return left + right if left is not None and right is not None else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if expr.func.attr.value == "scale" and len(expr.args) == 1:
            return _tensor_names(expr.args[0].value)  # scaler.scale(loss)
        if expr.func.attr.value in ("mean", "sum") and not any(
                isinstance(n, cst.Name) for a in expr.args for n in iter_nodes(a)):
            return _tensor_names(expr.func.value)
    return None
