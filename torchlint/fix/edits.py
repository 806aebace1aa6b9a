"""Helpers for writing fixes: adding keyword arguments in the call's own layout, spelling a
name the way the file imports it (and the import line to add), removing an import a fix
leaves unused, and keeping every comment."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import ImportSite, ModuleIndex, called_use
from torchlint.analysis.nodes import code
from torchlint.diagnostic import ImportNeed, NodeEdit


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


def with_first_argument(call: cst.Call, value: cst.BaseExpression,
                        keyword: str | None = None) -> cst.Call:
    """``call`` with ``value`` (``keyword=value`` when a keyword is given) put before its
    first argument; in a call laid out one argument per line it gets a line of its own."""
    spacing: cst.BaseParenthesizableWhitespace = cst.SimpleWhitespace(" ")
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        spacing = cst.ParenthesizedWhitespace(
            first_line=cst.TrailingWhitespace(), indent=True,
            last_line=call.whitespace_before_args.last_line)
    argument = cst.Arg(value, comma=cst.Comma(whitespace_after=spacing) if call.args
                       else cst.MaybeSentinel.DEFAULT)
    if keyword is not None:
        argument = argument.with_changes(
            keyword=cst.Name(keyword),
            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                  whitespace_after=cst.SimpleWhitespace("")))
    return call.with_changes(args=[argument, *call.args])


def parse_expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


# Expressions that never need parentheses when they replace an atom (a call).
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
          cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Ellipsis)


# Parents in which any expression may stand without parentheses.
_OPEN_PARENTS = (cst.Arg, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr,
                 cst.Element, cst.DictElement, cst.WithItem, cst.AssignTarget)


def import_cleanup(index: ModuleIndex, name: str, fixable: Callable[[cst.Call], bool],
                   at: cst.CSTNode | None = None) -> tuple[NodeEdit, ...]:
    """The edits removing ``from M import name`` (or ``import M as name``) once every use
    is a call fixed away.

    Every fix of one name carries these same edits, so they all apply together in one pass.
    Empty (keep the import) unless each use is a fixable call and none sits inside another.
    """
    site = index.import_site(name, at)
    if site is None or not site.uses:
        return ()
    calls = []
    for use in site.uses:
        call = called_use(index, use)
        if call is None or not fixable(call):
            return ()
        calls.append(call)
    for call in calls:
        if any(other is not call and index.inside(other, call) for other in calls):
            return ()
    return removal_edit(index, site)


def _joined_comma(before: cst.Comma | cst.MaybeSentinel, removed: cst.Comma | cst.MaybeSentinel
                  ) -> cst.Comma | cst.MaybeSentinel:
    """The comma after the new last name of a parenthesised import when the old last name
    goes: it keeps its own comment and takes the line break before ``)`` of the removed one."""
    if not isinstance(removed, cst.Comma):
        return cst.MaybeSentinel.DEFAULT if not isinstance(before, cst.Comma) or not isinstance(
            before.whitespace_after, cst.ParenthesizedWhitespace) else before
    if isinstance(before, cst.Comma) and isinstance(before.whitespace_after,
                                                    cst.ParenthesizedWhitespace) and isinstance(
            removed.whitespace_after, cst.ParenthesizedWhitespace):
        return removed.with_changes(whitespace_after=removed.whitespace_after.with_changes(
            first_line=before.whitespace_after.first_line))
    return removed


def removal_edit(index: ModuleIndex, site: ImportSite) -> tuple[NodeEdit, ...]:
    """Edits taking ``site``'s name out of its import statement (the whole line when it was
    the only name); comments that would go with it move to a line of their own above."""
    statement = site.statement
    names = statement.names
    assert not isinstance(names, cst.ImportStar)
    parenthesised = getattr(statement, "lpar", None) is not None
    remaining = [alias for alias in names if alias is not site.alias]
    if remaining:
        last = remaining[-1]
        if not parenthesised and not isinstance(last.comma, cst.MaybeSentinel):
            remaining[-1] = last.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif parenthesised and remaining[-1] is not names[-1]:
            remaining[-1] = last.with_changes(comma=_joined_comma(last.comma, names[-1].comma))
        new = code(statement.with_changes(names=remaining))
        edits = [NodeEdit(statement, new)]
        lost = _lost_comments(code(statement), new)
    else:
        if len(site.line.body) != 1:
            return ()
        block = index.parents.get(site.line)
        comment = site.line.trailing_whitespace.comment
        lost = _lost_comments(code(statement), "")
        if isinstance(block, cst.IndentedBlock) and len(block.body) == 1:
            edits = [NodeEdit(statement, "pass")]
        elif not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return ()
        else:
            edits = [NodeEdit(site.line, kind="delete_line")]
            if comment is not None:
                lost.append(comment.value)
    if lost:
        edits.insert(0, NodeEdit(site.line, "\n".join(lost), kind="insert_line_before"))
    return tuple(edits)


def _lost_comments(old: str, new: str) -> list[str]:
    after = comments_in(new)
    lost = []
    for comment in comments_in(old):
        if comment in after:
            after.remove(comment)
        else:
            lost.append(comment)
    return lost


def comments_in(text: str) -> list[str]:
    try:
        return sorted(tok.string.rstrip() for tok in tokenize.generate_tokens(
            io.StringIO("(" + text + "\n)").readline) if tok.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return ["<untokenizable>"]


def keeps_comments(old: cst.CSTNode, new_text: str) -> bool:
    """The replacement text holds every comment of the node it replaces."""
    before = comments_in(code(old))
    if not before:
        return True
    after = comments_in(new_text)
    return all(after.count(c) >= before.count(c) for c in set(before))


def as_atom(expr: cst.BaseExpression, parent: cst.CSTNode | None) -> str:
    """Source of ``expr`` fit to stand where a call stood (parenthesised when needed)."""
    text = code(expr)
    if isinstance(expr, _ATOMS) or expr.lpar or isinstance(parent, _OPEN_PARENTS):
        return text
    if isinstance(expr, cst.Tuple) and expr.lpar:
        return text
    return f"({text})"


def receiver_text(expr: cst.BaseExpression) -> str:
    """Source of ``expr`` fit to have ``.method()`` appended."""
    text = code(expr)
    if isinstance(expr, _ATOMS) and not isinstance(expr, (cst.Integer, cst.Float)) or expr.lpar:
        return text
    return f"({text})"


def torch_spelling(ctx: FileContext, func: cst.BaseExpression, qualname: str
                   ) -> tuple[str, ImportNeed | None] | None:
    """Spell ``qualname`` (``torch.…``) the way ``func`` spells torch (``T.float32`` after
    ``T.FloatTensor``), else as :func:`torchlint.matchers.reference` would."""

    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if root is not func and isinstance(root, cst.Name) and ctx.lookup(root.value) == "torch":
        return root.value + qualname[len("torch"):], None
    return reference(ctx, qualname)


def sibling_reference(ctx: FileContext, func: cst.BaseExpression, qualname: str
                      ) -> tuple[str, ImportNeed | None] | None:
    """How to spell ``qualname`` in place of ``func``, a reference to a function of the
    same module (or to a tensor method): ``F.log_softmax`` for ``F.softmax``,
    ``x.log_softmax`` for ``x.softmax``, ``torch.log1p`` for ``torch.log``. A from-imported
    name (``from torch import log``) becomes the new name, imported the same way unless
    the file already has it; spelled as :func:`reference` would when that name is taken.
    The import line to add comes with it."""
    module, _, leaf = qualname.rpartition(".")
    if isinstance(func, cst.Attribute):
        return ctx.code(func.with_changes(attr=cst.Name(leaf))), None
    if not isinstance(func, cst.Name):
        return None
    if ctx.lookup(leaf) == qualname:
        return leaf, None
    if ctx.is_free(leaf):
        return leaf, ImportNeed(f"from {module} import {leaf}")
    return reference(ctx, qualname)
