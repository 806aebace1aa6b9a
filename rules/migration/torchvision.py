"""torchvision names for the migration rules: which builder a call reaches (TL719), and how
to spell a name a fix needs (a weights enum, the ``transforms.v2`` module) the way the file
already imports torchvision, adding it to the from-import that brought the builder in."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import import_bindings, index_for
from torchlint.analysis.nodes import code, dotted_name
from torchlint.analysis.torchvision_weights import (
    ALIASES,
    ENUM_MODULES,
    PRETRAINED,
    SHADOWED_MODULES,
)
from torchlint.diagnostic import ImportNeed, NodeEdit


def builder_of(ctx: FileContext, func: cst.BaseExpression) -> str | None:
    """The canonical path of the torchvision model builder ``func`` calls, or None.

    ``A.alexnet`` where ``A`` is ``torchvision.models.alexnet`` is not a builder: that name
    is the builder function itself, which has no attribute ``alexnet``.
    """
    qual = ctx.qualified_name(func)
    if qual is None or not qual.startswith("torchvision.models."):
        return None
    if isinstance(func, cst.Attribute) and ctx.qualified_name(func.value) in SHADOWED_MODULES:
        return None
    return qual if qual in PRETRAINED else ALIASES.get(qual)


@dataclass
class Spelling:
    """How a fix writes a name: the text, plus the edits and the import line it needs."""

    text: str
    edits: list[NodeEdit] = field(default_factory=list)
    imports: tuple[ImportNeed, ...] = ()


def from_import_site(ctx: FileContext, name: cst.Name) -> cst.ImportFrom | None:
    """The absolute ``from M import …`` statement that binds the called name ``name``."""
    site = index_for(ctx).import_site(name.value, name)
    statement = site.statement if site is not None else None
    if not isinstance(statement, cst.ImportFrom) or statement.relative:
        return None
    return statement


def from_import_with(statement: cst.ImportFrom, add: Sequence[str],
                     remove: Collection[str] = ()) -> str | None:
    """The statement importing also ``add`` and no longer the names bound as ``remove``, in
    its own layout (None when no name would be left)."""
    names = statement.names
    assert not isinstance(names, cst.ImportStar)
    kept = [alias for alias in names
            if (alias.evaluated_alias or alias.evaluated_name) not in remove]
    aliases = kept + [cst.ImportAlias(name=cst.Name(n)) for n in add]
    if not aliases:
        return None
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    closing = names[-1].comma if statement.lpar is not None else cst.MaybeSentinel.DEFAULT
    out = []
    for position, alias in enumerate(aliases):
        if position == len(aliases) - 1:
            comma = closing
        elif alias in kept and alias is not names[-1] and isinstance(alias.comma, cst.Comma):
            comma = alias.comma
        else:
            comma = separator
        out.append(alias.with_changes(comma=comma))
    return code(statement.with_changes(names=out))


def _bound_to(ctx: FileContext, name: str, targets: Collection[str]) -> bool:
    return ctx.lookup(name) in targets


def name_from(ctx: FileContext, func: cst.BaseExpression, name: str, modules: Sequence[str],
              *, new_import: str | None) -> Spelling | None:
    """Spell ``name``, an attribute of each of ``modules``, for a fix of a call of ``func``.

    In order: through ``func``'s own module prefix (``models.resnet50`` ->
    ``models.X``); the bare name when already imported; added to the from-import that
    brought ``func`` in; the file's shortest alias of one of the modules; a new
    ``from <new_import> import X`` line. None when every way is blocked by another
    binding of the name.
    """
    targets = {f"{module}.{name}" for module in modules}
    usable = [m for m in modules if m not in SHADOWED_MODULES]
    if isinstance(func, cst.Attribute) and ctx.qualified_name(func.value) in usable:
        return Spelling(f"{code(func.value)}.{name}")
    if _bound_to(ctx, name, targets):
        return Spelling(name)
    if isinstance(func, cst.Name) and ctx.is_free(name):
        statement = from_import_site(ctx, func)
        if statement is not None and dotted_name(statement.module) in modules:  # type: ignore[arg-type]
            new = from_import_with(statement, [name])
            if new is not None:
                return Spelling(name, [NodeEdit(statement, new)])
    spellings = [s for m in usable if (s := ctx.alias_for(f"{m}.{name}")) is not None]
    if spellings:
        return Spelling(min(spellings, key=len))
    if new_import is not None and ctx.is_free(name):
        return Spelling(name, imports=(ImportNeed(f"from {new_import} import {name}"),))
    return None


def enum_spelling(ctx: FileContext, func: cst.BaseExpression, enum: str) -> Spelling | None:
    """Spell a weights enum (``ResNet50_Weights``) for a fix of the builder call ``func``."""
    modules = ENUM_MODULES.get(enum)
    if not modules:
        return None
    return name_from(ctx, func, enum, modules, new_import=modules[0])


def imported_names(statement: cst.ImportFrom) -> list[str]:
    """The names a from-import statement binds."""
    return [bound for bound, _, _ in import_bindings(statement)]
