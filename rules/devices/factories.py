"""Tensor factories and what happens to their result before a move (TL301): which factories
can fill memory on a device, which draw random numbers, the conversions that may sit
between a factory and its move, and whether the random stream is seeded on purpose."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    get_arg,
    has_keyword,
    iter_nodes,
    iter_scope,
    last_name_part,
    method_call,
)
from torchlint.analysis.torch_facts import is_dtype

# Factories that allocate and fill memory where `device=` says. Not `torch.tensor` or
# `torch.as_tensor` of Python data: those build the tensor on the host and copy it to the
# device even when given `device=`, so moving them afterwards costs nothing more.
_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                     "randint_like"})
DEVICE_FACTORIES = frozenset(
    f"torch.{name}" for name in (
        "zeros", "ones", "empty", "full", "eye", "arange", "range", "linspace", "logspace",
        "zeros_like", "ones_like", "empty_like", "full_like", *_RANDOM,
    )
)
RANDOM_FACTORIES = frozenset(f"torch.{name}" for name in _RANDOM)
# In-place methods that draw from the generator of the tensor's device.
_RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_",
                           "cauchy_", "log_normal_", "geometric_"})
# Tensor methods whose result is the same (values, dtype, shape, strides) whether they run
# on the host before a move or on the device after it.
_DTYPE_CASTS = frozenset({"float", "double", "half", "bfloat16", "long", "int", "short",
                          "bool", "byte", "char", "cfloat", "cdouble"})
_SAME_ON_ANY_DEVICE = _DTYPE_CASTS | frozenset({
    "view", "reshape", "view_as", "reshape_as", "unsqueeze", "squeeze", "flatten",
    "unflatten", "permute", "transpose", "t", "contiguous", "clone", "detach", "repeat",
    "fill_", "zero_", "tril", "triu", "neg", "abs",
})
# Methods that may sit between the factory and the move, but whose result a move would
# change (a move copies an expanded tensor into a dense one): reported without a fix.
_REPORT_ONLY = frozenset({"expand", "expand_as"})


@dataclass(frozen=True)
class FactoryChain:
    """``torch.zeros(n).long().view(1, n)`` before a move: the factory call, the methods
    applied to its result (innermost first), whether moving ``device=`` into the factory
    keeps the result exactly, and whether the values are random draws."""

    factory: cst.Call
    methods: tuple[cst.Call, ...]
    exact: bool
    random: bool
    leaf: str  # the factory's name: ``zeros``, ``randn_like``


def factory_chain(ctx: FileContext, expr: cst.BaseExpression) -> FactoryChain | None:
    """The device factory ``expr`` is built from through conversions, if any."""
    methods: list[cst.Call] = []
    exact = True
    random = False
    while True:
        if isinstance(expr, cst.Call):
            qual = ctx.qualified_name(expr.func)
            if qual is not None:
                if qual not in DEVICE_FACTORIES:
                    return None
                leaf = qual.rsplit(".", 1)[1]
                methods.reverse()
                return FactoryChain(expr, tuple(methods), exact,
                                    random or qual in RANDOM_FACTORIES, leaf)
        attribute = method_call(expr)
        if attribute is None or attribute.value is None:
            return None
        assert isinstance(expr, cst.Call)
        name = attribute.attr.value
        if name in _RANDOM_FILLS:
            if has_keyword(expr, "generator"):
                return None
            random = True
        elif name in _REPORT_ONLY:
            exact = False
        elif name in ("to", "type"):
            if not _dtype_only(ctx, expr):
                return None
        elif name not in _SAME_ON_ANY_DEVICE:
            return None
        if any(arg.star for arg in expr.args):
            return None
        methods.append(expr)
        expr = attribute.value


def _dtype_only(ctx: FileContext, call: cst.Call) -> bool:
    """``.to(torch.long)`` / ``.type(torch.float16)``: a cast that does not move."""
    if len(call.args) != 1:
        return False
    arg = call.args[0]
    if arg.star or (arg.keyword is not None and arg.keyword.value != "dtype"):
        return False
    return is_dtype(ctx, arg.value)


def like_source(factory: cst.Call) -> cst.BaseExpression | None:
    """``src`` in ``torch.zeros_like(src)``."""
    arg = get_arg(factory, "input", 0)
    return arg.value if arg is not None else None


def on_host(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``expr`` is known to be a host tensor: a torch constructor or factory without
    ``device=`` (``torch.tensor(v)``, ``torch.zeros(n)``, ``torch.from_numpy(a)``), or a name
    bound to one before ``at`` in the same scope."""
    if isinstance(expr, cst.Name):
        bound = ctx.binding(expr.value, at)
        if bound is None or bound.kind != "assign" or bound.value is None:
            return False
        expr = bound.value
    if not isinstance(expr, cst.Call) or has_keyword(expr, "device"):
        return False
    qual = ctx.qualified_name(expr.func)
    if qual in ("torch.tensor", "torch.as_tensor", "torch.from_numpy"):
        return True
    if qual in DEVICE_FACTORIES and not qual.endswith("_like"):
        return True
    return False


