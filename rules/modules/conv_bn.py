"""A convolution followed by batch norm (TL106): the conv's dimension, the batch norm's,
and the fix that drops the conv's bias."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import get_arg, is_literal_true
from torchlint.analysis.torch_facts import layer_name
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import trailing_comma_layout, with_keywords


def conv_dimension(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """``2d`` for ``nn.Conv2d(...)``/``nn.ConvTranspose2d(...)``/``nn.LazyConv2d(...)``."""
    return _dimension(ctx, node, ("Conv", "ConvTranspose", "LazyConv", "LazyConvTranspose"))


def batchnorm_dimension(ctx: FileContext, node: cst.CSTNode) -> str | None:
    """``2d`` for ``nn.BatchNorm2d(...)``/``nn.LazyBatchNorm2d(...)``."""
    return _dimension(ctx, node, ("BatchNorm", "LazyBatchNorm"))


def _dimension(ctx: FileContext, node: cst.CSTNode, prefixes: tuple[str, ...]) -> str | None:
    """The ``1d``/``2d``/``3d`` suffix of a ``torch.nn`` layer named ``<prefix><dim>``."""
    leaf = layer_name(ctx, node)
    if leaf is None:
        return None
    for prefix in prefixes:
        rest = leaf[len(prefix):]
        if leaf.startswith(prefix) and rest in ("1d", "2d", "3d"):
            return rest
    return None


def conv_bias_fix(ctx: FileContext, conv: cst.Call) -> Fix | None | bool:
    """False when the conv surely has no bias or we cannot tell; else the fix (or None)."""
    if any(arg.star for arg in conv.args):
        return False
    qual = ctx.qualified_name(conv.func) or ""
    position = 6 if ".Lazy" in qual else 7

    arg = get_arg(conv, "bias", position)
    if arg is not None:
        if not is_literal_true(arg.value):
            return False
        return Fix.unsafe(NodeEdit(arg.value, "False"))
    if not conv.args:
        return None
    if trailing_comma_layout(conv) is not None:
        # one argument per line: bias=False gets a line of its own (needs ``ctx`` to be at
        # or inside the conv's enclosing blocks, for the indentation)
        return Fix.unsafe(NodeEdit(conv, ctx.code(with_keywords(conv, ("bias", cst.Name(
            "False"))))))
    return Fix.unsafe(NodeEdit(conv.args[-1].value, ", bias=False", "insert_after"))


def sequence_item(element: cst.BaseExpression) -> cst.BaseExpression:
    """The layer of an ``("name", layer)`` pair (``OrderedDict([...])`` style), else itself."""
    if isinstance(element, cst.Tuple) and len(element.elements) == 2 and isinstance(
        element.elements[0].value, (cst.SimpleString, cst.FormattedString)
    ):
        return element.elements[1].value
    return element
