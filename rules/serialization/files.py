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
from torchlint.analysis.nodes import get_arg, string_value

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


class _FileUses(cst.CSTVisitor):
    """Paths given to ``torch.save`` in one module, seeing through ``with open(path) as f``."""

    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.saved: set[str] = set()
        # names bound by enclosing ``with open(...) as name`` items: name -> path keys
        self.handles: list[dict[str, str]] = []
        self.functions: list[cst.FunctionDef] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.functions.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.functions.pop()

    @property
    def scope(self) -> cst.FunctionDef | None:
        return self.functions[-1] if self.functions else None

    def visit_With(self, node: cst.With) -> None:
        bound: dict[str, str] = {}
        for item in node.items:
            opened = file_opened(self.ctx, item.item)
            if opened is not None and item.asname is not None and isinstance(
                    item.asname.name, cst.Name):
                bound[item.asname.name.value] = path_key(opened, self.scope)
        self.handles.append(bound)

    def leave_With(self, original_node: cst.With) -> None:
        self.handles.pop()

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualified_name(node.func) not in SAVE_FUNCTIONS:
            return
        target = get_arg(node, "f", 1)
        if target is not None:
            self.saved.add(self.key(target.value))

    def key(self, expr: cst.BaseExpression) -> str:
        if isinstance(expr, cst.Name):
            for bound in reversed(self.handles):
                if expr.value in bound:
                    return bound[expr.value]
        return path_key(expr, self.scope)


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
        uses = _FileUses(ctx)
        ctx.module.visit(uses)
        return frozenset(uses.saved)
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
    return path_key(expr, scope) in saved
