from __future__ import annotations

import libcst as cst

from torchlint.diagnostic import Fix, NodeEdit
from torchlint.match_modules import is_torch_nn
from torchlint.matchers import get_arg, is_layer_call, reference
from torchlint.rule import Rule

_SEQUENCES = (cst.List, cst.Tuple, cst.ListComp, cst.GeneratorExp)


class NestedPlainListInContainer(Rule):
    """## What it does
    Flags a plain list or tuple of layers placed inside `nn.ModuleList([...])` or
    `nn.Sequential(...)`.

    ## Why is this bad?
    The containers register their direct entries only, and each entry must itself be a
    module. A plain list nested inside `nn.ModuleList` is rejected when the model is
    built (or, in a grid built step by step, its layers are never registered), and
    `nn.Sequential` refuses a list argument. Each inner group of layers has to be a
    container of its own (`nn.ModuleList`), or be unpacked into `nn.Sequential`.

    ## Example
    ```python
    import torch.nn as nn

    grid = nn.ModuleList([[nn.Linear(8, 8) for _ in range(3)] for _ in range(2)])
    pairs = nn.ModuleList([(nn.Conv2d(3, 3, 1), nn.ReLU()), (nn.Conv2d(3, 3, 1), nn.ReLU())])
    body = nn.Sequential([nn.Linear(8, 8), nn.ReLU()])
    ```

    Use instead:
    ```python
    import torch.nn as nn

    grid = nn.ModuleList([nn.ModuleList([nn.Linear(8, 8) for _ in range(3)]) for _ in range(2)])
    pairs = nn.ModuleList([nn.ModuleList((nn.Conv2d(3, 3, 1), nn.ReLU())),
                           nn.ModuleList((nn.Conv2d(3, 3, 1), nn.ReLU()))])
    body = nn.Sequential(*[nn.Linear(8, 8), nn.ReLU()])
    ```

    ## Fix safety
    Safe. Inside `nn.ModuleList`, each inner list or tuple is wrapped in `nn.ModuleList(...)`:
    indexing `outer[i][j]` and iteration keep working and every layer is registered.
    Inside `nn.Sequential`, a list passed as an argument is unpacked with `*` instead,
    since `nn.Sequential` calls its entries one after another and an `nn.ModuleList`
    entry cannot be called.
    """

    code = "TL103"
    name = "nested-plain-list-in-container"
    message = "plain {kind} of layers inside nn.{container}: its layers are not registered"
    fix_safety = "safe"

    def visit_Call(self, node: cst.Call) -> None:
        if is_torch_nn(self.context, node.func, "ModuleList"):
            arg = get_arg(node, "modules", 0)
            if arg is None:
                return
            outer = arg.value
            if isinstance(outer, (cst.List, cst.Tuple)):
                inner = [e.value for e in outer.elements if not isinstance(e, cst.StarredElement)]
            elif isinstance(outer, (cst.ListComp, cst.GeneratorExp)):
                inner = [outer.elt]
            else:
                return
            for element in inner:
                if self._holds_layers(element):
                    self._report(element, "ModuleList", self._wrap(element))
        elif is_torch_nn(self.context, node.func, "Sequential"):
            for arg in node.args:
                if arg.keyword is None and not arg.star and self._holds_layers(arg.value):
                    self._report(arg.value, "Sequential",
                                 Fix.safe(NodeEdit(arg.value, "*", "insert_before")))

    def _holds_layers(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(not isinstance(e, cst.StarredElement)
                       and is_layer_call(self.context, e.value) for e in node.elements)
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            return is_layer_call(self.context, node.elt)
        return False

    def _wrap(self, element: cst.BaseExpression) -> Fix | None:
        ref = reference(self.context, "torch.nn")
        if ref is None:
            return None
        spelling, need = ref
        return Fix.safe(NodeEdit(element, f"{spelling}.ModuleList(", "insert_before"),
                        NodeEdit(element, ")", "insert_after"),
                        imports=(need,) if need is not None else ())

    def _report(self, element: cst.BaseExpression, container: str, fix: Fix | None) -> None:
        kind = "tuple" if isinstance(element, cst.Tuple) else "list"
        self.report(element, fix=fix, kind=kind, container=container)
