from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg
from torchlint.rule import Rule
from torchlint.rules.devices.batches import DATALOADERS, moves_loader_batches_to_device


class DataloaderDefaults(Rule):
    """## What it does
    Flags a `DataLoader(...)` left at `num_workers=0`, or without `pin_memory` in a file that
    moves its batches to the GPU.

    ## Why is this bad?
    With the default `num_workers=0` every batch is loaded and collated in the training
    process, between steps, while the GPU waits. Worker processes prepare the next batches
    in parallel. When batches go to the GPU, `pin_memory=True` has them collated into
    page-locked memory, which copies to the device faster and allows `non_blocking=True`
    transfers. Both defaults are conservative, not tuned: set them on purpose.

    ## Example
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device):
        loader = DataLoader(dataset, batch_size=64, shuffle=True)
        for images, labels in loader:
            images = images.to(device)
            model(images)
    ```

    Use instead:
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device):
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

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self._moves_to_device: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in DATALOADERS:
            return
        if any(arg.star for arg in node.args):
            return
        missing = []
        if get_arg(node, "num_workers", 5) is None:
            missing.append("`num_workers`")
        if get_arg(node, "pin_memory", 7) is None and self._file_moves_batches():
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
