from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import file_uses_cuda
from torchlint.analysis.nodes import get_arg, is_literal_true, iter_nodes, last_name_part
from torchlint.analysis.tensor_facts import is_tensor_expression
from torchlint.rule import Rule
from torchlint.rules.devices.batches import DATALOADERS, moves_loader_batches_to_device


class DataloaderDefaults(Rule):
    """## What it does
    Flags, in a file that uses a GPU, a `DataLoader(...)` left at `num_workers=0`, or without
    `pin_memory` when the file moves its batches to the GPU with `non_blocking=True` copies.

    It does not flag loaders in tests and demos (tiny data, where workers only add start-up
    time), nor loaders over data workers cannot speed up or must not copy: a `range` or a
    tensor of indices, a list of tensors already in memory, a `TensorDataset`, toy datasets
    (`Random*`, `Boring*`, `Dummy*`, `Fake*`), an `IterableDataset` of the file (each worker
    would iterate a copy of its state), or a dataset whose `__getitem__` only indexes what it
    holds. Without
    `non_blocking=True` copies the transfer stays synchronous and pinning saves little, so
    `pin_memory` is then not asked for.

    This rule is in preview: on real code about half its findings are right (tutorials and
    small-model scripts that decode images in the training process); the rest are
    `pin_memory` alone on scripts whose steps take seconds, evaluation loops over data
    already in memory, or loaders read once per epoch, where the gain is too small to ask
    for. Whether loading is the bottleneck depends on the data and the model, which the
    code alone does not show.

    ## Why is this bad?
    With the default `num_workers=0` every batch is loaded and collated in the training
    process, between steps, while the GPU waits. Worker processes prepare the next batches
    in parallel. When batches go to the GPU, `pin_memory=True` has them collated into
    page-locked memory, which copies to the device faster and allows `non_blocking=True`
    transfers. Both defaults are conservative, not tuned: set them on purpose.

    ## Example
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device="cuda"):
        loader = DataLoader(dataset, batch_size=64, shuffle=True)
        for images, labels in loader:
            images = images.to(device)
            model(images)
    ```

    Use instead:
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device="cuda"):
        loader = DataLoader(dataset, batch_size=64, shuffle=True, num_workers=4,
                            pin_memory=True)
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            model(images)
    ```

    ## Fix safety
    No fix: a good worker count depends on the machine, and worker processes need a
    picklable dataset and an `if __name__ == "__main__":` guard on some platforms.
    """

    code = "TL307"
    name = "dataloader-defaults"
    triggers = ("DataLoader",)
    # DATALOADERS are torch.utils.data names: a torch import spelling the word DataLoader
    patterns = (r"\btorch\b", r"\bDataLoader\b")
    message = "DataLoader without {missing}: {why}"
    default = False
    preview = True

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self._moves_to_device: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in DATALOADERS:
            return
        if any(arg.star for arg in node.args) or self._test_or_demo_file():
            return
        if not file_uses_cuda(self.context):
            return  # training on the CPU: no GPU waits for the batches
        dataset = get_arg(node, "dataset", 0)
        if dataset is None or self._nothing_to_load(dataset.value, node):
            return
        missing = []
        if get_arg(node, "num_workers", 5) is None:
            missing.append("`num_workers`")
        if get_arg(node, "pin_memory", 7) is None and self._file_moves_batches() and (
                self._copies_asynchronously()):
            missing.append("`pin_memory`")
        if not missing:
            return
        reasons = {
            "`num_workers`": "batches are loaded in the training process while the GPU waits",
            "`pin_memory`": "batches sent to the GPU are copied from pageable memory",
        }
        self.report(node, missing=" and ".join(missing),
                    why="; ".join(reasons[m] for m in missing))

    def _file_moves_batches(self) -> bool:
        if self._moves_to_device is None:
            self._moves_to_device = moves_loader_batches_to_device(self.context)
        return self._moves_to_device

    def _copies_asynchronously(self) -> bool:
        """Pinned memory only pays off for ``non_blocking=True`` copies, which the file makes
        (without them the copy stays synchronous and pinning saves little)."""
        return self.context.cached("tl307_non_blocking", lambda: any(
            isinstance(n, cst.Arg) and n.keyword is not None and n.keyword.value ==
            "non_blocking" and is_literal_true(n.value) for n in iter_nodes(self.context.module)))

    def _test_or_demo_file(self) -> bool:
        """Unit tests and demo fixtures load tiny in-memory data: workers only add start-up
        time to tests of sampler or logging logic."""
        folders = self.context.path.replace("\\", "/").split("/")[:-1]
        return self.context.is_test_file or "demos" in folders

    def _nothing_to_load(self, dataset: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """A dataset workers cannot speed up, or must not copy: a range or a tensor of
        indices, a ``TensorDataset`` of tensors already in memory, a toy dataset
        (``RandomDataset``, ``BoringModel``'s), an ``IterableDataset`` of this file (workers
        would each iterate a copy of its state), or one whose ``__getitem__`` only indexes
        what it holds."""
        ctx = self.context
        if isinstance(dataset, cst.Name):
            bound = ctx.binding(dataset.value, at)
            if bound is not None and bound.kind == "assign" and bound.value is not None:
                dataset = bound.value
        if is_tensor_expression(ctx, dataset) or isinstance(
                dataset, (cst.List, cst.Tuple, cst.ListComp)):
            return True  # indices, or tensors already in memory
        if not isinstance(dataset, cst.Call):
            return False
        qual = ctx.qualified_name(dataset.func)
        if qual in ("builtins.range", "torch.utils.data.TensorDataset",
                    "torch.utils.data.dataset.TensorDataset"):
            return True
        name = last_name_part(dataset.func) or ""
        if name.startswith(("Random", "Boring", "Dummy", "Fake")):
            return True
        cls = _class_named(ctx.module, dataset.func)
        return cls is not None and (_is_iterable_dataset(ctx, cls) or _only_indexes(cls))


def _class_named(module: cst.Module, func: cst.BaseExpression) -> cst.ClassDef | None:
    if not isinstance(func, cst.Name):
        return None
    for stmt in module.body:
        if isinstance(stmt, cst.ClassDef) and stmt.name.value == func.value:
            return stmt
    return None


def _is_iterable_dataset(ctx: FileContext, cls: cst.ClassDef) -> bool:
    return any(ctx.qualified_name(base.value) in (
        "torch.utils.data.IterableDataset", "torch.utils.data.dataset.IterableDataset")
        for base in cls.bases)


def _only_indexes(cls: cst.ClassDef) -> bool:
    """``__getitem__`` makes no call at all (``return self.data[i], self.labels[i]``):
    nothing to decode or transform in a worker."""
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__getitem__":
            return not any(isinstance(n, cst.Call) for n in iter_nodes(stmt.body))
    return False
