from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.training_objects import (
    CHILD_ITERATION,
    class_methods,
    layer_attributes,
    read_elsewhere_in_project,
)
from torchlint.engine.triage import defines, module_method_calls
from torchlint.rule import Rule


class LayerNeverUsed(Rule):
    """## What it does
    Flags a layer assigned in a module class's `__init__` (`self.X = nn.Linear(...)`) that
    nothing reads, in a class that defines `forward`: no method of the class or any other code of the file uses `.X`, no
    string names it (`getattr(self, "X")`), the class does not reach its children another
    way (`self.children()`, `self.named_modules()`, `getattr(self, name)`), and no other
    file of the project reads an attribute of that name. A class with a base other than
    torch's is left alone: the base's methods may read what it sets (`self.layers`).

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
    # a module class whose __init__ stores something, and a forward somewhere
    requires = defines("forward") & module_method_calls("__init__")

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # what the walk sees, so the file is walked once: the attribute names read (not
        # assigned) and spelled as strings, the assignment targets, the classes being
        # walked (with whether each reaches its attributes other than by name), and the
        # layers of the finished candidate classes
        self._reads: set[str] = set()
        self._stored: set[int] = set()
        self._open: list[list[object]] = []
        self._candidates: list[tuple[str, cst.Assign]] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._open.append([node, False])

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        _, iterates = self._open.pop()
        ctx = self.context
        if iterates or not ctx.is_module_class(original_node) or (
                "forward" not in class_methods(original_node)):
            return  # a class without forward is a base or a container of its subclasses
        if any(not (ctx.qualified_name(base.value) or "").startswith("torch.")
               for base in original_node.bases):
            return  # a base of the project's may read what the class sets (self.layers)
        self._candidates += layer_attributes(ctx, original_node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._stored.update(id(t.target) for t in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._stored.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if id(node) not in self._stored:
            self._reads.add(node.attr.value)
        if self._open and node.attr.value in CHILD_ITERATION and isinstance(
                node.value, cst.Name) and node.value.value == "self":
            self._iterating()

    def visit_Call(self, node: cst.Call) -> None:
        if self._open and isinstance(node.func, cst.Name) and node.func.value in (
                "getattr", "vars", "setattr", "hasattr", "delattr"):
            self._iterating()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        raw = node.value  # an identifier in plain quotes: 'name', "name"
        if len(raw) > 2 and raw[0] == raw[-1] and raw[0] in "'\"" and raw[1:-1].isidentifier():
            self._reads.add(raw[1:-1])

    def _iterating(self) -> None:
        """The classes being walked reach their attributes other than by name
        (``self.children()``, ``getattr(self, name)``, ``vars(self)``)."""
        for entry in self._open:
            entry[1] = True

    def leave_Module(self, original_node: cst.Module) -> None:
        ctx = self.context
        for attribute, assignment in self._candidates:
            if attribute in self._reads or read_elsewhere_in_project(ctx, attribute):
                continue
            self.report(assignment.targets[0].target, attribute=attribute)
