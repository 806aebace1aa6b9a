from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import method_call, self_attribute
from torchlint.engine.triage import calls, defines
from torchlint.rule import Rule

_H5_FILE = frozenset({"h5py.File", "h5py._hl.files.File"})


class H5pyOpenedInDatasetInit(Rule):
    """## What it does
    Flags an `h5py.File(...)` handle (or a group/dataset read from it) stored on `self` in
    the `__init__` of a `torch.utils.data.Dataset` subclass.

    ## Why is this bad?
    With `num_workers > 0` the `DataLoader` sends the dataset object to its worker
    processes. An open HDF5 handle cannot be pickled, so spawning workers fails; with
    `fork` the children inherit the parent's handle, and concurrent reads through one
    HDF5 file state give corrupted data or crashes. Store the path in `__init__` and open
    the file lazily, once per worker, in `__getitem__` (or in a `worker_init_fn`).

    ## Example
    ```python
    import h5py
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path):
            self.file = h5py.File(path, "r")

        def __len__(self):
            return len(self.file["images"])

        def __getitem__(self, index):
            return self.file["images"][index]
    ```

    Use instead:
    ```python
    import h5py
    from torch.utils.data import Dataset


    class Frames(Dataset):
        def __init__(self, path):
            self.path = path
            self.file = None
            with h5py.File(path, "r") as handle:
                self.length = len(handle["images"])

        def __len__(self):
            return self.length

        def __getitem__(self, index):
            if self.file is None:
                self.file = h5py.File(self.path, "r")
            return self.file["images"][index]
    ```

    ## Fix safety
    No fix: opening lazily means restructuring `__init__`, `__len__` and `__getitem__`.
    """

    code = "TL901"
    name = "h5py-opened-in-dataset-init"
    triggers = ("h5py",)
    # h5py.File (`h5py` imported, `File` as a word); a Dataset/IterableDataset subclass; a
    # `def __init__` storing on `self`
    patterns = (r"\bh5py\b", r"\bFile\b", r"Dataset\b", r"\bdef[\s\\]+__init__\b",
                r"\bself\b")
    requires = calls(*_H5_FILE) & defines("__init__")
    message = ("h5py file handle stored on self in Dataset.__init__ cannot be shared with "
               "DataLoader workers; open it lazily in __getitem__")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if self_attribute(target.target):
                self._check(node.value)
            elif isinstance(target.target, (cst.Tuple, cst.List)) and isinstance(
                    node.value, (cst.Tuple, cst.List)) and len(target.target.elements) == len(
                    node.value.elements):
                # self.images, self.labels = f["images"], f["labels"]
                for element, value in zip(target.target.elements, node.value.elements):
                    if self_attribute(element.value) and not isinstance(
                            value, cst.StarredElement):
                        self._check(value.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and self_attribute(node.target):
            self._check(node.value)

    def _check(self, value: cst.BaseExpression) -> None:
        function = self.context.current_function
        if function is None or function.name.value != "__init__":
            return
        cls = self.context.enclosing_class(function)
        if cls is None or not self.context.is_dataset_class(cls):
            return
        for stored in _stored_values(value):
            self._check_one(stored)

    def _check_one(self, value: cst.BaseExpression) -> None:
        root = _handle_root(value)
        if root is None:
            return
        if isinstance(root, cst.Call):
            if self.context.call_name(root) in _H5_FILE:
                self.report(root)
            return
        bound = self.context.binding(root.value)
        if bound is not None and bound.kind == "assign" and bound.value is not None:
            origin = _handle_root(bound.value)
            if isinstance(origin, cst.Call) and self.context.call_name(origin) in _H5_FILE:
                self.report(value)


def _stored_values(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """What ends up on ``self``: both branches of ``a if c else b``, the elements of a
    list/tuple/dict literal or comprehension (``[h5py.File(p) for p in paths]``)."""
    if isinstance(node, cst.IfExp):
        return _stored_values(node.body) + _stored_values(node.orelse)
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return _stored_values(node.elt)
    if isinstance(node, cst.DictComp):
        return _stored_values(node.value)
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [v for e in node.elements if not isinstance(e, cst.StarredElement)
                for v in _stored_values(e.value)]
    if isinstance(node, cst.Dict):
        return [v for e in node.elements if isinstance(e, cst.DictElement)
                for v in _stored_values(e.value)]
    return [node]


def _handle_root(node: cst.BaseExpression) -> cst.Call | cst.Name | None:
    """The call or name under ``X["group"]["dataset"]`` / ``X.get("group")`` (keys only:
    slices read into memory)."""
    while True:
        if isinstance(node, cst.Subscript):
            if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
                return None
            key = node.slice[0].slice.value
            if isinstance(key, (cst.Integer, cst.Tuple, cst.Ellipsis, cst.UnaryOperation)):
                return None
            node = node.value
            continue
        attribute = method_call(node, "get")
        if attribute is not None and isinstance(node, cst.Call) and len(node.args) == 1 and (
                node.args[0].keyword is None and not node.args[0].star):
            node = attribute.value
            continue
        break
    if isinstance(node, (cst.Call, cst.Name)):
        return node
    return None
