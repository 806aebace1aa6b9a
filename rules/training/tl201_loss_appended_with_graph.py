from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import bindings_before
from torchlint.analysis.nodes import dotted_name, method_call, positional_args, self_attribute
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls_method, check
from torchlint.rule import Rule
from torchlint.rules.patterns import GRAPH_VALUE
from torchlint.rules.training.graph import (
    function_scope,
    grad_surely_enabled,
    graph_is_wanted,
    graph_value,
    is_container,
    item_call,
    item_suggestion,
    iterates_data,
    rebinds,
    self_attribute_values,
    shown,
)
from torchlint.rules.training.loops import trains


class LossAppendedWithGraph(Rule):
    """## What it does
    Flags a loss (or model output) tensor appended to a list inside a loop while autograd
    is recording, e.g. `losses.append(loss)` in a training loop, when the list grows
    across training steps (a loop that backpropagates or steps an optimizer, or an epoch
    loop around one) or across batches of a data loader. A list kept on `self`
    (`self.history["loss"].append(loss)`) outlives the call, so a loss appended to it in a
    method is flagged without a loop, unless the method makes the list anew or the class
    backpropagates it.

    Not flagged: `.item()`, `.detach()`, `float(...)` values; code under `torch.no_grad()`
    or `inference_mode()`, or only called from there; a list later backpropagated, or
    built into a returned result by a loop that neither trains nor walks data (tiles of a
    decoded image, frames, one output per model); a list made anew in each iteration of
    the outer loop; an element unpacked from a model's result (`out, feats = model(x)`),
    which may not be a tensor unless its name says loss; and names that only look like a
    loss or model (`loss_fn`, `model`) in a file that does not use torch or where they are
    bound to another framework's object (Keras, JAX, NumPy...).

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
    # an append in a loop that trains or walks data, or into a list kept on self (the check)
    requires = calls_method("append") & check(
        "torchlint.rules.training.value_screens:may_flag_tl201")
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
            self._kept_on_self(attribute, positional_args(node)[0].value)
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
        if holder is None or self._unpacked_output(value, kind):
            return
        # the loops across whose iterations the list grows: those inside the one (if any)
        # that makes a new list each time round
        growing = []
        for loop in ctx.loops():
            if rebinds(loop.body, holder):
                break
            growing.append(loop)
        training = any(trains(ctx, loop) for loop in growing)
        data_loop = any(iterates_data(loop) for loop in growing)
        # graphs pile up across training steps or batches of data; a loop over anything
        # else builds a result (tiles of a decoded image, frames, one output per model)
        if not (training or data_loop):
            return
        if graph_is_wanted(function_scope(ctx), holder, data_loop):
            return
        fix = Fix.unsafe(NodeEdit(value, item_call(value, ctx))) if kind == "loss" else None
        suggestion = item_suggestion(value) if kind == "loss" else "a detached value (.detach())"
        self.report(value, fix=fix, value=shown(value), suggestion=suggestion)

    def _kept_on_self(self, attribute: cst.Attribute, value: cst.BaseExpression) -> None:
        """``self.history["loss"].append(loss)`` in a method: the list outlives the call,
        so it grows across the calls of a step method as across the iterations of a loop."""
        ctx = self.context
        target = attribute.value
        holder = target.value if isinstance(target, cst.Subscript) else target
        cls, function = ctx.enclosing_class(), ctx.current_function
        if self_attribute(holder) is None or cls is None or function is None or (
                function.name.value == "__init__"):
            return
        if graph_value(ctx, value) != "loss" or not grad_surely_enabled(ctx):
            return
        if not any(is_container(ctx, v) for v in self_attribute_values(ctx, holder)):
            return  # never set to a list or dict in the class
        dotted = dotted_name(holder)
        if dotted is None or rebinds(function.body, dotted) or graph_is_wanted(cls, dotted):
            return  # made anew at each call, or backpropagated by the class
        self.report(value, fix=Fix.unsafe(NodeEdit(value, item_call(value, ctx))),
                    value=shown(value), suggestion=item_suggestion(value))

    def _unpacked_output(self, value: cst.BaseExpression, kind: str) -> bool:
        """``out, feats = model(x)``: one element of a model's result, which may be
        anything (a list of activations, a dict of numbers); only a name that says loss
        is taken for one."""
        if not isinstance(value, cst.Name) or "loss" in value.value.lower():
            return False
        for found in bindings_before(self.context, value.value):
            return found.kind == "unpack"
        return False