def draws_with_generator(factory: cst.Call) -> bool:
    """``torch.randn(..., generator=g)``: the draw comes from that generator's device."""
    return has_keyword(factory, "generator")


def _calls_a_seed(ctx: FileContext, node: cst.CSTNode, *, enter_scopes: bool) -> bool:
    """A call of ``torch.manual_seed``, ``np.random.seed``, ``seed_everything``,
    ``set_seed``... (any callee named for a seed) inside ``node``."""
    nodes = iter_nodes(node) if enter_scopes else iter_scope(node)
    for inner in nodes:
        if type(inner) is cst.Call:
            name = last_name_part(inner.func)  # type: ignore[attr-defined]
            if name is not None and "seed" in name.lower() and not _seeds_own_generator(
                    ctx, inner):
                return True
    return False


def _seeds_own_generator(ctx: FileContext, call: cst.Call) -> bool:
    """``torch.Generator(device=d).manual_seed(0)``: seeds that generator only, not the
    stream the factories draw from."""
    func = call.func
    return isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and (
        ctx.qualified_name(func.value.func) == "torch.Generator")


def seeded(ctx: FileContext) -> bool:
    """Is the random stream seeded where the current node runs? A seed call in the current
    function, in its class (``setUp``, a class-level ``torch.manual_seed(0)`` generator), or
    at module level (a seeded script): then the values drawn are expected to be the same
    on every run, and drawing them on another device's generator changes them."""
    if ctx.cached("module_seeded",
                  lambda: _calls_a_seed(ctx, ctx.module, enter_scopes=False)):
        return True
    function = ctx.current_function
    if function is not None and ctx.cached(
            ("function_seeded", id(function)),
            lambda: _calls_a_seed(ctx, function, enter_scopes=True)):
        return True
    for anc in ctx.ancestors:
        if isinstance(anc, cst.ClassDef) and ctx.cached(
                ("class_seeded", id(anc)), lambda: _calls_a_seed(ctx, anc, enter_scopes=True)):
            return True
    return False


def in_dead_branch(ctx: FileContext) -> bool:
    """The current node sits under ``if x is not None:`` (or ``if x:``) where ``x`` was just
    set to ``None``: a branch that cannot run as written (a setting left off)."""
    ancestors = ctx.ancestors
    for i in range(len(ancestors) - 2, 0, -1):
        block, child = ancestors[i], ancestors[i + 1]
        if isinstance(block, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if not isinstance(block, cst.If) or child is not block.body:
            continue
        name = _tested_name(block.test)
        if name is None:
            continue
        bound = ctx.binding(name, block)
        if bound is not None and bound.kind == "assign" and isinstance(
                bound.value, cst.Name) and bound.value.value == "None":
            return True
    return False


def _tested_name(test: cst.BaseExpression) -> str | None:
    """``x`` for ``if x is not None`` and ``if x``."""
    if isinstance(test, cst.Name):
        return test.value
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        if isinstance(test.left, cst.Name) and isinstance(target.operator, cst.IsNot) and (
                isinstance(target.comparator, cst.Name) and target.comparator.value == "None"):
            return test.left.value
    return None
