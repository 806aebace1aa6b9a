"""What import statements bind, and where a name is imported and used (for fixes that
rewrite every use of an imported name and then remove the import)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import libcst as cst

from torchlint.analysis.nodes import dotted_name, semantic_children

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext

# What a name bound by a relative import means: the project's own module, never torch
AMBIGUOUS = "\0ambiguous"


@dataclass
class ImportSite:
    """One ``from M import N [as A]`` binding a name, and every other use of that name."""

    line: cst.SimpleStatementLine
    statement: cst.ImportFrom | cst.Import
    alias: cst.ImportAlias
    bound: str
    uses: list[cst.Name] = field(default_factory=list)


class ModuleIndex:
    """Parents, names and imports of one module, built once on first use."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self.names: dict[str, list[cst.Name]] = {}
        self.imports: dict[str, list[tuple[cst.SimpleStatementLine | None, cst.CSTNode,
                                           cst.ImportAlias | None]]] = {}
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            for child in semantic_children(node):
                self.parents[child] = node
                stack.append(child)
            if isinstance(node, (cst.Import, cst.ImportFrom)):
                self._note_import(node)
            elif isinstance(node, cst.Name) and self._is_use(node):
                self.names.setdefault(node.value, []).append(node)

    def _note_import(self, node: cst.Import | cst.ImportFrom) -> None:
        line = self.parents.get(node)
        line = line if isinstance(line, cst.SimpleStatementLine) else None
        for imported in import_bindings(node):
            # ``import a.b`` binds ``a`` without an alias of its own to remove
            removable = isinstance(node, cst.ImportFrom) or imported.alias.asname is not None
            self.imports.setdefault(imported.bound, []).append(
                (line, node, imported.alias if removable else None))

    def _is_use(self, node: cst.Name) -> bool:
        parent = self.parents.get(node)
        if isinstance(parent, cst.Attribute) and parent.attr is node:
            return False
        if isinstance(parent, cst.Arg) and parent.keyword is node:
            return False
        return not isinstance(parent, (cst.ImportAlias, cst.AsName, cst.ImportFrom, cst.Import))

    def inside(self, node: cst.CSTNode, ancestor: cst.CSTNode) -> bool:
        current = self.parents.get(node)
        while current is not None:
            if current is ancestor:
                return True
            current = self.parents.get(current)
        return False

    def function_of(self, node: cst.CSTNode) -> cst.FunctionDef | None:
        current = self.parents.get(node)
        while current is not None and not isinstance(current, cst.FunctionDef):
            current = self.parents.get(current)
        return current

    def import_site(self, name: str, at: cst.CSTNode | None = None) -> ImportSite | None:
        """The ``from M import name`` that ``name`` means at ``at``: the one import in the
        innermost function around ``at`` that imports it (its uses: that function's), or
        else the file's single import of it (its uses: the whole file's)."""
        sites = self.imports.get(name, [])
        chosen = None
        if at is not None:
            function = self.function_of(at)
            while function is not None and chosen is None:
                local = [s for s in sites if self.function_of(s[1]) is function]
                if len(local) > 1:
                    return None
                chosen = local[0] if local else None
                scope: cst.CSTNode = function
                function = self.function_of(function)
        local_scopes = [function for s in sites
                        if (function := self.function_of(s[1])) is not None]
        if chosen is None:
            top = [s for s in sites if self.function_of(s[1]) is None]
            if len(top) != 1:
                return None
            chosen, scope = top[0], self.module
        line, statement, alias = chosen
        if line is None or alias is None:
            return None
        # at module level, uses under a function importing the name itself are that one's
        if scope is self.module:
            uses = [use for use in self.names.get(name, [])
                    if not any(self.inside(use, local) for local in local_scopes)]
        else:
            uses = [use for use in self.names.get(name, []) if self.inside(use, scope)]
        return ImportSite(line, statement, alias, name, uses)


def index_for(ctx: FileContext) -> ModuleIndex:
    """The file's ModuleIndex, built once per file and shared by every rule that needs it."""
    return ctx.cached("module_index", lambda: ModuleIndex(ctx.module))


def called_use(index: ModuleIndex, name: cst.Name) -> cst.Call | None:
    """The call whose callee is this use of the name: ``Variable`` in ``Variable(x)``, or
    ``amp`` in ``amp.autocast()``."""
    parent = index.parents.get(name)
    if isinstance(parent, cst.Call) and parent.func is name:
        return parent
    if isinstance(parent, cst.Attribute) and parent.value is name:
        grand = index.parents.get(parent)
        if isinstance(grand, cst.Call) and grand.func is parent:
            return grand
    return None


class ImportedName(NamedTuple):
    """A name an import statement binds: ``bound`` is the local name, ``qualified`` what it
    means (``torch.nn`` for ``from torch import nn``; :data:`AMBIGUOUS` for a relative
    import), ``alias`` the ``ImportAlias`` node that binds it."""

    bound: str
    qualified: str
    alias: cst.ImportAlias


def import_bindings(stmt: cst.Import | cst.ImportFrom, package: str | None = None
                    ) -> Iterator[ImportedName]:
    """The names an import statement binds. A star import binds nothing we can name.

    A relative import means :data:`AMBIGUOUS` unless ``package`` (the package the file
    is in) says what it names."""
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield ImportedName(alias.asname.name.value, full, alias)
            else:
                top = full.split(".", 1)[0]
                yield ImportedName(top, top, alias)
        return
    if isinstance(stmt.names, cst.ImportStar):
        return
    if stmt.relative or stmt.module is None:
        # relative imports name this project's own modules, never torch
        base = relative_module(stmt, package)
        for alias in stmt.names:
            name = alias.evaluated_name
            qualified = f"{base}.{name}" if base is not None else AMBIGUOUS
            yield ImportedName(alias.evaluated_alias or name, qualified, alias)
        return
    module = dotted_name(stmt.module)
    if module is None:
        return
    for alias in stmt.names:
        name = alias.evaluated_name
        yield ImportedName(alias.evaluated_alias or name, f"{module}.{name}", alias)


def relative_module(stmt: cst.ImportFrom, package: str | None) -> str | None:
    """The absolute module ``from ..x import y`` names, seen from ``package`` (None: not
    known, or it climbs out of the packages)."""
    if package is None:
        return None
    level = len(stmt.relative)
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if stmt.module is not None:
        module = dotted_name(stmt.module)
        if module is None:
            return None
        base.append(module)
    return ".".join(base) or None
