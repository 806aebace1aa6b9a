from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import is_literal_false, own_callee
from torchlint.analysis.training_objects import (
    DISTRIBUTED_SAMPLERS,
    LoaderSite,
    bound_call,
    call_argument,
    calls_in_loops,
    data_loaders,
    enclosing_functions,
    functions_reached,
    loop_functions,
    method_calls_named,
    names_in,
    nested_loop_iterations,
    text,
)
from torchlint.engine.triage import calls, check, loops
from torchlint.rule import Rule

# libraries that call set_epoch on the loaders they prepare
_MANAGING_LIBRARIES = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric",
                       "transformers", "composer", "ignite")


_EVALUATION_WORDS = frozenset({"val", "valid", "validation", "eval", "evaluation", "test",
                               "testing", "dev"})


def _evaluation(name: str | None) -> bool:
    """``sampler_val``, ``val_loader``, ``test_dl``, ``self.eval_loader``: a name that says
    the data is evaluated, not trained on."""
    if not name:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return not _EVALUATION_WORDS.isdisjoint(last.split("_"))


class DistributedSamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags a `torch.utils.data.DistributedSampler` that shuffles, passed to a `DataLoader`
    which the file iterates once per epoch (a loop over the loader inside an outer loop, or
    the loader passed to a function called in a loop), when no `set_epoch` call can reach
    it (`sampler.set_epoch(epoch)` or `loader.sampler.set_epoch(epoch)` in its function, or
    any `set_epoch` in a function its function calls; for a module-level sampler or an
    attribute, any `set_epoch` of the file). A sampler or loader named for evaluation
    (`sampler_val`, `test_loader`) is left alone: the order of an evaluation pass changes
    no result.

    ## Why is this bad?
    A `DistributedSampler` seeds its shuffle with `seed + epoch`, and the epoch only changes
    when `set_epoch` is called. Without it every epoch walks the data in the same order, on
    every rank: the shuffling the sampler was asked for happens once, the noise SGD relies
    on shrinks, and accuracy drops without any error or warning.

    ## Example
    ```python
    from torch.utils.data import DataLoader, DistributedSampler

    def train(dataset, model, step, epochs):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            for batch in loader:
                step(model, batch)
    ```

    Use instead:
    ```python
    from torch.utils.data import DataLoader, DistributedSampler

    def train(dataset, model, step, epochs):
        sampler = DistributedSampler(dataset)
        loader = DataLoader(dataset, batch_size=32, sampler=sampler)
        for epoch in range(epochs):
            sampler.set_epoch(epoch)
            for batch in loader:
                step(model, batch)
    ```

    ## Fix safety
    No fix: the call belongs at the start of the epoch loop, with the epoch number, which
    the rule cannot always name.
    """

    code = "TL802"
    name = "distributed-sampler-without-set-epoch"
    message = ("{sampler} is never given the epoch (set_epoch): every epoch shuffles the "
               "data in the same order on every rank")
    triggers = ("DistributedSampler",)
    patterns = (r"\bfor\b",)
    requires = calls(*DISTRIBUTED_SAMPLERS) & loops() & check(
        "torchlint.rules.parallel.screens:may_flag_tl802")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if ctx.qualified_name(node.func) not in DISTRIBUTED_SAMPLERS:
            return
        if is_literal_false(call_argument(node, "shuffle", 3)) or any(
                ctx.imports_from(lib) for lib in _MANAGING_LIBRARIES):
            return
        loader = self._loader(node)
        if loader is None or loader.target is None or not self._iterated_per_epoch(
                loader.target):
            return
        name = self._sampler_name(node)
        if _evaluation(name) or _evaluation(loader.target):
            return  # the order of an evaluation pass changes no result
        if self._epoch_set(name, loader.target):
            return
        sampler = f"'{name}'" if name else f"the DistributedSampler of '{loader.target}'"
        self.report(node, sampler=sampler)

    def _epoch_set(self, sampler: str | None, loader: str) -> bool:
        """Some ``set_epoch`` call may reach this sampler: one in its function on it (or on
        an object the rule cannot tell apart from it), one in a function its function
        calls (directly or through others), or any one when the sampler is module-level
        or an attribute (a script, a trainer object)."""
        ctx = self.context
        found = method_calls_named(ctx, "set_epoch")
        function = ctx.current_function
        if not found or function is None or any(
                n is not None and n.startswith("self.") for n in (sampler, loader)):
            return bool(found)
        owners = enclosing_functions(ctx)
        reached = functions_reached(ctx, function)
        for call in found:
            owner = owners.get(id(call))
            if owner is None or owner.name.value in reached:
                return True
            if owner is function and not self._another_sampler(call, sampler, loader):
                return True
        return False

    def _another_sampler(self, call: cst.Call, sampler: str | None, loader: str) -> bool:
        """``call`` sets the epoch of another sampler of the function: one bound to a
        ``DistributedSampler`` under another name, or another loader's ``.sampler``."""
        receiver = call.func.value if isinstance(call.func, cst.Attribute) else None
        if receiver is None:
            return False
        spelled = text(receiver)
        if spelled in (sampler, f"{loader}.sampler"):
            return False
        if spelled.endswith(".sampler"):
            return any(s.target == spelled[:-len(".sampler")]
                       for s in data_loaders(self.context))
        return bound_call(self.context, receiver, self.context.current_function) in (
            DISTRIBUTED_SAMPLERS)

    def _sampler_name(self, node: cst.Call) -> str | None:
        parent = self.context.parent(node)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(
                parent.targets[0].target, (cst.Name, cst.Attribute)):
            return text(parent.targets[0].target)
        return None

    def _loader(self, node: cst.Call) -> LoaderSite | None:
        """The one DataLoader of the file the sampler is given to (``sampler=``)."""
        name = self._sampler_name(node)
        function = self.context.current_function
        found = []
        for site in data_loaders(self.context):
            given = call_argument(site.call, "sampler", 3)
            if given is node or (name is not None and given is not None and text(given) == name
                                 and self._sees(site, name, function)):
                found.append(site)
        return found[0] if len(found) == 1 else None

    @staticmethod
    def _sees(site: LoaderSite, name: str, function: cst.FunctionDef | None) -> bool:
        """The loader's ``sampler=name`` may be this sampler: a loader of the same
        function, or the sampler is an attribute or module-level (seen everywhere)."""
        return name.startswith("self.") or function is None or site.scope is function

    def _iterated_per_epoch(self, loader: str) -> bool:
        """The loader is iterated in a loop inside another loop, or passed to a call made in
        a loop (``for epoch in ...: train_one_epoch(model, loader)``)."""
        ctx = self.context
        per_epoch = {own_callee(c.func) for c in calls_in_loops(ctx)} - {None}
        owners = loop_functions(ctx)
        function = ctx.current_function
        enclosing = enclosing_functions(ctx)

        def here(node: cst.CSTNode) -> bool:
            # a loader of this function is seen only there (another function's loader of
            # the same name is another object); an attribute or a module-level one anywhere
            return function is None or loader.startswith("self.") or (
                enclosing.get(id(node)) is function)

        for loop, nested in nested_loop_iterations(ctx):
            if loader in names_in(loop.iter) and (nested or owners.get(id(loop)) in per_epoch) \
                    and here(loop):
                return True  # an epoch loop around it, or in a function called per epoch
        for call in calls_in_loops(ctx):
            if here(call) and any(text(arg.value) == loader for arg in call.args):
                return True
        return False
