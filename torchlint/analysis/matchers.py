"""Matching helpers shared by every rule. Rules never compare spellings themselves."""

# dotted_name (``self.bn1`` for an attribute chain of names) lives in context; re-exported here.

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.context import FileContext, dotted_name  # noqa: F401 - re-exported
from torchlint.diagnostic import ImportNeed

TENSOR_FACTORIES = frozenset(
    f"torch.{name}"
    for name in (
        "tensor", "zeros", "ones", "empty", "full", "eye", "rand", "randn", "randint",
        "randperm", "arange", "linspace", "logspace", "zeros_like", "ones_like", "empty_like",
        "full_like", "rand_like", "randn_like", "randint_like", "as_tensor", "range",
    )
)
# torch.nn names that are classes but not layers
NON_LAYER_CLASSES = frozenset({"Parameter", "ParameterList", "ParameterDict",
                               "UninitializedParameter", "UninitializedBuffer", "Buffer"})
LOSS_FUNCTIONS = frozenset(
    f"torch.nn.functional.{name}"
    for name in (
        "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
        "gaussian_nll_loss", "cosine_embedding_loss", "ctc_loss", "hinge_embedding_loss",
        "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
        "multilabel_soft_margin_loss", "soft_margin_loss", "triplet_margin_loss",
        "triplet_margin_with_distance_loss",
    )
)
CUDA_PREFIXES = ("cuda", "cpu", "mps", "xpu", "meta")


# ------------------------------------------------------------------ calls
def get_arg(call: cst.Call, keyword: str | None, position: int | None = None) -> cst.Arg | None:
    """The argument passed as ``keyword=`` or at ``position`` (stops at ``*args``)."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if keyword is not None and arg.keyword.value == keyword:
                return arg
            continue
        if arg.star:
            if position is not None and positional <= position:
                return None
            continue
        if position is not None and positional == position:
            return arg
        positional += 1
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def has_keyword(call: cst.Call, keyword: str) -> bool:
    return get_arg(call, keyword) is not None or any(arg.star == "**" for arg in call.args)


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def method_call(node: cst.CSTNode, *names: str) -> cst.Attribute | None:
    """For ``<obj>.name(...)`` with name in ``names``, the ``Attribute``; else None."""
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        if not names or node.func.attr.value in names:
            return node.func
    return None


def receiver(node: cst.CSTNode) -> cst.BaseExpression | None:
    """``obj`` in ``obj.method(...)``."""
    attribute = method_call(node)
    return attribute.value if attribute is not None else None


def is_literal_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def is_literal_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def string_value(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def last_name_part(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None


def self_attribute(node: cst.BaseExpression | None) -> str | None:
    """``X`` for ``self.X``."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and (
        node.value.value == "self"
    ):
        return node.attr.value
    return None


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=()).code_for_node(node)


# ------------------------------------------------------------- torch facts
def is_layer_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call constructing a ``torch.nn`` layer class, or a module class of this file."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        return is_layer_name(qual)
    return ctx.local_module_class(node.func) is not None


def is_layer_name(qual: str) -> bool:
    for prefix in ("torch.nn.", "torch.nn.parallel."):
        if qual.startswith(prefix):
            leaf = qual[len(prefix):]
            if "." not in leaf and leaf[:1].isupper() and leaf not in NON_LAYER_CLASSES:
                return True
    return False


