from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import dotted_name, iter_scope, self_attribute
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, loop_sum
from torchlint.rule import Rule
from torchlint.rules.patterns import GRAPH_VALUE
from torchlint.rules.training.graph import (
    function_scope,
    grad_surely_enabled,
    graph_is_wanted,
    graph_value,
    is_container,
    is_number_or_tensor,
    item_call,
    item_suggestion,
    iterates_data,
    last_assignment,
    rebinds,
    self_attribute_values,
    shown,
)


class LossSummedWithGraph(Rule):
    """## What it does
    Flags a running total built with `total += loss` inside a loop, where `loss` still
    carries its autograd graph and the total is never backpropagated. A value carries its
    graph when it comes from a loss or model call, or when `loss.backward()` was called on
    it earlier in the same block (backward needs a graph). The total may also be
    an entry of a dict or list made before the loop (`stats[name] += loss`), or kept on
    `self` (`self.running_loss += loss`, `self.meters["loss"] += loss`): such a total
    outlives the call, so it grows across the calls of a step method even without a loop.
    It does not flag a total that the method sets anew itself, or one that the class
    backpropagates.

    ## Why is this bad?
    Adding a tensor that requires grad to the total turns the total into a tensor that
    is itself part of a graph, and that graph links back to every step's loss. Nothing
    is freed until the total goes away, so memory climbs step after step, and the
    bookkeeping slows the loop down. A number to print or average is all the total
    needs: take it with `.item()`.

    ## Example
    ```python
    import torch.nn as nn

    def train(model, loader, optimizer):
        criterion = nn.CrossEntropyLoss()
        epoch_loss = 0.0
        for images, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            epoch_loss += loss
        print(epoch_loss / len(loader))
    ```

    Use instead:
    ```python
    import torch.nn as nn

    def train(model, loader, optimizer):
        criterion = nn.CrossEntropyLoss()
        epoch_loss = 0.0
        for images, labels in loader:
            optimizer.zero_grad()
            loss = criterion(model(images), labels)
            loss.backward()
            optimizer.step()
            epoch_loss += loss.item()
        print(epoch_loss / len(loader))
    ```

    ## Fix safety
    Unsafe: the total becomes a Python float, so code that later treats it as a tensor
    (`.item()`, `.cpu()`, `torch.distributed.all_reduce`) has to change, and `.item()`
    waits for the GPU at every step. Model outputs, which are usually not scalars, are
    reported without a fix.
    """

    code = "TL202"
    name = "loss-summed-with-graph"
    triggers = ("+",)
    # `name += <not a lone number/string>` or `name = name + ...`; the value as in TL201
    patterns = (r"(?:^|[\r\n;:(])[ \t\f\\(]*\w+(?:\.\w+)*(?:\[[^\]\r\n]*\])*"
                r"(?:[\s\\)]|#[^\n\r]*[\r\n])*\+="
                r"(?![ \t]*(?:[\d.][\w.]*|[rRbBuUfF]{0,2}(?:\"[^\"\n\r]*\"|'[^'\n\r]*'))"
                r"[ \t]*(?:#|;|\r|$))"
                r"|\b(\w+)(?:[\s\\)]|#[^\n\r]*[\r\n])*=(?:[\s\\(]|#[^\n\r]*[\r\n])*\1"
                r"(?:[\s\\)]|#[^\n\r]*[\r\n])*\+",
                GRAPH_VALUE)
    requires = loop_sum() & check("torchlint.rules.training.value_screens:may_flag_tl202")
    message = ("{value} is added to {total} with its autograd graph; the total keeps every "
               "step's graph alive: add {suggestion}")
    fix_safety = "unsafe"
    fix_title = "Add .item() instead of the tensor"

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, cst.AddAssign):
            return
        target = node.target
        if isinstance(target, cst.Name):
            self._check(target.value, node.value)
            return
        # ``self.running_loss += loss``, ``stats[k] += loss``, ``self.meters["loss"] += loss``
        holder = target.value if isinstance(target, cst.Subscript) else target
        dotted = dotted_name(holder)
        if dotted is None or "." in dotted and self_attribute(holder) is None:
            return
        if self_attribute(holder) is not None:
            self._check_attribute(holder, target, node.value)
        elif isinstance(target, cst.Subscript):
            self._check(dotted, node.value, shown(target), container=True)

    def visit_Assign(self, node: cst.Assign) -> None:
        # ``total = total + loss``
        value = node.value
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, cst.Name):
            return
        total = node.targets[0].target.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add) and (
                isinstance(value.left, cst.Name) and value.left.value == total) and not (
                    value.lpar):
            self._check(total, value.right)

    def _check(self, total: str, value: cst.BaseExpression, shown_total: str | None = None,
               *, container: bool = False) -> None:
        ctx = self.context
        loops = ctx.loops()
        if not loops:
            return
        made = is_container if container else is_number_or_tensor
        if not any(made(ctx, last_assignment(ctx, total, loop)) for loop in loops):
            return
        kind = graph_value(ctx, value)
        if kind is None or not grad_surely_enabled(ctx):
            return
        if kind == "model" and ctx.in_module_class():
            return  # model methods (sampling, feature maps) are often run under no_grad
        data_loop = any(iterates_data(loop) for loop in loops)
        if graph_is_wanted(function_scope(ctx), total, data_loop):
            return
        fix = Fix.unsafe(NodeEdit(value, item_call(value, ctx))) if kind == "loss" else None
        suggestion = item_suggestion(value) if kind == "loss" else "a detached value (.detach())"
        self.report(value, fix=fix, value=shown(value), total=shown_total or total,
                    suggestion=suggestion)

    def _check_attribute(self, holder: cst.BaseExpression, target: cst.BaseExpression,
                         value: cst.BaseExpression) -> None:
        """A total kept on ``self`` outlives the call: it grows across the calls of a step
        method as a local total grows across the iterations of a loop."""
        ctx = self.context
        cls = ctx.enclosing_class()
        function = ctx.current_function
        if cls is None or function is None or function.name.value == "__init__":
            return
        made = is_container if isinstance(target, cst.Subscript) else is_number_or_tensor
        if not any(made(ctx, v) for v in self_attribute_values(ctx, holder)):
            return  # never set to a number, a tensor or a container in the class
        kind = graph_value(ctx, value)
        looped = bool(ctx.loops())
        if kind is None or not grad_surely_enabled(ctx) or kind == "model" and (
                not looped or ctx.in_module_class()):
            return
        total = dotted_name(holder)
        assert total is not None
        if not looped and (rebinds(function.body, total) or _sets_entry(function, target)):
            return  # set anew at each call: it only sums this call's terms
        if graph_is_wanted(cls, total, any(iterates_data(loop) for loop in ctx.loops())):
            return
        fix = Fix.unsafe(NodeEdit(value, item_call(value, ctx))) if kind == "loss" else None
        suggestion = item_suggestion(value) if kind == "loss" else "a detached value (.detach())"
        self.report(value, fix=fix, value=shown(value), total=shown(target),
                    suggestion=suggestion)


def _sets_entry(function: cst.FunctionDef, target: cst.BaseExpression) -> bool:
    """``self.meters["loss"] = 0.0`` in ``function`` for a subscripted ``target``."""
    if not isinstance(target, cst.Subscript):
        return False
    spelled = shown(target)
    return any(isinstance(node, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) and shown(t.target) == spelled
        for t in node.targets) for node in iter_scope(function.body))
