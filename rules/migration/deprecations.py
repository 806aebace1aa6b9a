"""What the deprecated-API rules share: recognising a call of a deprecated torch API (through
imports, for the code's torch target), spelling its replacement the way the file spells
torch, rebuilding argument lists, removing an import a fix leaves unused, and recognising the
compatibility code that calls an old API on purpose.

The facts (which API, deprecated or removed when, replaced by what from when) are data in
:mod:`torchlint.analysis.torch_releases`; nothing here knows a version number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import ImportSite, ModuleIndex, called_use, index_for
from torchlint.analysis.nodes import dotted_name, iter_nodes
from torchlint.analysis.torch_releases import (
    ApiChange,
    Deprecation,
    Releases,
    earliest,
    fix_available,
    show,
)
from torchlint.diagnostic import Fix, ImportNeed, NodeEdit
from torchlint.fix.edits import (
    keeps_comments,
    removal_edit,
    torch_spelling,
    with_keywords,
)
from torchlint.rule import Rule

# ----------------------------------------------------------------- recognising the API


def releases(*deprecations: Deprecation, why: str) -> Releases:
    """A rule's ``applies_to``: from the oldest release in which one of its APIs is
    deprecated (or its replacement arrived); the engine does not run it for older targets."""
    return Releases(earliest(*deprecations), why=why)


def in_effect(ctx: FileContext, deprecation: Deprecation) -> bool:
    """Has the API been deprecated (or removed) in the release the code targets? An unknown
    target counts as the newest release."""
    return Releases(deprecation.since).includes(ctx.options.target_torch)


def deprecated_callee(ctx: FileContext, func: cst.BaseExpression,
                      table: Mapping[str, Deprecation], *,
                      through_variables: bool = False) -> Deprecation | None:
    """The deprecated API ``func`` names (resolved through imports), if it is in ``table``
    and in effect for the code's target; reached through a variable the file assigns only
    if ``through_variables``."""
    if not isinstance(func, (cst.Name, cst.Attribute)):
        return None  # x.f().g(): a method of some value, never the torch function
    deprecation = table.get(ctx.qualified_name(func) or "")
    if deprecation is None or not in_effect(ctx, deprecation):
        return None
    if not through_variables and _through_a_variable(ctx, func):
        return None
    return deprecation


def _through_a_variable(ctx: FileContext, func: cst.Name | cst.Attribute) -> bool:
    """Is the callee reached through a name the file assigns (``ACT = F.tanh`` then
    ``ACT(x)``)? The call then names a setting, not the API: the assignment is where the
    API is chosen, and rewriting the call would freeze the setting."""
    root: cst.BaseExpression = func
    while isinstance(root, cst.Attribute):
        root = root.value
    return isinstance(root, cst.Name) and root.value not in index_for(ctx).imports


def make_fix(ctx: FileContext, change: ApiChange, edits: Sequence[NodeEdit],
             imports: Iterable[ImportNeed | None] = (), *, safe: bool = True) -> Fix | None:
    """The fix made of ``edits``: none when it would emit an API newer than the code's
    target."""
    if not edits or not fix_available(change, ctx.options.target_torch):
        return None
    needs = tuple(dict.fromkeys(need for need in imports if need is not None))
    return Fix.safe(*edits, imports=needs) if safe else Fix.unsafe(*edits, imports=needs)


# ----------------------------------------------------------------- the rules' frame


@dataclass(frozen=True)
class Rewrite:
    """How a fix rewrites one deprecated call: into ``qualname(args)suffix``; ``args`` None
    keeps the arguments; ``change`` is the record of the API the new call needs (None: the
    deprecated API's own replacement)."""

    qualname: str
    args: Sequence[cst.Arg] | None = None
    change: ApiChange | None = None
    safe: bool = True
    suffix: str = ""


class DeprecatedCallRule(Rule):
    """A rule reporting each call of one of the APIs in ``apis`` (qualified name -> record)
    that is deprecated in the code's target release. The message may use ``{api}``,
    ``{replacement}``, ``{note}`` (`` (note)`` or empty), ``{removed}`` (`` (removed in
    torch X)`` or empty) and ``{removed_in}`` (``X``). A rule whose fix renames the call says how in :meth:`rewrite`."""

    apis: ClassVar[Mapping[str, Deprecation]] = {}
    # report calls through a variable bound to the API (``solve = torch.solve``)
    through_variables: ClassVar[bool] = False

    def visit_Call(self, node: cst.Call) -> None:
        deprecation = deprecated_callee(self.context, node.func, self.apis,
                                        through_variables=self.through_variables)
        if deprecation is None or not self.applies(node, deprecation):
            return
        self.report(node, fix=self.fix(node, deprecation), **self.values(deprecation))

    def values(self, deprecation: Deprecation) -> dict[str, str]:
        """What the message says of the API."""
        return message_values(deprecation)

    def applies(self, node: cst.Call, deprecation: Deprecation) -> bool:
        return True

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        """The new call for this one (None: no fix)."""
        return None

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        return self.rewrite_fix(node, deprecation)

    def rewrite_fix(self, node: cst.Call, deprecation: Deprecation,
                    bare: Callable[[cst.BaseExpression], bool] | None = None) -> Fix | None:
        """The fix :meth:`rewrite` describes, removing the import that reached the old name
        once every use of it is a call this rule rewrites (or a ``bare`` use it fixes)."""
        rewrite = self.rewrite(node, deprecation)
        if rewrite is None:
            return None
        made = renamed_call(self.context, node, rewrite.qualname, rewrite.args,
                            self.rewritable, rewrite.suffix, bare)
        if made is None:
            return None
        edits, need = made
        return make_fix(self.context, rewrite.change or deprecation.change, edits, (need,),
                        safe=rewrite.safe)

    def rewritable(self, call: cst.Call) -> bool:
        other = deprecated_callee(self.context, call.func, self.apis)
        return other is not None and self.rewrite(call, other) is not None


def message_values(deprecation: Deprecation) -> dict[str, str]:
    removed = deprecation.removed
    return {"api": deprecation.api, "replacement": deprecation.change.replacement or "",
            "note": f" ({deprecation.note})" if deprecation.note else "",
            "removed": f" (removed in torch {show(removed)})" if removed else "",
            "removed_in": show(removed) if removed else ""}


# ----------------------------------------------------------------- spelling the new name


def spell(ctx: FileContext, func: cst.BaseExpression, qualname: str
          ) -> tuple[str, ImportNeed | None] | None:
    """How to write ``qualname`` in place of the callee ``func``.

    A callee reached through a module that also holds the new name keeps that module's
    spelling (``F.upsample`` -> ``F.interpolate``, ``th.qr`` -> ``th.linalg.qr``);
    otherwise the file's own spelling of torch is used (``torch.func.vmap``), with the
    import to add when the file has none.
    """
    if isinstance(func, cst.Attribute):
        base = ctx.qualified_name(func.value)
        if base is not None and qualname.startswith(base + ".") and isinstance(
                func.value, (cst.Name, cst.Attribute)):
            return ctx.code(func.value) + qualname[len(base):], None
    return torch_spelling(ctx, func, qualname)


def imported_root(func: cst.BaseExpression) -> cst.Name | None:
    """The name a fix may leave unused: the callee itself (``qr`` after ``from torch import
    qr``) or the module it is reached through (``functorch`` in ``functorch.vmap``)."""
    if isinstance(func, cst.Name):
        return func
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
        return func.value
    return None


def unused_import_edits(ctx: FileContext, func: cst.BaseExpression, new_text: str,
                        fixable: Callable[[cst.Call], bool], at: cst.CSTNode,
                        bare: Callable[[cst.BaseExpression], bool] | None = None
                        ) -> tuple[NodeEdit, ...]:
    """The edits removing the import of the name ``func`` is reached through, once every
    use of that name is a call the same rule fixes (``fixable``), or an uncalled use it
    fixes (``bare``: the name or its attribute, ``amp.custom_fwd``), and the new spelling
    ``new_text`` does not use it. Every fix of one name carries the same edits, so they all
    apply together."""
    name = imported_root(func)
    if name is None or _root_word(new_text) == name.value:
        return ()
    index = index_for(ctx)
    site = index.import_site(name.value, at) or _plain_import_site(index, name.value)
    if site is None or not _all_fixed(index, site, fixable, bare):
        return ()
    if isinstance(site.statement, cst.Import) and _module_named_elsewhere(index, name.value):
        return ()  # ``from functorch import x`` still spells the module's name
    return removal_edit(index, site)


def _root_word(text: str) -> str:
    head = text.split("(", 1)[0].strip()
    return head.split(".", 1)[0].strip()


def _plain_import_site(index: ModuleIndex, name: str) -> ImportSite | None:
    """``import functorch`` (no alias, no dotted name) as the file's one module-level binding
    of ``name``, with every use of the name in the file."""
    sites = index.imports.get(name, [])
    if len(sites) != 1:
        return None
    line, statement, _ = sites[0]
    if line is None or not isinstance(statement, cst.Import) or index.function_of(statement):
        return None
    for alias in statement.names:
        if alias.asname is None and isinstance(alias.name, cst.Name) and (
                alias.name.value == name):
            return ImportSite(line, statement, alias, name, list(index.names.get(name, [])))
    return None


def _module_named_elsewhere(index: ModuleIndex, name: str) -> bool:
    for sites in index.imports.values():
        for _, statement, _ in sites:
            if isinstance(statement, cst.ImportFrom) and statement.module is not None and (
                    (dotted_name(statement.module) or "").split(".", 1)[0] == name):
                return True
    return False


def _all_fixed(index: ModuleIndex, site: ImportSite, fixable: Callable[[cst.Call], bool],
               bare: Callable[[cst.BaseExpression], bool] | None) -> bool:
    """Every use of the imported name is fixed away, and no fixed call holds another (their
    fixes would wait for separate passes)."""
    if not site.uses:
        return False
    calls = []
    for use in site.uses:
        call = called_use(index, use)
        if call is not None and fixable(call):
            calls.append(call)
            continue
        parent = index.parents.get(use)
        expression = parent if isinstance(parent, cst.Attribute) and parent.value is use \
            else use
        if bare is None or call is not None or not bare(expression):
            return False
    return not any(other is not call and index.inside(other, call)
                   for call in calls for other in calls)


def renamed_call(ctx: FileContext, node: cst.Call, qualname: str,
                 args: Sequence[cst.Arg] | None = None,
                 fixable: Callable[[cst.Call], bool] | None = None,
                 suffix: str = "", bare: Callable[[cst.BaseExpression], bool] | None = None
                 ) -> tuple[list[NodeEdit], ImportNeed | None] | None:
    """The edits turning ``node`` into a call of ``qualname`` with ``args`` (default: the
    same arguments), ``suffix`` appended (``.mH``), and the import to add. The import that
    reached the old name goes when ``fixable`` says every use of it is fixed likewise."""
    spelled = spell(ctx, node.func, qualname)
    if spelled is None or suffix and node.lpar:
        return None
    spelling, need = spelled
    changes: dict[str, object] = {"func": cst.parse_expression(spelling)}
    if args is not None:
        changes["args"] = tuple(args)
    text = ctx.code(node.with_changes(**changes)) + suffix
    if not keeps_comments(node, text):
        return None
    edits = [NodeEdit(node, text)]
    if fixable is not None:
        edits.extend(unused_import_edits(ctx, node.func, spelling, fixable, node, bare))
    return edits, need


# ----------------------------------------------------------------- arguments


def bind(call: cst.Call, positional: Sequence[str], keywords: Iterable[str] = ()
         ) -> dict[str, cst.Arg] | None:
    """The call's arguments by parameter name, for a signature whose positional-or-keyword
    parameters are ``positional`` and keyword-only ones ``keywords``; None for ``*args``,
    ``**kwargs``, an unknown keyword, too many positional arguments or a repeated one."""
    known = set(positional) | set(keywords)
    bound: dict[str, cst.Arg] = {}
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            if index >= len(positional):
                return None
            name = positional[index]
            index += 1
        else:
            name = arg.keyword.value
            if name not in known:
                return None
        if name in bound:
            return None
        bound[name] = arg
    return bound


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """``arg`` passed as ``name=value`` (its comma and spacing kept)."""
    return arg.with_changes(keyword=cst.Name(name), equal=_equal())


def as_positional(arg: cst.Arg) -> cst.Arg:
    return arg.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT)


