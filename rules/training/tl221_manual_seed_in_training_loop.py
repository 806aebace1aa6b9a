from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import dotted_name, iter_nodes, iter_scope
from torchlint.analysis.torch_facts import is_backward_call, is_layer_call
from torchlint.engine.triage import calls, check, loops
from torchlint.rule import Rule
from torchlint.rules.training.steps import loop_binds

_SEEDING = frozenset({"torch.manual_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
                      "torch.random.manual_seed"})
# calls that give back the same value for the same arguments
_PURE_BUILTINS = frozenset({"builtins.int", "builtins.float", "builtins.str", "builtins.abs",
                            "builtins.hash", "builtins.len"})


class ManualSeedInTrainingLoop(Rule):
    """## What it does
    Flags `torch.manual_seed(s)` (also `torch.cuda.manual_seed`, `manual_seed_all`,
    `torch.random.manual_seed`) called in a loop whose body calls `.backward()`, when `s`
    is the same on every iteration: it uses no name the loops around the call bind (their
    targets, or names assigned in their bodies) and calls nothing that may vary. Not a
    seed derived from the loop variable (`seed + epoch`), not loops without a backward
    pass (sampling, evaluation), and not a loop that builds a fresh model or optimizer on
    each iteration (independent runs made comparable).

    ## Why is this bad?
    Re-seeding with the same value restarts the random number generator at the same point
    on every step: each iteration draws the same dropout masks, the same noise and the
    same random augmentations (and a shuffling loader the same order every epoch). The
    regularisation that randomness was meant to provide silently weakens, and the model
    sees a much smaller variety of inputs than intended. Seed once, before the loop.

    ## Example
    ```python
    import torch

    def train(model, loader, optimizer, loss_fn, seed):
        for x, y in loader:
            torch.manual_seed(seed)
            noisy = x + 0.1 * torch.randn_like(x)
            optimizer.zero_grad()
            loss_fn(model(noisy), y).backward()
            optimizer.step()
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, optimizer, loss_fn, seed):
        torch.manual_seed(seed)
        for x, y in loader:
            noisy = x + 0.1 * torch.randn_like(x)
            optimizer.zero_grad()
            loss_fn(model(noisy), y).backward()
            optimizer.step()
    ```

    ## Fix safety
    No fix: where the seeding belongs (before the loop, or derived from the step) is the
    author's decision.
    """

    code = "TL221"
    name = "manual-seed-in-training-loop"
    triggers = ("manual_seed",)
    patterns = ("backward",)
    requires = calls(*_SEEDING) & loops() & check(
        "torchlint.rules.training.step_screens:may_flag_tl221")
    message = "{call} re-seeds with the same value on every training iteration; seed once before the loop"

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if ctx.qualified_name(node.func) not in _SEEDING or not ctx.is_expression_statement(node):
            return
        if len(node.args) != 1 or node.args[0].star:
            return
        loops = ctx.loops()
        training = next((loop for loop in loops if self._trains(loop.body)), None)
        if training is None or self._fresh_run(training.body):
            return
        seed = node.args[0].value
        # a name any loop around the call binds may vary per iteration (`seed + epoch`)
        if not self._invariant(seed, loops):
            return
        self.report(node, call=f"{ctx.code(node.func).strip()}(...)")

    def _trains(self, body: cst.BaseSuite) -> bool:
        return any(is_backward_call(self.context, n) for n in iter_scope(body))

    def _fresh_run(self, body: cst.BaseSuite) -> bool:
        """Each iteration builds its own optimizer or model: a run of its own, and a shared
        seed makes the runs start alike on purpose (a sweep, a determinism check)."""
        for node in iter_scope(body):
            if not isinstance(node, cst.Call):
                continue
            qual = self.context.qualified_name(node.func) or ""
            if qual.startswith("torch.optim.") and not qual.startswith(
                    "torch.optim.lr_scheduler.") and qual.rsplit(".", 1)[1][:1].isupper():
                return True
            if is_layer_call(self.context, node):
                return True
        return False

    def _invariant(self, seed: cst.BaseExpression, loops: list[cst.For | cst.While]) -> bool:
        """The seed has the same value on every iteration: built from literals, names and
        attributes no loop rebinds, with arithmetic and pure builtins only (a call such as
        ``random.randint(...)`` gives a new seed each time)."""
        for node in iter_nodes(seed):
            if isinstance(node, cst.Call):
                if self.context.qualified_name(node.func) not in _PURE_BUILTINS:
                    return False
            elif isinstance(node, (cst.Lambda, cst.NamedExpr, cst.Await, cst.Yield)):
                return False
        for node in iter_nodes(seed):
            if isinstance(node, cst.Name) and any(loop_binds(loop, node.value) for loop in loops):
                return False
            if isinstance(node, cst.Attribute):
                dotted = dotted_name(node)
                if dotted is not None and any(_assigns_attribute(loop, dotted) for loop in loops):
                    return False
        return True


def _assigns_attribute(loop: cst.For | cst.While, dotted: str) -> bool:
    """``self.step += 1`` (or any binding of that attribute) in the loop's body."""
    for node in iter_scope(loop.body):
        targets: list[cst.BaseExpression] = []
        if isinstance(node, cst.Assign):
            targets = [t.target for t in node.targets]
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            targets = [node.target]
        for target in targets:
            for part in iter_nodes(target):
                if isinstance(part, cst.Attribute) and dotted_name(part) == dotted:
                    return True
    if isinstance(loop, cst.For):
        return any(isinstance(part, cst.Attribute) and dotted_name(part) == dotted
                   for part in iter_nodes(loop.target))
    return False
