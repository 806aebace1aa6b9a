from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere
from torchlint.analysis.nodes import dotted_name, iter_nodes, self_attribute
from torchlint.analysis.training_objects import (
    RANDOM_GENERATORS,
    LoaderSite,
    assigned_outside,
    call_argument,
    data_loaders,
    drawn_receivers,
    loader_datasets,
    loader_verdict,
    project_loader_workers,
    reseeding_kind,
    sample_methods,
    text,
)
from torchlint.engine.triage import calls, calls_under, check, defines
from torchlint.rule import Rule

# the first release whose workers reseed NumPy's global generator
_NUMPY_RESEEDED = (1, 9)
# numpy.random functions that do not draw
_NOT_DRAWS = frozenset({"seed", "get_state", "set_state", "SeedSequence", "PCG64", "MT19937",
                        "Philox", "SFC64", "BitGenerator"})


class RngStateCopiedToWorkers(Rule):
    """## What it does
    Flags a random generator object (`np.random.default_rng(...)`,
    `np.random.RandomState(...)`, `random.Random(...)`) created in a `Dataset` subclass's
    `__init__` as `self.X`, or at module level, and drawn from in `__getitem__`/`__iter__`
    (or a method they call), when the file's `DataLoader`s may use worker processes
    (`num_workers` above 0 or unknown) and none reseeds it through a `worker_init_fn`
    (one that only reseeds the global generators, never reaching the worker's dataset
    through `get_worker_info()`, does not count). The loaders built over the dataset
    decide when the file (or the project file that builds them) has any. For
    a torch target before 1.9 it also flags draws from NumPy's global state
    (`np.random.rand()`) in those methods.

    ## Why is this bad?
    Each `DataLoader` worker receives a copy of the dataset, generator state included.
    torch reseeds its own generator, Python's `random` module and NumPy's global state in
    every worker, but not a generator object the dataset holds: every worker draws the same
    "random" numbers, so the batches repeat the same crops, flips and noise once per
    worker and the augmentation the author asked for shrinks by the number of workers.

    ## Example
    ```python
    import numpy as np
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __init__(self, items):
            self.items = items
            self.rng = np.random.default_rng(0)

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            return self.items[i] + self.rng.normal()

    loader = DataLoader(Noisy(list(range(100))), num_workers=4)
    ```

    Use instead:
    ```python
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Noisy(Dataset):
        def __init__(self, items):
            self.items = items

        def __len__(self):
            return len(self.items)

        def __getitem__(self, i):
            rng = np.random.default_rng(torch.initial_seed() % 2**32 + i)
            return self.items[i] + rng.normal()

    loader = DataLoader(Noisy(list(range(100))), num_workers=4)
    ```

    ## Fix safety
    No fix: how to reseed (per worker in a `worker_init_fn`, or per sample) is the
    author's choice.
    """

    code = "TL903"
    name = "rng-state-copied-to-workers"
    message = ("'{generator}' is created once and copied into every DataLoader worker: all "
               "workers draw the same random numbers; reseed it per worker "
               "(worker_init_fn) or create it per sample")
    triggers = ("random",)
    patterns = (r"__getitem__|__iter__",)
    # a generator (or, before torch 1.9, a global NumPy draw) and a sample method
    requires = (calls_under("numpy.random.") | calls(*RANDOM_GENERATORS)) & defines(
        "__getitem__", "__getitems__", "__iter__", "__next__") & check(
        "torchlint.rules.data.screens:may_flag_tl903")

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        qualname = ctx.qualified_name(node.func)
        if qualname is not None and qualname.startswith("numpy.random.") and (
                qualname not in RANDOM_GENERATORS):
            self._global_draw(node, qualname)
            return
        if qualname not in RANDOM_GENERATORS:
            return
        target = self._target(node)
        function = ctx.current_function
        klass = ctx.enclosing_class() if function is not None else None
        if target is None or not self._workers_may_copy(
                klass.name.value if klass is not None else None):
            return
        if function is None:
            if not isinstance(target, cst.Name) or not self._module_generator_drawn(
                    target.value):
                return
        else:
            attribute = self_attribute(target)
            if function.name.value != "__init__" or klass is None or attribute is None or (
                    not ctx.is_dataset_class(klass)) or self._reseeds(klass) or (
                    assigned_outside(klass, attribute, "__init__")):
                return
            receiver = text(target)
            if self._seeded(klass, receiver) or not any(receiver in drawn_receivers(m) for m in sample_methods(ctx, klass)):
                return
        self.report(node, generator=text(target))

    def _global_draw(self, node: cst.Call, qualname: str) -> None:
        """Before torch 1.9 workers did not reseed NumPy's global state: a draw from it per
        sample repeats in every worker."""
        ctx = self.context
        target = ctx.options.target_torch
        function = ctx.current_function
        if target is None or tuple(target) >= _NUMPY_RESEEDED or function is None or (
                qualname.rsplit(".", 1)[1] in _NOT_DRAWS):
            return
        klass = ctx.enclosing_class()
        if klass is None or not ctx.is_dataset_class(klass) or self._reseeds(klass) or not any(
                m is function for m in sample_methods(ctx, klass)) or not (
                self._workers_may_copy(klass.name.value, objects=False)):
            return
        self.report(node, message=(
            f"'{ctx.code(node.func)}()' draws from NumPy's global state, which torch before "
            "1.9 copies unchanged into every DataLoader worker: all workers draw the same "
            "numbers; reseed NumPy in a worker_init_fn"))

    def _target(self, node: cst.Call) -> cst.BaseExpression | None:
        """What the generator is assigned to (``self.rng = ...``, ``rng = ...``)."""
        parent = self.context.parent(node)
        if isinstance(parent, (cst.IfExp, cst.BooleanOperation)):
            parent = self.context.parent(parent)
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1:
            return parent.targets[0].target
        if isinstance(parent, cst.AnnAssign):
            return parent.target
        return None

    @staticmethod
    def _seeded(klass: cst.ClassDef, receiver: str) -> bool:
        """The class reseeds the generator itself (``self.rng.seed(worker_seed)``)."""
        return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and (
            n.func.attr.value == "seed") and text(n.func.value) == receiver
            for n in iter_nodes(klass))

    @staticmethod
    def _reseeds(klass: cst.ClassDef) -> bool:
        """The class seeds per worker itself (``get_worker_info()``)."""
        return any(isinstance(n, (cst.Name, cst.Attribute)) and (
            dotted_name(n) or "").endswith("get_worker_info") for n in iter_nodes(klass))

    def _workers_may_copy(self, dataset: str | None = None, objects: bool = True) -> bool:
        """Some DataLoader over the dataset may use workers that nothing reseeds (for
        generator ``objects``: a ``worker_init_fn`` reaching the dataset; for the global
        state, any); when the file builds no loader, the project's files that construct
        ``dataset`` decide (no such file: the workers are unknown)."""
        ctx = self.context
        loaders = data_loaders(ctx)
        if not loaders:
            elsewhere = project_loader_workers(ctx, dataset, objects) if dataset else None
            return elsewhere in (None, "workers")
        # the loaders over this dataset decide when the file builds any; else all of them
        own = [s for s in loaders if dataset is not None and dataset in loader_datasets(ctx, s)]
        kinds = {self._kind(site) for site in own or loaders}
        return loader_verdict(kinds, objects) == "workers"

    def _kind(self, site: LoaderSite) -> str:
        workers = call_argument(site.call, "num_workers", 5)
        if workers is None or isinstance(workers, cst.Integer) and workers.evaluated_value == 0:
            return "main"
        init = call_argument(site.call, "worker_init_fn")
        return "workers" if init is None else reseeding_kind(self.context, init)

    def _module_generator_drawn(self, name: str) -> bool:
        """A module-level generator drawn from in a dataset class's sample methods."""
        ctx = self.context
        for klass in ctx.definitions():
            if isinstance(klass, cst.ClassDef) and ctx.is_dataset_class(klass) and not (
                    self._reseeds(klass)):
                if any(name in drawn_receivers(m) and not binds_anywhere(m.body, name)
                       for m in sample_methods(ctx, klass)):
                    return True
        return False
