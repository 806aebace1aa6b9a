"""Matching helpers for the tensor-operation rules (layouts, squares, parameters, optimizers)."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.layer_table import (
    NON_CONTIGUOUS_ATTRIBUTES,
    NON_CONTIGUOUS_FUNCTIONS,
    NON_CONTIGUOUS_METHODS,
)
from torchlint.analysis.nodes import (
    code,
    get_arg,
    last_name_part,
    method_call,
    positional_args,
    string_value,
)
from torchlint.analysis.torch_facts import DTYPE_NAMES, TENSOR_FACTORIES, is_dtype


def non_contiguous_producer(ctx: FileContext, node: cst.BaseExpression) -> str | None:
    """``.permute()`` when ``node`` is ``<x>.permute(...)``, ``.T`` for ``<x>.T``,
    ``torch.transpose()`` for ``torch.transpose(x, ...)`` ...; else None."""
    if isinstance(node, cst.NamedExpr):
        node = node.value  # (y := x.permute(...)).view(...)
    attribute = method_call(node, *NON_CONTIGUOUS_METHODS)
    if attribute is not None:
        assert isinstance(node, cst.Call)
        qual = ctx.qualified_name(attribute)
        if qual is not None:
            if qual in NON_CONTIGUOUS_FUNCTIONS:
                if qual == "torch.narrow" and _narrows_outermost(get_arg(node, "dim", 1)):
                    return None
                return qual + "()"
            return None
        if _is_self(attribute.value):
            return None  # self.transpose(...): a method of this class, not a tensor's
        method = attribute.attr.value
        if method == "t" and node.args:
            return None  # .t() takes no arguments on a tensor
        if method in ("transpose", "permute", "swapaxes", "swapdims", "movedim", "moveaxis") \
                and not node.args:
            return None  # numpy's arr.transpose() (a tensor's needs the dimensions)
        if method == "narrow" and _narrows_outermost(get_arg(node, "dim", 0)):
            return None  # narrowing the outermost dimension keeps a contiguous layout
        return f".{method}()"
    if isinstance(node, cst.Attribute) and node.attr.value in NON_CONTIGUOUS_ATTRIBUTES:
        if ctx.qualified_name(node) is None and not _is_self(node.value):
            return f".{node.attr.value}"
    return None


def _narrows_outermost(dim: cst.Arg | None) -> bool:
    return dim is not None and isinstance(dim.value, cst.Integer) and dim.value.value == "0"


def _is_self(node: cst.BaseExpression) -> bool:
    """``self`` / ``cls``: ``self.T`` is an attribute of the object, not a transpose."""
    return isinstance(node, cst.Name) and node.value in ("self", "cls")


def is_dtype_like(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """``torch.float16``, ``np.int32``, ``x.dtype``, ``"float32"``: a dtype, not a shape."""
    if is_dtype(ctx, node):
        return True
    if isinstance(node, cst.SimpleString):
        return True
    name = last_name_part(node)
    if name is None or not isinstance(node, (cst.Name, cst.Attribute)):
        return False
    lowered = name.lower()
    if lowered in DTYPE_NAMES or lowered.endswith("dtype") or lowered.startswith("dtype"):
        return True
    qual = ctx.qualified_name(node)
    if qual is not None and not qual.startswith("builtins.") and not qual.startswith("torch."):
        return True  # numpy scalar types and other imported types
    return name[:1].isupper() and not name.isupper()  # a class such as np.ndarray


def square_base(ctx: FileContext, node: cst.BaseExpression) -> cst.BaseExpression | None:
    """``x`` when ``node`` squares it: ``x ** 2``, ``x.pow(2)``, ``torch.pow(x, 2)``,
    ``torch.square(x)``, ``x.square()``, ``x * x`` (same spelling both sides)."""
    if isinstance(node, cst.BinaryOperation):
        if isinstance(node.operator, cst.Power) and _is_two(node.right):
            return node.left
        if isinstance(node.operator, cst.Multiply):
            left, right = node.left, node.right
            if isinstance(left, (cst.Name, cst.Attribute, cst.Subscript)) and code(
                    _bare(left)) == code(_bare(right)):
                return left
        return None
    if not isinstance(node, cst.Call):
        return None
    attribute = method_call(node, "pow", "square")
    if attribute is not None and ctx.qualified_name(node.func) is None:
        if attribute.attr.value == "square" and not node.args:
            return attribute.value
        if attribute.attr.value == "pow" and len(node.args) == 1 and node.args[0].keyword is None \
                and not node.args[0].star and _is_two(node.args[0].value):
            return attribute.value
        return None
    qual = ctx.qualified_name(node.func)
    if qual == "torch.square" and len(node.args) == 1 and node.args[0].keyword is None:
        return node.args[0].value if not node.args[0].star else None
    if qual == "torch.pow":
        base = get_arg(node, "input", 0)
        exponent = get_arg(node, "exponent", 1)
        if base is not None and exponent is not None and _is_two(exponent.value) and len(
                node.args) == 2:
            return base.value
    return None


def _bare(node: cst.BaseExpression) -> cst.BaseExpression:
    return node.with_changes(lpar=[], rpar=[]) if node.lpar else node


def _is_two(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Integer):
        return node.evaluated_value == 2
    if isinstance(node, cst.Float):
        return node.evaluated_value == 2.0
    return False


def is_parameters_iter(node: cst.BaseExpression | None) -> str | None:
    """``parameters``/``named_parameters`` ... when ``node`` is ``M.parameters()`` and kin."""
    attribute = method_call(node, "parameters", "named_parameters") if node is not None else None
    if attribute is not None:
        return attribute.attr.value
    return None


def plus_terms(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The operands of a chain of ``+`` (``a + b + c`` -> [a, b, c]); [node] otherwise."""
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Add):
        return plus_terms(node.left) + plus_terms(node.right)
    return [node]


