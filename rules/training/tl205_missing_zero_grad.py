from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope
from torchlint.engine.triage import calls_named, check
from torchlint.rule import Rule
from torchlint.rules.training.loops import (
    called_repeatedly,
    clears_on_the_path,
    function_step,
    loop_training_facts,
)


class MissingZeroGrad(Rule):
    """## What it does
    Flags a loop that calls `.backward()` and `optimizer.step()` (or `scaler.step(optimizer)`)
    but never clears the gradients with `zero_grad()` or `p.grad = None`. Not a loop that
    builds a new optimizer (over new leaves) on every iteration.

    It also flags a step function that backpropagates (`backward()`, Lightning's
    `manual_backward()`) and steps an optimizer once per call, when something runs it
    once per batch (a loop of the file calls it, it is handed to another call such as
    ignite's `Engine(update)`, it takes `(engine, batch)`, or it is a `training_step`
    method) and nothing on its path clears the gradients: not the function, the functions
    around it, the other methods of its class, nor the file's functions that call it or
    that it calls.

    ## Why is this bad?
    `.backward()` adds the new gradients to whatever is already stored in `.grad`. Without
    clearing them each step, every update uses the sum of all gradients seen so far, so
    the steps grow and training drifts or diverges, often without any error. Gradient
    accumulation is fine, but it still needs a `zero_grad()` after each real update.

    ## Example
    ```python
    import torch

    def train(model, loader, loss_fn):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, loss_fn):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    ## Fix safety
    No fix: where the gradients should be cleared (each step, or after each accumulated
    update) depends on the training scheme.
    """

    code = "TL205"
    name = "missing-zero-grad"
    triggers = ("backward",)  # also manual_backward
    # the loop calls `.step()` on an optimizer-named receiver (or `scaler.step(optimizer)`)
    patterns = (r"\bstep\b", r"(?i)optim|\bopts?\b|\bopt_|_opt\b")
    # a loop or a step function of the file calls both (a step function needs no loop)
    requires = calls_named("step") & calls_named("backward", "manual_backward") & check(
        "torchlint.rules.training.step_screens:may_flag_tl205")
    message = ("loop calls backward() and {step} but never zero_grad(); gradients pile up "
               "across iterations")

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        """A step function: run once per batch by a loop or a trainer, it backpropagates
        and steps the optimizer, and nothing on its path clears the gradients."""
        ctx = self.context
        step = function_step(ctx, node)
        if step is None:
            return
        cls = ctx.enclosing_class(node)
        if not called_repeatedly(ctx, node, cls) or clears_on_the_path(ctx, node, cls):
            return
        self.report(node.name, step=step, message=(
            f"{node.name.value}() calls backward() and {step} but nothing clears the "
            "gradients between its calls (zero_grad()); they pile up across steps"))

    def visit_For(self, node: cst.For) -> None:
        self._check(node)

    def visit_While(self, node: cst.While) -> None:
        self._check(node)

    def _check(self, node: cst.For | cst.While) -> None:
        facts = loop_training_facts(self.context, node.body)
        if facts is None or facts.clears or facts.inner_loop_steps:
            return
        if self._fresh_optimizer(node):
            return  # a new optimizer (over new leaves) each iteration: nothing piles up
        self.report(node, step=facts.step)

    def _fresh_optimizer(self, node: cst.For | cst.While) -> bool:
        return any(
            isinstance(n, cst.Assign) and isinstance(n.value, cst.Call) and (
                self.context.qualified_name(n.value.func) or "").startswith("torch.optim.")
            for n in iter_scope(node.body))