def new_keyword(name: str, value: str | cst.BaseExpression) -> cst.Arg:
    expr = cst.parse_expression(value) if isinstance(value, str) else value
    return cst.Arg(expr, keyword=cst.Name(name), equal=_equal())


def _equal() -> cst.AssignEqual:
    return cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                           whitespace_after=cst.SimpleWhitespace(""))


def join_args(args: Sequence[cst.Arg], like: cst.Call,
              added: Sequence[tuple[str, str]] = ()) -> list[cst.Arg]:
    """``args`` with commas between them, then the keywords ``added`` (name, source).

    The separators of ``like`` stay in their places (so a call laid out one argument per
    line stays so), a new one is ``", "``; the last argument gets ``like``'s trailing comma
    if it had one, and added keywords follow ``like``'s layout."""
    if not args:
        return []
    trailing = like.args[-1].comma if like.args else cst.MaybeSentinel.DEFAULT
    closing = like.args[-1].whitespace_after_arg if like.args else cst.SimpleWhitespace("")
    out = []
    comma: cst.Comma | cst.MaybeSentinel | None
    for position, arg in enumerate(args):
        spacing = arg.whitespace_after_arg
        if position == len(args) - 1:
            comma = trailing if isinstance(trailing, cst.Comma) else cst.MaybeSentinel.DEFAULT
            spacing = closing
        else:
            # the separators stay where they were: the layout is kept by position
            comma = like.args[position].comma if position < len(like.args) - 1 else None
            if not isinstance(comma, cst.Comma):
                comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            if isinstance(spacing, cst.ParenthesizedWhitespace):
                spacing = cst.SimpleWhitespace("")
        out.append(arg.with_changes(comma=comma, whitespace_after_arg=spacing))
    if added:
        call = with_keywords(like.with_changes(args=out), *(
            (name, cst.parse_expression(value)) for name, value in added))
        return list(call.args)
    return out


