from __future__ import annotations

import libcst as cst
from torchlint.rules.patterns import GRAPH_VALUE
from torchlint.rules.training.graph import (
    function_scope,
    grad_surely_enabled,
    graph_is_wanted,
    graph_value,
    item_call,
    item_suggestion,
    iterates_data,
    shown,
)

from torchlint.analysis.nodes import dotted_name, method_call, positional_args
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.rule import Rule


class LossAppendedWithGraph(Rule):
    """## What it does
    Flags a loss (or model output) tensor appended to a list inside a loop while autograd
    is recording, e.g. `losses.append(loss)` in a training loop.

    ## Why is this bad?
    A loss tensor is not just a number: it keeps a reference to the whole computation
    graph that produced it, including the activations saved for the backward pass. Every
    tensor stored in the list keeps its step's graph alive, so memory grows with each
    iteration until the GPU runs out. For logging or averaging you only need the Python
    number, which `.item()` gives you.

    ## Example
    ```python
    import torch.nn.functional as F

    def train(model, loader, optimizer):
        history = []
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            history.append(loss)
        return history
    ```

    Use instead:
    ```python
    import torch.nn.functional as F

    def train(model, loader, optimizer):
        history = []
        for inputs, targets in loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(inputs), targets)
            loss.backward()
            optimizer.step()
            history.append(loss.item())
        return history
    ```

    ## Fix safety
    Unsafe: the list then holds Python floats instead of tensors, so later code that
    calls tensor methods on its items, or `torch.stack`s it, has to change too. `.item()`
    also synchronises with the GPU. Model outputs, which are usually not scalars, are
    reported without a fix.
    """

    code = "TL201"
    name = "loss-appended-with-graph"
    triggers = ("append",)
    # the value is a loss (cross_entropy, *Loss, criterion...), nn layer/Module or model-named call
    patterns = (GRAPH_VALUE,)
    message = ("{value} is appended with its autograd graph, which then stays in memory "
               "for every step; append {suggestion}")
    fix_safety = "unsafe"
    fix_title = "Append .item() instead of the tensor"

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "append")
        if attribute is None or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return
        ctx = self.context
        if ctx.current_loop() is None:
            return
        value = positional_args(node)[0].value
        kind = graph_value(ctx, value)
        if kind is None or not grad_surely_enabled(ctx):
            return
        if kind == "model" and ctx.in_module_class():
            return  # model methods (sampling, feature maps) are often run under no_grad
        target = attribute.value
        if isinstance(target, cst.Subscript):  # d[k].append(v)
            target = target.value
        holder = dotted_name(target)
        data_loop = any(iterates_data(loop) for loop in ctx.loops())
        if holder is None or graph_is_wanted(function_scope(ctx), holder, data_loop):
            return
        fix = Fix.unsafe(NodeEdit(value, item_call(value, ctx))) if kind == "loss" else None
        suggestion = item_suggestion(value) if kind == "loss" else "a detached value (.detach())"
        self.report(value, fix=fix, value=shown(value), suggestion=suggestion)