def sum_of_squares(ctx: FileContext, node: cst.BaseExpression
                   ) -> tuple[cst.BaseExpression, list[cst.Arg]] | None:
    """For ``(x**2).sum(...)`` / ``torch.sum(x**2, ...)``: ``x`` and the reduction's own
    arguments (dim, keepdim, dtype as written, positions normalised to keywords order)."""
    if not isinstance(node, cst.Call):
        return None
    attribute = method_call(node, "sum")
    if attribute is not None and ctx.qualified_name(node.func) is None:
        base = square_base(ctx, attribute.value)
        return (base, list(node.args)) if base is not None else None
    if ctx.qualified_name(node.func) == "torch.sum" and node.args:
        first = node.args[0]
        if first.keyword is not None and first.keyword.value != "input" or first.star:
            return None
        base = square_base(ctx, first.value)
        return (base, list(node.args[1:])) if base is not None else None
    return None


_PARAMETER_ITERATORS = frozenset({"parameters", "buffers"})
_NAMED_PARAMETER_ITERATORS = frozenset({"named_parameters", "named_buffers"})


def is_parameter_loop_target(ctx: FileContext, name: cst.Name) -> bool:
    """``p`` in ``for p in M.parameters()``, ``for n, p in M.named_parameters()``,
    ``for p in group["params"]`` (an optimizer's parameter group)."""
    bound = ctx.binding(name.value)
    if bound is None or bound.kind != "for" or not isinstance(bound.node, cst.For):
        return False
    target, iterable = bound.node.target, bound.value
    attribute = method_call(iterable) if iterable is not None else None
    method = attribute.attr.value if attribute is not None else None
    if isinstance(target, cst.Name):
        if method in _PARAMETER_ITERATORS:
            return True
        if isinstance(iterable, cst.Subscript) and len(iterable.slice) == 1 and isinstance(
                iterable.slice[0].slice, cst.Index):
            return string_value(iterable.slice[0].slice.value) == "params"
        return False
    if isinstance(target, (cst.Tuple, cst.List)) and method in _NAMED_PARAMETER_ITERATORS:
        elements = target.elements
        return len(elements) == 2 and isinstance(elements[1].value, cst.Name) and (
            elements[1].value.value == name.value)
    return False


# torch functions that always return a tensor (beyond the factories)
TENSOR_OPS = frozenset(
    f"torch.{name}"
    for name in (
        "from_numpy", "as_tensor", "asarray", "cat", "concat", "concatenate", "stack", "hstack",
        "vstack", "matmul", "mm", "bmm", "einsum", "exp", "log", "sigmoid", "tanh", "softmax",
        "log_softmax", "relu", "where", "clamp", "clip", "abs", "sqrt", "sum", "mean", "flatten",
        "reshape", "transpose", "permute", "squeeze", "unsqueeze", "cumsum", "normal",
        "bernoulli", "multinomial", "tril", "triu", "outer", "diag", "masked_fill", "gather",
        "index_select", "flip", "roll", "repeat_interleave", "clone", "empty_strided",
        "full_like", "tensor", "cdist", "argmax", "argmin", "bincount", "polar", "complex",
    )
) | TENSOR_FACTORIES


