"""Numerically weak spellings (TL503-TL505): the literal one, the input of a torch
function called on one tensor, and the fix that calls a more precise sibling function."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import get_arg
from torchlint.diagnostic import ImportNeed, NodeEdit
from torchlint.fix.edits import import_cleanup, sibling_reference


def is_one(expr: cst.BaseExpression) -> bool:
    """The literal ``1`` or ``1.0`` (also ``1.``, ``1.00``), parenthesised or not."""
    if type(expr) is cst.Integer:
        return expr.value == "1"
    return type(expr) is cst.Float and re.fullmatch(r"1\.0*", expr.value) is not None


def is_literal(expr: cst.BaseExpression) -> bool:
    """A number literal, signed or not."""
    if type(expr) is cst.UnaryOperation:
        expr = expr.expression
    return type(expr) in (cst.Integer, cst.Float, cst.Imaginary)


def torch_input(ctx: FileContext, call: cst.CSTNode, qualname: str) -> cst.Arg | None:
    """The input argument of ``call`` (positional or ``input=``) when it calls the torch
    function ``qualname`` with no other argument (``out=`` would not carry over)."""
    if type(call) is not cst.Call or len(call.args) != 1 or call.args[0].star:
        return None
    if ctx.qualified_name(call.func) != qualname:
        return None
    return get_arg(call, "input", 0)


def renamed_function(ctx: FileContext, func: cst.BaseExpression, old: str, new: str,
                     rewritten: Callable[[cst.Call], bool]
                     ) -> tuple[str, ImportNeed | None, tuple[NodeEdit, ...]] | None:
    """How to spell the torch function ``new`` where ``func`` spells ``old``
    (``torch.log`` -> ``torch.log1p``), the import line to add, and the edits removing
    ``from torch import <old>`` when every use of it is a call the fix rewrites (as
    ``rewritten`` tells, wherever the call stands in the file)."""
    spelled = sibling_reference(ctx, func, new)
    if spelled is None:
        return None
    text, need = spelled
    cleanup: tuple[NodeEdit, ...] = ()
    if type(func) is cst.Name and ctx.lookup(func.value) == old:
        cleanup = import_cleanup(index_for(ctx), func.value,
                                 rewritten, func)
    return text, need, cleanup
