from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope
from torchlint.analysis.torch_facts import is_backward_call
from torchlint.engine.triage import calls_method, calls_named, check, imports
from torchlint.rule import Rule
from torchlint.rules.training.steps import (
    backpropagates,
    expression_text,
    optimizer_model,
    statement_call,
    stepped_optimizer,
    straight_line,
)


class ZeroGradBetweenBackwardAndStep(Rule):
    """## What it does
    Flags `zero_grad()` called after `loss.backward()` and before the optimizer step that
    should use those gradients, in the same straight-line code of a function or loop body:
    `optimizer.zero_grad()` (or `model.zero_grad()` for the model that optimizer trains)
    between `loss.backward()` (or Lightning's `self.manual_backward(loss)`) and
    `optimizer.step()` / `scaler.step(optimizer)`. Not when another backward pass runs in
    between, when the `zero_grad` is under an `if`, or when it clears another optimizer's
    model (a GAN's generator between the discriminator's backward and step).

    ## Why is this bad?
    `zero_grad()` wipes out (or sets to `None`) the gradients `backward()` just computed,
    so the step that follows has nothing to apply: optimizers skip parameters whose
    gradient is `None`, and zeroed gradients move them only through weight decay or
    momentum. The model never learns from its loss, the loss curve stays flat, and no
    error is raised.

    ## Example
    ```python
    import torch

    def fit(net, batches, criterion, epochs):
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for inputs, targets in batches:
                criterion(net(inputs), targets).backward()
                net.zero_grad()
                opt.step()
    ```

    Use instead:
    ```python
    import torch

    def fit(net, batches, criterion, epochs):
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        for epoch in range(epochs):
            for inputs, targets in batches:
                net.zero_grad()
                criterion(net(inputs), targets).backward()
                opt.step()
    ```

    ## Fix safety
    No fix: whether the call belongs before the backward pass or after the step is the
    author's decision.
    """

    code = "TL218"
    name = "zero-grad-between-backward-and-step"
    triggers = ("zero_grad",)
    patterns = ("backward", r"\bstep\b")
    requires = calls_method("zero_grad", "step") & calls_named("backward") & imports(
        "torch") & check("torchlint.rules.training.step_screens:may_flag_tl218")
    message = "{zero} clears the gradients backward() just computed, before {step} uses them"

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._check(node.body)

    def visit_For(self, node: cst.For) -> None:
        self._check(node.body)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.body)

    def _check(self, body: cst.BaseSuite) -> None:
        if not self.context.imports_from("torch"):
            return
        statements = straight_line(body)
        seen_backward = False
        for index, stmt in enumerate(statements):
            call = statement_call(stmt)
            if call is not None and is_backward_call(self.context, call):
                seen_backward = True
                continue
            if not seen_backward or call is None or not isinstance(call.func, cst.Attribute) or (
                    call.func.attr.value != "zero_grad"):
                continue
            cleared = call.func.value
            step = self._next_step(statements[index + 1:], cleared)
            if step is not None and not self._stepped_since_backward(statements[:index],
                                                                     cleared):
                self.report(call, zero=self.context.code(call).strip(),
                            step=self.context.code(step).strip())

    def _next_step(self, after: list[cst.CSTNode], cleared: cst.BaseExpression
                   ) -> cst.Call | None:
        """The step of an optimizer of ``cleared`` that comes next in straight-line code,
        unless a backward pass (anywhere, nested blocks included) comes first."""
        for stmt in after:
            call = statement_call(stmt)
            if call is not None:
                optimizer = stepped_optimizer(call, bare=True)
                if optimizer is not None and self._clears_optimizer(cleared, optimizer):
                    return call
            if any(isinstance(n, cst.Call) and backpropagates(self.context, n)
                   for n in iter_scope(stmt)):
                return None
        return None

    def _stepped_since_backward(self, before: list[cst.CSTNode],
                                cleared: cst.BaseExpression) -> bool:
        """Between the last backward pass and the ``zero_grad``, the optimizer already
        stepped: the ``zero_grad`` comes after the step it belongs to."""
        for stmt in reversed(before):
            for node in iter_scope(stmt):
                if not isinstance(node, cst.Call):
                    continue
                optimizer = stepped_optimizer(node)
                if optimizer is not None and self._clears_optimizer(cleared, optimizer):
                    return True
            call = statement_call(stmt)
            if call is not None and is_backward_call(self.context, call):
                return False
        return False

    def _clears_optimizer(self, cleared: cst.BaseExpression,
                          optimizer: cst.BaseExpression) -> bool:
        """``cleared`` is the optimizer itself, or the model it was built over."""
        text = expression_text(cleared)
        if text == expression_text(optimizer):
            return True
        return optimizer_model(self.context, optimizer) == text
