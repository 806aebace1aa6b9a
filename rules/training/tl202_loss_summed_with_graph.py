from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import loop_sum
from torchlint.rule import Rule
from torchlint.rules.patterns import GRAPH_VALUE
from torchlint.rules.training.graph import (
    function_scope,
    grad_surely_enabled,
    graph_is_wanted,
    graph_value,
    is_number_or_tensor,
    item_call,
    item_suggestion,
    iterates_data,
    last_assignment,
    shown,
)


class LossSummedWithGraph(Rule):
    """## What it does
    Flags a running total built with `total += loss` inside a loop, where `loss` still
    carries its autograd graph and the total is never backpropagated.

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
    patterns = (r"(?:^|[\r\n;:(])[ \t\f\\(]*\w+(?:[\s\\)]|#[^\n\r]*[\r\n])*\+="
                r"(?![ \t]*(?:[\d.][\w.]*|[rRbBuUfF]{0,2}(?:\"[^\"\n\r]*\"|'[^'\n\r]*'))"
                r"[ \t]*(?:#|;|\r|$))"
                r"|\b(\w+)(?:[\s\\)]|#[^\n\r]*[\r\n])*=(?:[\s\\(]|#[^\n\r]*[\r\n])*\1"
                r"(?:[\s\\)]|#[^\n\r]*[\r\n])*\+",
                GRAPH_VALUE)
    requires = loop_sum()
    message = ("{value} is added to {total} with its autograd graph; the total keeps every "
               "step's graph alive: add {suggestion}")
    fix_safety = "unsafe"
    fix_title = "Add .item() instead of the tensor"

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign) and isinstance(node.target, cst.Name):
            self._check(node.target.value, node.value)

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

    def _check(self, total: str, value: cst.BaseExpression) -> None:
        ctx = self.context
        loops = ctx.loops()
        if not loops:
            return
        if not any(is_number_or_tensor(ctx, last_assignment(ctx, total, loop))
                   for loop in loops):
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
        self.report(value, fix=fix, value=shown(value), total=total, suggestion=suggestion)
