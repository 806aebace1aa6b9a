from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.grad_mode import GradOff, with_turns_off
from torchlint.analysis.nodes import (
    dotted_name,
    iter_scope,
    last_name_part,
    method_call,
    semantic_children,
)
from torchlint.analysis.torch_facts import is_backward_call
from torchlint.engine.triage import calls, calls_method, check
from torchlint.rule import Rule
from torchlint.rules.evaluation.functions import file_facts
from torchlint.rules.evaluation.modes import every_binding_mode_free


class TrainModeNotRestored(Rule):
    """## What it does
    Flags `model.eval()` called inside a training loop (a loop that calls `.backward()`)
    when the same loop never switches the model back with `model.train()`.

    Not flagged: a model that provably computes the same in both modes (built in this file
    only from layers without dropout, batch norm or other mode-dependent behaviour, e.g.
    `nn.Sequential(nn.Linear(...), nn.ReLU(), ...)`); an EMA copy or frozen teacher that no
    training step runs; an `eval()` in the last round of the loop (before `break`/`return`).

    ## Why is this bad?
    Mid-loop validation is common: every N steps or at the end of each epoch the model
    is put in eval mode and scored. If the loop never calls `model.train()` again, all
    the training steps after the first validation run in eval mode: dropout is off and
    batch norm stops updating its statistics and uses the running ones. Training goes
    on without an error but converges to a worse model, and the mistake is hard to see.

    ## Example
    ```python
    import torch


    def fit(model, loader, optimizer, epochs):
        model.train()
        for epoch in range(epochs):
            for inputs, targets in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(inputs), targets)
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                print(epoch, model(inputs).argmax(1).eq(targets).float().mean().item())
    ```

    Use instead:
    ```python
    import torch


    def fit(model, loader, optimizer, epochs):
        for epoch in range(epochs):
            model.train()
            for inputs, targets in loader:
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(inputs), targets)
                loss.backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                print(epoch, model(inputs).argmax(1).eq(targets).float().mean().item())
    ```

    ## Fix safety
    No fix: where training resumes (top of the loop, or right after validation) is a
    choice the author has to make.
    """

    code = "TL403"
    name = "train-mode-not-restored"
    triggers = ("eval",)
    # an X.eval() attribute call; a loop with .backward()/.manual_backward()/autograd.backward
    patterns = (r"\.[\s\\]*eval\b", r"backward")
    # X.eval() in a loop that backpropagates and runs X (see screens.py)
    requires = calls_method("eval") & (
        calls_method("backward", "manual_backward") | calls("torch.autograd.backward")) & check(
        "torchlint.rules.evaluation.screens:may_flag_tl403")
    message = ("{model}.eval() inside a training loop that never calls {model}.train(); "
               "the following training steps run in eval mode")

    def __init__(self, context) -> None:
        super().__init__(context)
        self._reported: set[tuple[int, str]] = set()

    def visit_Call(self, node: cst.Call) -> None:
        attribute = method_call(node, "eval")
        if attribute is None or node.args:
            return
        model = dotted_name(attribute.value)
        if model is None:
            return
        ctx = self.context
        loop = next((lp for lp in ctx.loops()
                     if any(is_backward_call(ctx, n) for n in iter_scope(lp.body, enter_lambdas=True))), None)
        if loop is None or (id(loop), model) in self._reported:
            return
        if self._leaves_loop(loop):
            return
        setters = file_facts(ctx).train_setters
        for inner in iter_scope(loop.body, enter_lambdas=True):
            train = method_call(inner, "train")
            if train is not None:
                other = dotted_name(train.value)
                if other is None or other == model or other.startswith(model + ".") or (
                    model.startswith(other + ".")
                ):
                    return
            if isinstance(inner, cst.Call) and last_name_part(inner.func) in setters:
                return
        if not _trained_in(ctx, loop, model):
            return  # an EMA copy or a frozen teacher: no training step runs it
        if "." not in model and every_binding_mode_free(ctx, model):
            return  # no dropout or batch norm: eval mode changes nothing it computes
        self._reported.add((id(loop), model))
        self.report(node, model=model)

    def _leaves_loop(self, loop: cst.CSTNode) -> bool:
        """The eval() sits in a block of the loop that ends with break/return (last round)."""
        ancestors = self.context.ancestors
        for anc in reversed(ancestors):
            if anc is loop:
                return False
            if isinstance(anc, cst.IndentedBlock):
                for stmt in anc.body:
                    if isinstance(stmt, cst.SimpleStatementLine) and any(
                        isinstance(s, (cst.Break, cst.Return)) for s in stmt.body
                    ):
                        return True
        return False


# functions that only average weights into a copy (``accumulate(g_ema, g)``,
# ``update_ema(ema, model)``, ``soft_update(target, net)``): handing a model to them trains
# nothing
_AVERAGING = re.compile(r"(?i)(accumulate|ema|moving_average|update_average|polyak|"
                        r"soft_update|momentum_update)")


def _trained_in(ctx, loop: cst.For | cst.While, model: str) -> bool:
    """``model`` runs in ``loop`` with autograd on: called (``model(x)``, ``model.forward``,
    ``model.module(x)``, or a parent of it) or handed to a call (``loss_fn(model, x)``) other
    than one that averages weights into a copy."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.With) and with_turns_off(ctx, node, GradOff.MENTIONED):
            continue
        if isinstance(node, cst.Call):
            name = dotted_name(node.func)
            if name is not None and (name in (model, model + ".forward", model + ".module")
                                     or model.startswith(name + ".")):
                return True
            if any(dotted_name(arg.value) == model for arg in node.args) and not (
                    name is not None and _AVERAGING.search(name.rsplit(".", 1)[-1])):
                return True
        stack.extend(semantic_children(node))
    return False
