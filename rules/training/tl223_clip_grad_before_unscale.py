from __future__ import annotations

import libcst as cst

from torchlint.analysis.execution import in_training_code
from torchlint.analysis.training_objects import (
    GRADIENT_CLIPS,
    ScalerEvent,
    is_grad_scaler,
    scaler_events,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, calls_method, check
from torchlint.rule import Rule


class ClipGradBeforeUnscale(Rule):
    """## What it does
    Flags a gradient clip (`torch.nn.utils.clip_grad_norm_` or `clip_grad_value_`, any
    alias) in training code between `S.scale(loss).backward()` and `S.step(optimizer)` of a
    `GradScaler` `S` (`torch.amp.GradScaler`, `torch.cuda.amp.GradScaler`), when no
    `S.unscale_(optimizer)` comes before the clip.

    ## Why is this bad?
    Until `unscale_` runs, the gradients are still multiplied by the loss scale (65,536 at
    the start, by default). The clip compares that inflated norm with the threshold meant
    for the true gradients, so it cuts almost every step down to a tiny update: training
    crawls or stalls, and nothing raises or warns. `S.step` unscales afterwards, dividing the
    already clipped gradients once more.

    ## Example
    ```python
    import torch

    def train(model, loader, loss_fn, optimizer):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, loss_fn, optimizer):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda"):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
    ```

    ## Fix safety
    Unsafe: the fix inserts `S.unscale_(optimizer)` on the line before the clip (offered when
    the scaler steps one optimizer after it). The clip then sees the true gradients, which
    changes every later update: that is the cure, but it also changes how training behaves,
    so a threshold tuned against the scaled norms may need retuning.
    """

    code = "TL223"
    name = "clip-grad-before-unscale"
    message = ("'{clip}' clips gradients still multiplied by the loss scale of '{scaler}'; "
               "call {scaler}.unscale_({optimizer}) before clipping, or almost every step "
               "is cut to a tiny update")
    fix_safety = "unsafe"
    triggers = ("clip_grad",)
    patterns = (r"\.scale\(", r"\.step\(")
    requires = calls(*GRADIENT_CLIPS) & calls_method("scale") & calls_method("step") & check(
        "torchlint.rules.training.step_screens:may_flag_tl223")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if ctx.qualified_name(node.func) not in GRADIENT_CLIPS:
            return
        function = ctx.current_function
        scope: cst.FunctionDef | cst.Module = function if function is not None else ctx.module
        events = scaler_events(ctx, scope)
        index = next((i for i, e in enumerate(events) if e.node is node), None)
        if index is None or not in_training_code(ctx):
            return
        backward = self._last_scaled_backward(events[:index])
        if backward is None or backward.receiver is None:
            return
        scaler = backward.scaler
        steps = self._steps_after(events[index + 1:], scaler)
        if not steps or any(e.kind == "unscale" and e.scaler == scaler
                            for e in events[:index]):
            return
        klass = ctx.enclosing_class() if function is not None else None
        if not is_grad_scaler(ctx, backward.receiver, function, klass):
            return
        optimizers = {e.optimizer for e in steps}
        optimizer = optimizers.pop() if len(optimizers) == 1 else "optimizer"
        self.report(node, fix=self._fix(scaler, steps), clip=ctx.code(node.func), scaler=scaler,
                    optimizer=optimizer)

    @staticmethod
    def _last_scaled_backward(events: list[ScalerEvent]) -> ScalerEvent | None:
        """The last ``S.scale(L).backward()`` before the clip, unless ``S`` stepped since."""
        for event in reversed(events):
            if event.kind == "scale_backward":
                return event
            if event.kind == "step":
                return None
        return None

    @staticmethod
    def _steps_after(events: list[ScalerEvent], scaler: str) -> list[ScalerEvent]:
        """The ``S.step(O)`` calls after the clip, up to the next scaled backward."""
        steps = []
        for event in events:
            if event.kind == "scale_backward":
                break
            if event.kind == "step" and event.scaler == scaler:
                steps.append(event)
        return steps

    def _fix(self, scaler: str, steps: list[ScalerEvent]) -> Fix | None:
        optimizers = {e.optimizer for e in steps}
        statement = self.context.ancestors[1] if len(self.context.ancestors) > 1 else None
        for anc in reversed(self.context.ancestors):
            if isinstance(anc, cst.SimpleStatementLine):
                statement = anc
                break
            if isinstance(anc, cst.BaseCompoundStatement):
                return None
        if len(optimizers) != 1 or not isinstance(statement, cst.SimpleStatementLine):
            return None
        optimizer = optimizers.pop()
        return Fix.unsafe(NodeEdit(statement, f"{scaler}.unscale_({optimizer})",
                                   kind="insert_line_before"))
