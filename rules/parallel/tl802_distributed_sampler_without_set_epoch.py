from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import is_literal_false, own_callee
from torchlint.analysis.training_objects import (
    DISTRIBUTED_SAMPLERS,
    LoaderSite,
    call_argument,
    calls_in_loops,
    data_loaders,
    loop_functions,
    method_calls_named,
    names_in,
    nested_loop_iterations,
    text,
)
from torchlint.engine.triage import calls, loops
from torchlint.rule import Rule

# libraries that call set_epoch on the loaders they prepare
_MANAGING_LIBRARIES = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric",
                       "transformers", "composer", "ignite")


class DistributedSamplerWithoutSetEpoch(Rule):
    """## What it does
    Flags a `torch.utils.data.DistributedSampler` that shuffles, passed to a `DataLoader`
    which the file iterates once per epoch (a loop over the loader inside an outer loop, or
    the loader passed to a function called in a loop), when the file never calls
    `set_epoch` (`sampler.set_epoch(epoch)` or `loader.sampler.set_epoch(epoch)`).

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
    requires = calls(*DISTRIBUTED_SAMPLERS) & loops()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if ctx.qualified_name(node.func) not in DISTRIBUTED_SAMPLERS:
            return
        if is_literal_false(call_argument(node, "shuffle", 3)) or method_calls_named(
                ctx, "set_epoch") or any(ctx.imports_from(lib) for lib in _MANAGING_LIBRARIES):
            return
        loader = self._loader(node)
        if loader is None or loader.target is None or not self._iterated_per_epoch(
                loader.target):
            return
        name = self._sampler_name(node)
        sampler = f"'{name}'" if name else f"the DistributedSampler of '{loader.target}'"
        self.report(node, sampler=sampler)

    def _sampler_name(self, node: cst.Call) -> str | None:
        parent = self.context.parent(node)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(
                parent.targets[0].target, (cst.Name, cst.Attribute)):
            return text(parent.targets[0].target)
        return None

    def _loader(self, node: cst.Call) -> LoaderSite | None:
        """The one DataLoader of the file the sampler is given to (``sampler=``)."""
        name = self._sampler_name(node)
        found = []
        for site in data_loaders(self.context):
            given = call_argument(site.call, "sampler", 3)
            if given is node or (name is not None and given is not None and text(given) == name):
                found.append(site)
        return found[0] if len(found) == 1 else None

    def _iterated_per_epoch(self, loader: str) -> bool:
        """The loader is iterated in a loop inside another loop, or passed to a call made in
        a loop (``for epoch in ...: train_one_epoch(model, loader)``)."""
        ctx = self.context
        per_epoch = {own_callee(c.func) for c in calls_in_loops(ctx)} - {None}
        owners = loop_functions(ctx)
        for loop, nested in nested_loop_iterations(ctx):
            if loader in names_in(loop.iter) and (nested or owners.get(id(loop)) in per_epoch):
                return True  # an epoch loop around it, or in a function called per epoch
        for call in calls_in_loops(ctx):
            for arg in call.args:
                if text(arg.value) == loader:
                    return True
        return False
