"""Which files a module writes with ``torch.save`` itself, shared by the loading rules.

A ``torch.load`` of a path this same file also saves to reads the program's own output
(a best model reloaded after training, a dataset's processed cache), not a checkpoint
from elsewhere: it holds no stranger's pickle, and its tensors come back where this
program put them.
"""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import get_arg, iter_nodes, semantic_children, string_value

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
_OPEN_FUNCTIONS = frozenset({"open", "io.open", "builtins.open", "gzip.open", "bz2.open",
                             "lzma.open"})


def path_key(expr: cst.BaseExpression, scope: cst.CSTNode | None = None) -> str:
    """The path an expression names, as comparable text: a string's value, otherwise the
    code with its whitespace and comments left out. A bare name counts only in its own
    function (``scope``): two functions' ``path`` parameters are different paths."""
    value = string_value(expr)
    if value is not None:
        return "s:" + value
    template = _template(expr)
    if template is not None:  # "ckpt_%d.pth" % epoch: one family of files, whatever the epoch
        return "t:" + template
    text = "".join(cst.Module([]).code_for_node(expr).split())
    if isinstance(expr, cst.Name):
        return f"n{id(scope)}:{text}"
    return "e:" + text


def _template(expr: cst.BaseExpression) -> str | None:
    """The naming template of a formatted path (``"g_%d.pth" % n``, ``"g_{}.pth".format(n)``,
    ``f"g_{n}.pth"``), with every placeholder written ``{}``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        left = string_value(expr.left)
        return None if left is None else re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", "{}", left)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "format":
        left = string_value(expr.func.value)
        return None if left is None else re.sub(r"\{[^{}]*\}", "{}", left)
    if isinstance(expr, cst.FormattedString):
        return "".join(part.value if isinstance(part, cst.FormattedStringText) else "{}"
                       for part in expr.parts)
    return None


def _saved_keys(ctx: FileContext) -> set[str]:
    """Path keys given to ``torch.save`` in the module, seeing through
    ``with open(path) as f``: one pass over the syntax nodes, each carrying its function
    and the file handles bound around it (name -> path key)."""
    saved: set[str] = set()
    Handles = dict[str, str]
    stack: list[tuple[cst.CSTNode, cst.FunctionDef | None, Handles]] = [(ctx.module, None, {})]
    while stack:
        node, scope, handles = stack.pop()
        if isinstance(node, cst.FunctionDef):
            scope = node
        elif isinstance(node, cst.With):
            handles = dict(handles)
            for item in node.items:
                opened = file_opened(ctx, item.item)
                if opened is not None and item.asname is not None and isinstance(
                        item.asname.name, cst.Name):
                    handles[item.asname.name.value] = path_key(opened, scope)
        elif isinstance(node, cst.Call) and ctx.qualified_name(node.func) in SAVE_FUNCTIONS:
            target = get_arg(node, "f", 1)
            if target is not None:
                expr = target.value
                if isinstance(expr, cst.Name) and expr.value in handles:
                    saved.add(handles[expr.value])
                else:
                    saved.add(path_key(expr, scope))
        stack.extend((child, scope, handles) for child in semantic_children(node))
    return saved


def file_opened(ctx: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The path of ``open(path, ...)``."""
    if not isinstance(expr, cst.Call):
        return None
    name = ctx.qualified_name(expr.func) or (
        expr.func.value if isinstance(expr.func, cst.Name) else None)
    if name not in _OPEN_FUNCTIONS:
        return None
    path = get_arg(expr, "file", 0)
    return path.value if path is not None else None


def saved_paths(ctx: FileContext) -> frozenset[str]:
    def compute() -> frozenset[str]:
        return frozenset(_saved_keys(ctx))
    return ctx.cached("torch-saved-paths", compute)


def loads_own_save(ctx: FileContext, load: cst.Call) -> bool:
    """Whether a ``torch.load`` call reads a path this file also writes with ``torch.save``
    (called while ``load`` is being visited, so enclosing ``with open(...)`` items are seen)."""
    source = get_arg(load, "f", 0)
    if source is None:
        return False
    saved = saved_paths(ctx)
    if not saved:
        return False
    expr = source.value
    scope = ctx.current_function
    if isinstance(expr, cst.Name):
        for anc in reversed(ctx.ancestors):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    opened = file_opened(ctx, item.item)
                    if (opened is not None and item.asname is not None
                            and isinstance(item.asname.name, cst.Name)
                            and item.asname.name.value == expr.value):
                        return path_key(opened, scope) in saved
        bound = ctx.binding(expr.value)  # ckpt = os.path.join(out, "ckpt.pt"); load(ckpt)
        if bound is not None and bound.kind == "assign" and bound.value is not None \
                and path_key(bound.value, scope) in saved:
            return True
    return path_key(expr, scope) in saved


_HOST_READS = frozenset({"numpy"})
_FROM_NUMPY = frozenset({"torch.from_numpy", "torch.as_tensor"})


def holds_numpy(ctx: FileContext, load: cst.Call) -> bool:
    """Whether what a ``torch.load`` call returns is NumPy data, not tensors:
    ``torch.load(f).numpy()``, or ``data = torch.load(f)`` read by
    ``torch.from_numpy(data[...])`` in the same scope. Such a file has no tensors to place
    on a device, and the weights-only unpickler would refuse its arrays."""
    parent = ctx.parent(load)
    if isinstance(parent, cst.Attribute) and parent.value is load:
        return parent.attr.value in _HOST_READS
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    scope: cst.CSTNode = ctx.current_function or ctx.module
    for call in iter_nodes(scope):
        if not isinstance(call, cst.Call):
            continue
        if ctx.qualified_name(call.func) not in _FROM_NUMPY or not call.args:
            continue
        value = call.args[0].value
        if isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Name) and value.value == name:
            return True
    return False
