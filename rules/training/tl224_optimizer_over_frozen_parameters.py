from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_scope, single_target
from torchlint.analysis.training_objects import (
    FreezeEvent,
    freeze_events,
    is_optimizer_class,
    unfreezes_on_path,
)
from torchlint.engine.triage import attribute, calls_method, calls_under, check
from torchlint.rule import Rule


def _within(model: str, frozen: str) -> bool:
    """``model`` is ``frozen`` or one of its submodules (``net.encoder`` of ``net``)."""
    return model == frozen or model.startswith(frozen + ".")


class OptimizerOverFrozenParameters(Rule):
    """## What it does
    Flags an optimizer built over `M.parameters()` (or a submodule's) after every parameter
    of `M` was frozen in the same function (`for p in M.parameters(): p.requires_grad =
    False`, `M.requires_grad_(False)`), when no layer was assigned into `M` in between and
    nothing turns gradients back on: neither the same function nor another function of the
    file that builds no optimizer of its own (a training loop that unfreezes later).
    The same holds the other way round: the optimizer built first, then every parameter it
    holds frozen before the same code steps it or hands it on (reported at the freezing); an
    optimizer that is returned is left alone, since its caller may unfreeze first.

    ## Why is this bad?
    Every parameter the optimizer holds has `requires_grad=False`: backward never gives them
    a gradient, `step()` skips them all, and the loss stays flat while the loop runs
    normally. Usually the new head meant to be trained was never added, or was added before
    the freezing loop that then froze it too.

    ## Example
    ```python
    import torch

    def finetune(model):
        for p in model.parameters():
            p.requires_grad = False
        return torch.optim.SGD(model.parameters(), lr=0.01)
    ```

    Use instead:
    ```python
    import torch

    def finetune(model, num_classes):
        for p in model.parameters():
            p.requires_grad = False
        model.fc = torch.nn.Linear(model.fc.in_features, num_classes)
        return torch.optim.SGD(model.parameters(), lr=0.01)
    ```

    ## Fix safety
    No fix: which layers should train is the author's decision.
    """

    code = "TL224"
    name = "optimizer-over-frozen-parameters"
    message = ("every parameter of '{frozen}' was frozen above (requires_grad=False): this "
               "optimizer holds no trainable parameter, step() changes nothing and the loss "
               "stays flat")
    message_after = ("this freezes every parameter of '{frozen}', which the optimizer built "
                     "above over {model}.parameters() holds: no gradient reaches them, step() "
                     "changes nothing and the loss stays flat")
    triggers = ("requires_grad",)
    patterns = (r"\bparameters\(\)",)
    requires = calls_method("parameters", "named_parameters") & calls_under("torch.optim.") & (
        calls_method("requires_grad_") | attribute("requires_grad")) & check(
        "torchlint.rules.training.step_screens:may_flag_tl224")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if not is_optimizer_class(ctx.qualified_name(node.func)):
            return  # the events of the function are looked at from its optimizers only
        function = ctx.current_function
        scope = function if function is not None else ctx.module
        events = freeze_events(ctx, scope)
        index = next((i for i, e in enumerate(events)
                      if e.kind == "optimizer" and e.node is node), None)
        if index is None or unfreezes_on_path(ctx, scope):
            return
        model = events[index].model
        frozen = self._frozen(events[:index], model)
        if frozen is not None:
            self.report(node, frozen=frozen)
            return
        later = self._frozen_later(events[index + 1:], model)
        if later is not None and self._trained_after(scope, later.node):
            self.report(later.node, message=self.message_after.format(
                frozen=later.model, model=model))

    def _trained_after(self, scope: cst.FunctionDef | cst.Module, freeze: cst.CSTNode
                       ) -> bool:
        """The optimizer, bound to a name, is stepped or handed to a call after ``freeze``
        in ``scope``: training starts there with the parameters frozen (an optimizer that is
        returned may be trained by a caller that unfreezes first)."""
        parent = self.context.ancestors[-2] if len(self.context.ancestors) > 1 else None
        target = single_target(parent) if parent is not None else None
        if not isinstance(target, cst.Name):
            return False
        name = target.value
        seen = False
        for node in iter_scope(scope.body if isinstance(scope, cst.FunctionDef) else scope):
            if node is freeze:
                seen = True
            elif seen and isinstance(node, cst.Call) and (
                    isinstance(node.func, cst.Attribute) and isinstance(node.func.value, cst.Name)
                    and node.func.value.value == name and node.func.attr.value == "step"
                    or any(isinstance(arg.value, cst.Name) and arg.value.value == name
                           for arg in node.args)):
                return True
        return False

    @staticmethod
    def _frozen_later(after: list[FreezeEvent], model: str) -> FreezeEvent | None:
        """The freezing, after the optimizer was built, of every parameter it holds
        (``model`` or a module holding it), unless ``model`` was rebound first."""
        for event in after:
            if event.kind == "freeze" and _within(model, event.model):
                return event
            if event.kind == "grow" and _within(model, event.model):
                return None  # ``model`` (or a module holding it) now names another object
        return None

    @staticmethod
    def _frozen(before: list[FreezeEvent], model: str) -> str | None:
        """The frozen module (``model`` or one holding it), unless something was assigned
        into it, or it was rebound, after the freezing."""
        for i in range(len(before) - 1, -1, -1):
            event = before[i]
            if event.kind == "freeze" and _within(model, event.model):
                return event.model
            if event.kind == "grow" and (_within(event.model, model) or _within(
                    model, event.model.rstrip(".")) or event.model.startswith(model + ".")):
                return None
        return None