# tensor methods that return a tensor
TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "view", "reshape",
    "permute", "transpose", "contiguous", "clone", "detach", "unsqueeze", "squeeze", "flatten",
    "t", "expand", "expand_as", "repeat", "type_as", "view_as", "reshape_as", "abs", "exp",
    "sum", "mean", "softmax", "sigmoid", "pin_memory", "requires_grad_",
})


def is_tensor_expression(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A call known to produce a tensor: torch factory/op, F.* op, or a tensor method of one."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        if qual in TENSOR_OPS:
            return True
        return qual.startswith("torch.nn.functional.") and qual.count(".") == 3 and \
            not qual.endswith(("multi_head_attention_forward", "_with_indices"))
    attribute = method_call(node, *TENSOR_METHODS)
    if attribute is not None:
        return is_tensor_expression(ctx, attribute.value)
    return False


# The legacy constructors: ``torch.Tensor(3, 4)``, ``torch.cuda.LongTensor(n)`` make tensors
LEGACY_TENSOR_TYPES = frozenset(
    f"torch.{prefix}{kind}Tensor"
    for prefix in ("", "cuda.")
    for kind in ("", "Float", "Double", "Half", "BFloat16", "Byte", "Char", "Short", "Int",
                 "Long", "Bool")
) - {"torch.cuda.Tensor"}


def is_legacy_tensor_call(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """``torch.FloatTensor(...)`` / ``T.Tensor(3, 4)`` (through any alias, also a conditional
    one such as ``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``), or a
    tensor method of one: a call that makes a tensor with a legacy constructor."""
    if not isinstance(node, cst.Call):
        return False
    attribute = method_call(node, *TENSOR_METHODS)
    if attribute is not None and ctx.qualified_name(node.func) is None:
        return is_legacy_tensor_call(ctx, attribute.value)
    found = ctx.possible_qualified_names(node.func)
    return bool(found) and all(qual in LEGACY_TENSOR_TYPES for qual in found)


# numpy functions that always return an ndarray: no np.load (npz), reductions or scalars, and
# nothing that makes negative strides (np.flip) or read-only memory (np.frombuffer), which
# torch.from_numpy refuses or warns about
_NUMPY_ARRAY_FUNCTIONS = frozenset(
    f"numpy.{name}"
    for name in (
        "array", "asarray", "ascontiguousarray", "asfortranarray", "zeros", "ones", "empty",
        "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace",
        "logspace", "eye", "identity", "stack", "vstack", "hstack", "dstack", "concatenate",
        "column_stack", "fromfile", "loadtxt", "genfromtxt", "tile", "repeat", "expand_dims",
        "transpose", "pad", "tril", "triu", "outer", "diag", "copy", "argsort", "cumsum",
    )
)


# numpy.random functions that return an array only when given a shape
_NUMPY_RANDOM_SHAPED = frozenset({"rand", "randn"})


_NUMPY_RANDOM_SIZED = frozenset({"random", "uniform", "normal", "randint", "choice",
                                 "random_sample", "standard_normal", "binomial", "poisson",
                                 "beta", "gamma", "exponential", "permutation"})


_ARRAY_METHODS = frozenset({"astype", "reshape", "transpose", "copy", "squeeze", "flatten",
                            "ravel", "swapaxes"})


def is_numpy_array_expression(ctx: FileContext, node: cst.BaseExpression,
                              at: cst.CSTNode | None = None) -> bool:
    """A call that evidently returns a NumPy array (``np.zeros(3)``, ``np.array(x).astype(f)``).

    With ``at``, a method call on a name bound to an array before ``at`` counts too."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        if qual in _NUMPY_ARRAY_FUNCTIONS:
            return True
        if qual.startswith("numpy.random.") and qual.count(".") == 2:
            leaf = qual.rsplit(".", 1)[1]
            if leaf in _NUMPY_RANDOM_SHAPED:
                return bool(positional_args(node))
            if leaf == "permutation":
                return True
            if leaf in _NUMPY_RANDOM_SIZED:
                return get_arg(node, "size") is not None
        return False
    attribute = method_call(node, *_ARRAY_METHODS)
    if attribute is not None:
        if at is not None and isinstance(attribute.value, cst.Name):
            return is_numpy_array(ctx, attribute.value, at)
        return is_numpy_array_expression(ctx, attribute.value, at)
    return False


def is_numpy_array(ctx: FileContext, node: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """An expression that is a NumPy array: a numpy call, or a name bound to one before ``at``."""
    if isinstance(node, cst.Name):
        bound = ctx.binding(node.value, at)
        return bound is not None and bound.kind == "assign" and bound.value is not None and \
            is_numpy_array_expression(ctx, bound.value, bound.node)
    return is_numpy_array_expression(ctx, node, at)