def layer_name(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """``Conv2d`` for a ``nn.Conv2d(...)`` call (torch.nn classes only)."""
    if isinstance(node, cst.Call):
        qual = ctx.qualified_name(node.func)
        if qual is not None and is_layer_name(qual):
            return qual.rsplit(".", 1)[1]
    return None


def is_tensor_factory(ctx: FileContext, node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and ctx.qualified_name(node.func) in TENSOR_FACTORIES


def is_loss_call(ctx: FileContext, node: cst.CSTNode) -> bool:
    """A call of a loss: ``F.cross_entropy(...)``, ``nn.MSELoss()(...)``, or ``criterion(...)``.

    Calls of names bound to a ``torch.nn`` loss instance count too (``crit = nn.L1Loss()``),
    as do names spelling a loss (``criterion``, ``loss_fn``, ``*_loss``...).
    """
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    qual = ctx.qualified_name(func)
    if qual in LOSS_FUNCTIONS:
        return True
    if isinstance(func, cst.Call):  # nn.MSELoss()(a, b)
        inner = ctx.qualified_name(func.func)
        return inner is not None and is_loss_class(inner)
    name = last_name_part(func)
    if name is None or (qual is not None and qual.startswith("torch.")):
        return False
    lowered = name.lower()
    if lowered in ("criterion", "criterium", "loss_fn", "loss_func", "lossfn", "loss_function",
                   "compute_loss", "loss") or lowered.endswith(("_loss", "_criterion", "loss_fn")):
        return True
    if isinstance(func, cst.Name):
        bound = ctx.binding(func.value, node)
        if bound is not None and bound.kind == "assign" and isinstance(bound.value, cst.Call):
            inner = ctx.qualified_name(bound.value.func)
            return inner is not None and is_loss_class(inner)
    return False


def is_loss_class(qual: str) -> bool:
    return qual.startswith("torch.nn.") and qual.endswith("Loss") and qual.count(".") == 2


def is_device_like(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A device: 'cuda'/'cpu:0' strings, torch.device(...), or a name mentioning device/dev."""
    text = string_value(node)
    if text is not None:
        return text.startswith(CUDA_PREFIXES)
    if isinstance(node, cst.Call):
        return ctx.qualified_name(node.func) == "torch.device"
    name = last_name_part(node)
    if name is not None and isinstance(node, (cst.Name, cst.Attribute)):
        lowered = name.lower()
        return "device" in lowered or lowered == "dev" or lowered.startswith("dev_") or \
            lowered.endswith("_dev")
    return False


def is_dtype(ctx: FileContext, node: cst.BaseExpression) -> bool:
    qual = ctx.qualified_name(node)
    return qual is not None and qual.startswith("torch.") and qual.count(".") == 1 and (
        qual.split(".")[1] in DTYPE_NAMES)


DTYPE_NAMES = frozenset({
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8",
    "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64",
})


# ----------------------------------------------------------------- imports
def reference(ctx: FileContext, qualname: str) -> tuple[str, ImportNeed | None] | None:
    """How to spell ``qualname`` here, and the import line to add if the file lacks one.

    Uses the file's own alias when it has one (``nn``, ``tnn``, ``torch.nn``). Otherwise
    ``torch.nn``/``torch.nn.functional`` get ``from torch import nn`` or
    ``import torch.nn as nn`` (following the file's import style), and anything else is
    spelled in full with ``import torch``. None when the needed name is taken.
    """
    alias = ctx.alias_for(qualname)
    if alias is not None:
        return alias, None
    short = {"torch.nn": "nn", "torch.nn.functional": "F"}.get(qualname)
    if short is not None and ctx.is_free(short):
        module, _, leaf = qualname.rpartition(".")
        if _prefers_from_imports(ctx) and leaf == short:
            return short, ImportNeed(f"from {module} import {leaf}")
        return short, ImportNeed(f"import {qualname} as {short}")
    top = qualname.split(".", 1)[0]
    if ctx.lookup(top) == top:
        return qualname, None
    if ctx.is_free(top):
        return qualname, ImportNeed(f"import {top}")
    return None


def _prefers_from_imports(ctx: FileContext) -> bool:
    froms = imports = 0
    for stmt in ctx.module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.ImportFrom):
                    froms += 1
                elif isinstance(small, cst.Import):
                    imports += 1
    return froms > imports


def walk_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    from torchlint.analysis.nodes import iter_nodes

    for child in iter_nodes(node):
        if isinstance(child, cst.Call):
            yield child


def _inline_keywords(call: cst.Call, *pairs: tuple[str, cst.BaseExpression]) -> cst.Call:
    """``f(a)`` -> ``f(a, device="cuda")``: new keywords on the line of the last argument."""
    args = list(call.args)
    if args and args[-1].comma is cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    new_args = [
        cst.Arg(value=value, keyword=cst.Name(name),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                      whitespace_after=cst.SimpleWhitespace("")))
        for name, value in pairs
    ]
    for index in range(len(new_args) - 1):
        new_args[index] = new_args[index].with_changes(
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, *new_args])


def trailing_comma_layout(call: cst.Call) -> tuple[cst.Comma, cst.ParenthesizedWhitespace] | None:
    """For a call whose last argument ends with ``,`` and a line break: that comma and the
    whitespace that indents its argument lines (None for any other layout)."""
    if not call.args:
        return None
    comma = call.args[-1].comma
    if not isinstance(comma, cst.Comma) or not isinstance(
        comma.whitespace_after, cst.ParenthesizedWhitespace
    ):
        return None
    if len(call.args) > 1:
        before = call.args[-2].comma
        lead = before.whitespace_after if isinstance(before, cst.Comma) else None
    else:
        lead = call.whitespace_before_args
    if not isinstance(lead, cst.ParenthesizedWhitespace):
        return None
    return comma, lead


def with_keywords(call: cst.Call, *pairs: tuple[str, cst.BaseExpression]) -> cst.Call:
    """``call`` with ``name=value`` arguments added after the last one.

    In a call laid out one argument per line with a trailing comma, each new keyword
    goes on a line of its own (with its own trailing comma) above the closing bracket;
    a comment after the old last argument stays on that argument's line.
    """
    layout = trailing_comma_layout(call)
    if layout is None:
        last = call.args[-1] if call.args else None
        if last is not None and last.comma is cst.MaybeSentinel.DEFAULT and isinstance(
            last.whitespace_after_arg, cst.ParenthesizedWhitespace
        ):
            # ``f(\n    a, b\n)``: the line break before ``)`` follows the new last argument
            bare = call.with_changes(args=[*call.args[:-1], last.with_changes(
                whitespace_after_arg=cst.SimpleWhitespace(""))])
            new = _inline_keywords(bare, *pairs)
            return new.with_changes(args=[*new.args[:-1], new.args[-1].with_changes(
                whitespace_after_arg=last.whitespace_after_arg)])
        return _inline_keywords(call, *pairs)
    comma, lead = layout
    closing = comma.whitespace_after
    assert isinstance(closing, cst.ParenthesizedWhitespace)
    args = list(call.args)
    args[-1] = args[-1].with_changes(comma=comma.with_changes(
        whitespace_after=lead.with_changes(first_line=closing.first_line,
                                           empty_lines=closing.empty_lines)))
    line_break = lead.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    end = closing.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=())
    for index, (name, value) in enumerate(pairs):
        after = end if index == len(pairs) - 1 else line_break
        args.append(cst.Arg(
            value=value, keyword=cst.Name(name),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")),
            comma=cst.Comma(whitespace_after=after)))
    return call.with_changes(args=args)


def parse_expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)