# ----------------------------------------------------------------- literals


def int_literal(expr: cst.BaseExpression | None) -> int | None:
    """The value of an int literal, with an optional sign (``-1``)."""
    sign = 1
    while isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)):
        if isinstance(expr.operator, cst.Minus):
            sign = -sign
        expr = expr.expression
    if isinstance(expr, cst.Integer) and not expr.lpar:
        return sign * int(expr.evaluated_value)
    return None


def number_literal(expr: cst.BaseExpression | None) -> bool:
    """An int or float literal, with an optional sign."""
    while isinstance(expr, cst.UnaryOperation) and isinstance(
            expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def bool_literal(expr: cst.BaseExpression | None) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


def int_sequence(expr: cst.BaseExpression | None) -> list[int] | None:
    """The values of a tuple or list literal of int literals."""
    if not isinstance(expr, (cst.Tuple, cst.List)):
        return None
    values = []
    for element in expr.elements:
        if not isinstance(element, cst.Element):
            return None
        value = int_literal(element.value)
        if value is None:
            return None
        values.append(value)
    return values


# ----------------------------------------------------------------- compatibility code

_CATCHES_CALL_FAILURE = frozenset({"AttributeError", "RuntimeError", "Exception",
                                   "BaseException"})


def in_compatibility_guard(ctx: FileContext, torch_check: Callable[[str], bool]) -> bool:
    """The current node runs only where an old torch is expected, or its failure is caught:
    it is under an ``if`` (or conditional expression) whose test asks ``hasattr(M, ...)``
    of a module ``M`` that ``torch_check`` accepts, or in the body or a handler of a ``try``
    with a handler for ``AttributeError`` or ``RuntimeError`` (bare ``except`` and
    ``except Exception`` catch them too)."""
    ancestors = ctx.ancestors
    for position in range(len(ancestors) - 2, -1, -1):
        ancestor = ancestors[position]
        child = ancestors[position + 1]
        if isinstance(ancestor, (cst.If, cst.IfExp)) and child is not ancestor.test:
            if _asks_hasattr(ctx, ancestor.test, torch_check):
                return True
        elif isinstance(ancestor, cst.Try) and child is not ancestor.orelse and (
                child is not ancestor.finalbody) and any(
                _catches_call_failure(handler) for handler in ancestor.handlers):
            return True
    return False


def _asks_hasattr(ctx: FileContext, test: cst.BaseExpression,
                  torch_check: Callable[[str], bool]) -> bool:
    for node in iter_nodes(test):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and (
                ctx.lookup(node.func.value) == "builtins.hasattr") and node.args:
            owner = ctx.qualified_name(node.args[0].value)
            if owner is not None and torch_check(owner):
                return True
    return False


def _catches_call_failure(handler: cst.ExceptHandler) -> bool:
    kind = handler.type
    if kind is None:
        return True
    names = kind.elements if isinstance(kind, cst.Tuple) else [cst.Element(kind)]
    for element in names:
        value = element.value
        last = value.attr.value if isinstance(value, cst.Attribute) else (
            value.value if isinstance(value, cst.Name) else None)
        if last in _CATCHES_CALL_FAILURE:
            return True
    return False


def is_torch_module(qualname: str) -> bool:
    return qualname == "torch" or qualname.startswith("torch.")


# ----------------------------------------------------------------- parametrizations


def remove_parametrization_args(node: cst.Call) -> list[cst.Arg] | None:
    """``remove_weight_norm(m[, name])`` / ``remove_spectral_norm(m[, name])`` ->
    the arguments of ``remove_parametrizations(m, name)`` (``"weight"`` by default)."""
    args = bind(node, ("module", "name"))
    if args is None or "module" not in args:
        return None
    name = args.get("name")
    tensor_name = as_positional(name) if name is not None else cst.Arg(
        cst.SimpleString('"weight"'))
    return join_args([as_positional(args["module"]), tensor_name], node)



def parametrization_rewrite(node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
    """The old weight/spectral norm hooks: the parametrization of the same name with the
    same arguments, or ``remove_parametrizations(m, name)`` for the old ``remove_*``; unsafe
    (``state_dict`` keys change)."""
    replacement = deprecation.change.replacement
    if replacement is None:
        return None
    if replacement.endswith(".remove_parametrizations"):
        args = remove_parametrization_args(node)
        return None if args is None else Rewrite(replacement, args, safe=False)
    return Rewrite(replacement, safe=False)
