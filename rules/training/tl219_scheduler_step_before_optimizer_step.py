from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope
from torchlint.analysis.torch_releases import SCHEDULER_STEP_AFTER_OPTIMIZER, Releases
from torchlint.engine.triage import calls_method, check, loops
from torchlint.rule import Rule
from torchlint.rules.training.steps import (
    expression_text,
    scheduler_optimizer,
    statement_call,
    stepped_optimizer,
    straight_line,
)


class SchedulerStepBeforeOptimizerStep(Rule):
    """## What it does
    Flags `scheduler.step()` written, unconditionally, in a loop body before the
    `optimizer.step()` (or `scaler.step(optimizer)`) of the optimizer that scheduler was
    built with, later in the same loop body (nested loops and blocks included). The
    scheduler is a `torch.optim.lr_scheduler` class bound in the file, other than
    `ReduceLROnPlateau`.

    ## Why is this bad?
    Since PyTorch 1.1 a scheduler must step after the optimizer. Stepping it first moves
    the learning rate on before the first update has used it: the initial value of the
    schedule is never used and every later value comes one step (or one epoch) early, so
    warm-up is cut short and decays happen too soon. PyTorch only warns about it at run
    time, once, where it is easily lost in the logs.

    ## Example
    ```python
    import torch

    def train(model, loader, loss_fn, epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
        for epoch in range(epochs):
            scheduler.step()
            for x, y in loader:
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, loss_fn, epochs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=10)
        for epoch in range(epochs):
            for x, y in loader:
                optimizer.zero_grad()
                loss_fn(model(x), y).backward()
                optimizer.step()
            scheduler.step()
    ```

    ## Fix safety
    No fix: the call has to move after the optimizer step, which may be in another block.
    """

    code = "TL219"
    name = "scheduler-step-before-optimizer-step"
    triggers = ("lr_scheduler",)
    patterns = (r"\bstep\b",)
    requires = calls_method("step") & loops() & check(
        "torchlint.rules.training.step_screens:may_flag_tl219")
    message = "{scheduler}.step() runs before {optimizer}.step(); step the scheduler after the optimizer"
    applies_to = Releases(SCHEDULER_STEP_AFTER_OPTIMIZER, why="Before 1.1 the scheduler was "
                          "meant to step first; the rule does not fire for an older target.")

    def visit_For(self, node: cst.For) -> None:
        self._check(node.body)

    def visit_While(self, node: cst.While) -> None:
        self._check(node.body)

    def _check(self, body: cst.BaseSuite) -> None:
        statements = straight_line(body)
        for index, stmt in enumerate(statements):
            call = statement_call(stmt)
            if call is None or call.args or not isinstance(call.func, cst.Attribute) or (
                    call.func.attr.value != "step"):
                continue
            scheduler = call.func.value
            optimizer = scheduler_optimizer(self.context, scheduler)
            if optimizer is None:
                continue
            if self._steps(statements[:index], optimizer) or not self._steps(
                    statements[index + 1:], optimizer):
                continue
            self.report(call.func, scheduler=expression_text(scheduler), optimizer=optimizer)

    @staticmethod
    def _steps(statements: list[cst.CSTNode], optimizer: str) -> bool:
        """Some statement (nested blocks and loops included) steps ``optimizer``."""
        for stmt in statements:
            for node in iter_scope(stmt):
                if isinstance(node, cst.Call):
                    stepped = stepped_optimizer(node)
                    if stepped is not None and expression_text(stepped) == optimizer:
                        return True
        return False
