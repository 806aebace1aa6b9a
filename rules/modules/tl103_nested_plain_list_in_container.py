from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg, iter_nodes, method_call, self_attribute
from torchlint.analysis.torch_facts import is_layer_call, is_torch_nn
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api, check, sequence_call
from torchlint.fix.edits import reference
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
    triggers = ("ModuleList", "Sequential")
    # both containers are resolved as torch.nn.X: `nn` is spelled in the import or the call,
    # and the container's own name as a whole word (an alias still imports it by name)
    patterns = (r"\bnn\b", r"\b(?:ModuleList|Sequential)\b")
    requires = api("torch.nn.ModuleList", "torch.nn.Sequential") & (
        sequence_call("torch.nn.Sequential") | sequence_call("torch.nn.ModuleList", nested=True)
        | sequence_call("append", "insert", "extend")) & check(
        "torchlint.rules.modules.screens:may_flag_tl103")
    message = "plain {kind} of layers inside nn.{container}: its layers are not registered"
    fix_safety = "safe"
    fix_title = "Register the inner layers in the container"

    def visit_Call(self, node: cst.Call) -> None:
        self._grown(node)
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

    def _grown(self, node: cst.Call) -> None:
        """``rows.append([...layers])`` / ``.insert(i, [...])`` / ``.extend([[...]])`` on an
        ``nn.ModuleList``."""
        attribute = method_call(node, "append", "insert", "extend")
        if attribute is None or any(a.star or a.keyword for a in node.args):
            return
        method = attribute.attr.value
        wanted = {"append": 1, "insert": 2, "extend": 1}[method]
        if len(node.args) != wanted:
            return
        value = node.args[-1].value
        if method != "extend":
            items = [value]
        elif isinstance(value, (cst.List, cst.Tuple)):
            items = [e.value for e in value.elements if not isinstance(e, cst.StarredElement)]
        elif isinstance(value, (cst.ListComp, cst.GeneratorExp)):
            items = [value.elt]
        else:
            return
        grown = [element for element in items if self._holds_layers(element)]
        # what the receiver is costs a scan of the class: only when layers are added
        if grown and self._is_module_list(attribute.value):
            for element in grown:
                self._report(element, "ModuleList", self._wrap(element))

    def _is_module_list(self, expr: cst.BaseExpression) -> bool:
        """A local name or ``self.X`` only ever bound to ``nn.ModuleList(...)``."""
        if isinstance(expr, cst.Name):
            bound = self.context.binding(expr.value)
            return bound is not None and bound.kind == "assign" and isinstance(
                bound.value, cst.Call) and is_torch_nn(self.context, bound.value.func, "ModuleList")
        attr = self_attribute(expr)
        cls = self.context.enclosing_class()
        if attr is None or cls is None:
            return False
        values = []
        for node in iter_nodes(cls.body):
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) \
                    else [node.target]
                if any(self_attribute(t) == attr for t in targets):
                    if not isinstance(node, cst.Assign) or len(targets) != 1:
                        return False
                    values.append(node.value)
        return bool(values) and all(
            isinstance(v, cst.Call) and is_torch_nn(self.context, v.func, "ModuleList")
            for v in values)

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
