"""Tensors made on the spot: where a fresh tensor provably lives and which dtype it provably
has, where a move or cast sends it, and whether a value provably carries no autograd graph.

"Fresh" means built by a factory call in the expression itself (``torch.randn(3, 4)``,
``torch.zeros(n, device="cuda")``), possibly scaled by a number (``torch.randn(3) * 0.02``)
or filled in place (``torch.empty(3).normal_()``). Anything else is unknown (``None``):
callers stay silent on unknowns.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import is_cuda_string
from torchlint.analysis.nodes import get_arg, iter_nodes, string_value
from torchlint.analysis.torch_facts import DTYPE_NAMES

# factories whose size arguments decide the shape: without ``device=`` the tensor is on the
# CPU (unless the file changes the default device)
_SIZED_FACTORIES = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "full", "eye", "rand", "randn", "randint", "randperm", "arange",
    "linspace", "logspace", "normal", "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor",
    "LongTensor", "IntTensor", "BoolTensor", "ByteTensor"))
# factories that make floating-point values of the default dtype when given no dtype=
_DEFAULT_FLOAT = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "eye", "rand", "randn", "linspace", "logspace", "Tensor"))
# the legacy typed constructors fix their dtype themselves
_TYPED = {"torch.FloatTensor": "float32", "torch.DoubleTensor": "float64",
          "torch.HalfTensor": "float16", "torch.LongTensor": "int64", "torch.IntTensor": "int32",
          "torch.BoolTensor": "bool", "torch.ByteTensor": "uint8"}
# torch.tensor of a literal: on the CPU; its dtype follows the literal
_FROM_DATA = frozenset({"torch.tensor", "torch.as_tensor"})
# in-place fills keep a tensor's device and dtype
_INPLACE_FILLS = frozenset({"normal_", "uniform_", "zero_", "fill_", "random_", "bernoulli_",
                            "exponential_", "geometric_", "cauchy_", "log_normal_"})
_VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})
# calls that change what the factories above make
_DEFAULT_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_dtype",
                              "torch.set_default_tensor_type"})
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "short": "int16", "cfloat": "complex64", "cdouble": "complex128"}
# ``x.half()``-style casts and the dtype each one gives
CAST_METHODS = {"float": "float32", "double": "float64", "half": "float16",
                "bfloat16": "bfloat16", "long": "int64", "int": "int32", "short": "int16",
                "bool": "bool", "byte": "uint8", "char": "int8"}


@dataclass(frozen=True)
class Placement:
    """Where a tensor lives (``"cpu"``, ``"cuda"``, ...) and its dtype (``"float32"``);
    ``None`` for what is not provable."""

    device: str | None
    dtype: str | None

    def differs_from(self, other: Placement) -> bool:
        """Provably not the same device, or provably not the same dtype."""
        return (self.device is not None and other.device is not None
                and self.device != other.device) or (
            self.dtype is not None and other.dtype is not None and self.dtype != other.dtype)


def dtype_name(ctx: FileContext, expr: cst.BaseExpression | None) -> str | None:
    """``"float16"`` for ``torch.float16``/``torch.half`` (through imports)."""
    if expr is None:
        return None
    qual = ctx.qualified_name(expr)
    if qual is None or not qual.startswith("torch.") or qual.count(".") != 1:
        return None
    leaf = qual.split(".")[1]
    return _ALIASES.get(leaf, leaf) if leaf in DTYPE_NAMES else None


def device_type(ctx: FileContext, expr: cst.BaseExpression | None) -> str | None:
    """``"cuda"`` for ``"cuda:1"`` or ``torch.device("cuda", 1)``, ``"cpu"`` for ``"cpu"``."""
    if expr is None:
        return None
    if isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) == "torch.device":
        first = get_arg(expr, "type", 0)
        expr = first.value if first is not None else expr
    if is_cuda_string(expr):
        return "cuda"
    text = string_value(expr)
    if text is not None and text.split(":")[0] in ("cpu", "mps", "xpu", "meta"):
        return text.split(":")[0]
    return None


def changes_defaults(ctx: FileContext) -> bool:
    """The file sets torch's default device or dtype: factories may make anything."""

    def compute() -> bool:
        return any(isinstance(node, cst.Call) and ctx.qualified_name(node.func)
                   in _DEFAULT_SETTERS for node in iter_nodes(ctx.module))

    return ctx.cached("fresh-tensors-change-defaults", compute)


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The tensor operand of ``t * 0.02``, ``-t``, ``t.normal_(0, 1)``; itself otherwise."""
    while True:
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            expr = expr.expression
        elif isinstance(expr, cst.BinaryOperation) and isinstance(
                expr.operator, (cst.Multiply, cst.Divide, cst.Add, cst.Subtract)):
            if isinstance(expr.right, (cst.Integer, cst.Float)):
                expr = expr.left
            elif isinstance(expr.left, (cst.Integer, cst.Float)) and not isinstance(
                    expr.operator, cst.Divide):
                expr = expr.right
            else:
                return expr
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and (
                expr.func.attr.value in _INPLACE_FILLS):
            expr = expr.func.value
        else:
            return expr


def fresh_placement(ctx: FileContext, expr: cst.BaseExpression) -> Placement | None:
    """Where the fresh tensor ``expr`` makes lives and its dtype, or None when ``expr`` is
    not a fresh tensor (or the file changes torch's defaults)."""
    expr = _bare(expr)
    if not isinstance(expr, cst.Call):
        return None
    qual = ctx.qualified_name(expr.func)
    if qual not in _SIZED_FACTORIES and qual not in _FROM_DATA:
        if not isinstance(expr.func, cst.Attribute):
            return None
        source = fresh_placement(ctx, expr.func.value)  # a move or cast of a fresh tensor
        target = cast_target(ctx, expr)
        if source is None or target is None:
            return None
        return Placement(target.device or source.device, target.dtype or source.dtype)
    if changes_defaults(ctx):
        return None
    if qual in _FROM_DATA:
        data = get_arg(expr, "data", 0)
        if data is None or not isinstance(data.value, (cst.List, cst.Tuple, cst.Integer,
                                                       cst.Float)):
            return None  # a tensor given as data keeps its own device
    device_arg = get_arg(expr, "device")
    device = "cpu" if device_arg is None else device_type(ctx, device_arg.value)
    dtype_arg = get_arg(expr, "dtype")
    if dtype_arg is not None:
        dtype = dtype_name(ctx, dtype_arg.value)
    elif qual in _FROM_DATA:
        dtype = _literal_dtype(data.value)  # type: ignore[union-attr]
    else:
        dtype = _TYPED.get(qual or "") or ("float32" if qual in _DEFAULT_FLOAT else None)
    return Placement(device, dtype)


def _literal_dtype(data: cst.BaseExpression) -> str | None:
    """The dtype ``torch.tensor`` infers from a literal of numbers: float32 when any element
    is a float, int64 when all are integers; None for anything else."""
    kinds: set[type] = set()
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, cst.UnaryOperation) and isinstance(item.operator, cst.Minus):
            item = item.expression
        if isinstance(item, (cst.List, cst.Tuple)):
            stack.extend(element.value for element in item.elements)
        elif isinstance(item, (cst.Integer, cst.Float)):
            kinds.add(type(item))
        else:
            return None
    if cst.Float in kinds:
        return "float32"
    return "int64" if kinds else None


