from __future__ import annotations

import libcst as cst

from torchlint.analysis.training_objects import (
    attribute_reads,
    class_methods,
    iterates_itself,
    layer_attributes,
    read_elsewhere_in_project,
)
from torchlint.rule import Rule


class LayerNeverUsed(Rule):
    """## What it does
    Flags a layer assigned in a module class's `__init__` (`self.X = nn.Linear(...)`) that
    nothing reads, in a class that defines `forward`: no method of the class or any other code of the file uses `.X`, no
    string names it (`getattr(self, "X")`), the class does not reach its children another
    way (`self.children()`, `self.named_modules()`, `getattr(self, name)`), and no other
    file of the project reads an attribute of that name.

    ## Why is this bad?
    The layer's parameters are allocated, initialised, saved in every checkpoint and handed
    to the optimizer, yet take no part in the output. Under `DistributedDataParallel` the
    first backward fails ("Expected to have finished reduction in the prior iteration…")
    unless `find_unused_parameters=True` slows every step. Most often the author forgot to
    call the layer in `forward`.

    ## Example
    ```python
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Linear(784, 128)
            self.dropout = nn.Dropout(0.5)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.features(x).relu())
    ```

    Use instead:
    ```python
    import torch.nn as nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Linear(784, 128)
            self.dropout = nn.Dropout(0.5)
            self.head = nn.Linear(128, 10)

        def forward(self, x):
            return self.head(self.dropout(self.features(x).relu()))
    ```

    ## Fix safety
    No fix: the layer may be missing from `forward` or be left over; only the author knows.
    """

    code = "TL109"
    name = "layer-never-used"
    preview = True
    message = ("layer 'self.{attribute}' is created but never used: its parameters are "
               "trained, saved and shipped for nothing, and DistributedDataParallel fails on "
               "them at the first backward")
    triggers = ("Module",)
    patterns = (r"def\s+__init__",)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        ctx = self.context
        if not ctx.is_module_class(node) or "forward" not in class_methods(node) or (
                iterates_itself(node)):
            return  # a class without forward is a base or a container of its subclasses
        reads = attribute_reads(ctx)
        for attribute, assignment in layer_attributes(ctx, node):
            if reads.get(attribute, 0) or read_elsewhere_in_project(ctx, attribute):
                continue
            self.report(assignment.targets[0].target, attribute=attribute)
