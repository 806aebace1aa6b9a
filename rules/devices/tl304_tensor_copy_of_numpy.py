from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import get_arg, iter_nodes, method_call, string_value
from torchlint.analysis.tensor_facts import is_numpy_array
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import reference
from torchlint.rule import Rule

_CONSTRUCTORS = {"torch.tensor": "torch.tensor", "torch.Tensor": "torch.Tensor"}


class TensorCopyOfNumpy(Rule):
    """## What it does
    Flags `torch.tensor(a)` and `torch.Tensor(a)` where `a` is evidently a NumPy array,
    which copies the whole array into a new tensor. It does not flag a conversion that casts
    anyway (`torch.Tensor(a)` makes float32, `torch.tensor(a).float()`) unless `a` is known
    to be float32 already: `from_numpy(a).float()` would copy just the same.

    This rule is in preview: on real code nearly all its findings were copies of small or
    one-off arrays (a notebook cell, a conversion script, a few values per step), where the
    copy costs nothing measurable; the copies that matter, per sample in a data pipeline,
    were too few to measure its precision on.

    ## Why is this bad?
    `torch.tensor` always copies its input. For a NumPy array `torch.from_numpy` builds a
    tensor over the same buffer without copying, which matters for large arrays loaded in a
    data pipeline. `torch.Tensor(a)` copies too and also casts everything to float32.

    ## Example
    ```python
    import numpy as np
    import torch

    def to_tensor(path):
        table = np.loadtxt(path, dtype=np.float32)
        return torch.tensor(table)
    ```

    Use instead:
    ```python
    import numpy as np
    import torch

    def to_tensor(path):
        table = np.loadtxt(path, dtype=np.float32)
        return torch.from_numpy(table)
    ```

    ## Fix safety
    Unsafe: `torch.from_numpy(a)` shares memory with `a`, so writing to either one now
    changes the other; code that modifies the array after the conversion would change the
    tensor too. `torch.Tensor(a)` becomes `torch.from_numpy(a).float()` to keep its float32
    result. No fix for a transposed or sliced array: `from_numpy` keeps its strides (a
    non-contiguous tensor, where `torch.tensor` made a contiguous one) and refuses negative
    ones.
    """

    code = "TL304"
    name = "tensor-copy-of-numpy"
    triggers = ("tensor", "Tensor")
    # torch.tensor / torch.Tensor resolve through a torch import, the array through numpy;
    # the constructor is called (`tensor(`, `Tensor )(`, `tensor  # c`) or imported `as` alias
    patterns = (r"\btorch\b", r"\bnumpy\b",
                r"\b(?:tensor|Tensor)(?:[\s\\)]*[(#]|[\s\\]+as\b)")
    message = "`{call}(...)` copies a NumPy array; `torch.from_numpy(...)` shares its memory"
    fix_safety = "unsafe"
    fix_title = "Use torch.from_numpy"
    preview = True

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual not in _CONSTRUCTORS:
            return
        if len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
            return
        array = node.args[0].value
        if not is_numpy_array(self.context, array, self.context.node):
            return
        if self._cast_anyway(node, qual, array):
            return
        fix = None
        spelled = reference(self.context, "torch.from_numpy")
        if spelled is not None and not self._maybe_strided(array):
            name, need = spelled
            edits = [NodeEdit(node.func, name)]
            if qual == "torch.Tensor":
                edits.append(NodeEdit(node, ".float()", kind="insert_after"))
            fix = Fix.unsafe(*edits, imports=(need,) if need else ())
        self.report(node, fix=fix, call=qual)

    def _cast_anyway(self, node: cst.Call, qual: str, array: cst.BaseExpression) -> bool:
        """``torch.Tensor(a)`` casts to float32 and ``torch.tensor(a).float()`` casts too: for
        an array not known to be float32 already, ``from_numpy(a).float()`` copies just the
        same, so nothing is saved."""
        cast = qual == "torch.Tensor" or self._cast_after(node)
        return cast and not _float32(self.context, self._defining(array))

    def _cast_after(self, node: cst.Call) -> bool:
        parent = self.context.parent(node)
        if not isinstance(parent, cst.Attribute) or parent.value is not node:
            return False
        return parent.attr.value in _CASTS or parent.attr.value == "to"

    def _defining(self, array: cst.BaseExpression) -> cst.BaseExpression:
        """The expression that made ``array`` (what a name was bound to)."""
        if isinstance(array, cst.Name):
            bound = self.context.binding(array.value, self.context.node)
            if bound is not None and bound.kind == "assign" and bound.value is not None:
                return bound.value
        return array

    def _maybe_strided(self, array: cst.BaseExpression) -> bool:
        """A transposed or sliced array: ``from_numpy`` keeps its strides, so the tensor would
        not be contiguous (``torch.tensor`` makes it so), and later views could fail."""
        for expr in {id(array): array, id(d := self._defining(array)): d}.values():
            for inner in iter_nodes(expr):
                if isinstance(inner, cst.Subscript):
                    return True
                if isinstance(inner, cst.Attribute) and inner.attr.value in _STRIDED:
                    return True
        return False


_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short", "bool",
                    "byte", "char", "type"})
# array methods and attributes that give a view with other strides
_STRIDED = frozenset({"transpose", "swapaxes", "T", "moveaxis", "rollaxis"})


def _float32(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``np.zeros(n, dtype=np.float32)``, ``a.astype("float32")``: an array known to hold
    float32 values."""
    if not isinstance(expr, cst.Call):
        return False
    attribute = method_call(expr, "astype")
    if attribute is not None:
        return bool(expr.args) and _is_float32(ctx, expr.args[0].value)
    dtype = get_arg(expr, "dtype")
    return dtype is not None and _is_float32(ctx, dtype.value)


def _is_float32(ctx: FileContext, node: cst.BaseExpression) -> bool:
    if string_value(node) in ("float32", "f4", "single"):
        return True
    qual = ctx.qualified_name(node)
    return qual in ("numpy.float32", "numpy.single", "torch.float32", "torch.float")