def cast_target(ctx: FileContext, call: cst.Call) -> Placement | None:
    """Where a move or cast method call sends a tensor: ``.cuda()`` -> cuda, ``.half()`` ->
    float16, ``.to("cuda", torch.float16)`` -> both; None for a call that is no move or
    cast, or whose target is not provable (``.to(device)``, ``.to(other)``)."""
    if not isinstance(call.func, cst.Attribute):
        return None
    method = call.func.attr.value
    if method in CAST_METHODS and not call.args:
        return Placement(None, CAST_METHODS[method])
    if method in ("cuda", "cpu"):
        return Placement(method, None)
    if method != "to":
        return None
    device = dtype = None
    device_arg, dtype_arg = get_arg(call, "device"), get_arg(call, "dtype")
    if device_arg is not None:
        device = device_type(ctx, device_arg.value)
    if dtype_arg is not None:
        dtype = dtype_name(ctx, dtype_arg.value)
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            dtype = dtype or dtype_name(ctx, arg.value)
            device = device or device_type(ctx, arg.value)
    if device is None and dtype is None:
        return None
    return Placement(device, dtype)


def carries_no_graph(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``expr`` provably has no autograd history and does not require grad, and is a
    tensor no other name refers to: a literal, a fresh factory call without
    ``requires_grad=``, ``torch.from_numpy(...)``, ``x.detach()``, ``Variable(x)``, and
    moves, casts and number arithmetic of those."""
    expr = _bare(expr)
    if isinstance(expr, (cst.Integer, cst.Float, cst.List, cst.Tuple)):
        return True
    if not isinstance(expr, cst.Call):
        return False
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "detach" \
            and not expr.args:
        return True  # a new tensor, cut from any graph
    qual = ctx.qualified_name(expr.func)
    if qual == "torch.from_numpy":
        return True
    if qual in _VARIABLE:  # Variable(x) is x.detach(), unless it asks for a new leaf
        flag = get_arg(expr, "requires_grad", 1)
        return flag is None or isinstance(flag.value, cst.Name) and flag.value.value == "False"
    if qual not in _SIZED_FACTORIES and qual not in _FROM_DATA:
        return isinstance(expr.func, cst.Attribute) and cast_target(ctx, expr) is not None \
            and carries_no_graph(ctx, expr.func.value)
    if get_arg(expr, "requires_grad") is not None:
        return False
    if qual in _FROM_DATA:
        data = get_arg(expr, "data", 0)
        # torch.tensor copies (and detaches) whatever it is given; as_tensor may alias it
        return data is not None and (qual == "torch.tensor" or carries_no_graph(ctx, data.value))
    return True
