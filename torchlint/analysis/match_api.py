"""Helpers for the API-migration rules (TL6xx/TL7xx): imported names and the fixes that
rewrite every use of one, so the import can go away with the last use."""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.context import FileContext, import_bindings, parameters
from torchlint.diagnostic import ImportNeed, NodeEdit
from torchlint.analysis.matchers import code, with_keywords
from torchlint.analysis.nodes import semantic_children

# Expressions that never need parentheses when they replace an atom (a call).
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float,
          cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
          cst.List, cst.Dict, cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.Ellipsis)
# Parents in which any expression may stand without parentheses.
_OPEN_PARENTS = (cst.Arg, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Expr,
                 cst.Element, cst.DictElement, cst.WithItem, cst.AssignTarget)


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
        if isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                bound = alias.evaluated_alias or alias.evaluated_name
                self.imports.setdefault(bound, []).append((line, node, alias))
            return
        for alias in node.names:
            if alias.asname is not None:  # import torch.cuda.amp as amp
                self.imports.setdefault(alias.evaluated_alias, []).append((line, node, alias))
            else:
                for bound, _ in import_bindings(node.with_changes(names=[alias])):
                    self.imports.setdefault(bound, []).append((line, node, None))

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


def iter_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    from torchlint.analysis.nodes import iter_nodes

    for child in iter_nodes(node):
        if isinstance(child, cst.Call):
            yield child


# ------------------------------------------------------------ rendering
add_keywords = with_keywords  # one implementation, in matchers


# ------------------------------------------------------------- bindings
def global_assignment(ctx: FileContext, name: str) -> tuple[cst.CSTNode, cst.BaseExpression] | None:
    """``name = value`` when that is the only binding of ``name`` at module level and the
    current function (and those around it) never bind ``name`` themselves."""
    from torchlint.analysis.context import binds_anywhere, bound_names

    for ancestor in ctx.ancestors:
        if isinstance(ancestor, (cst.FunctionDef, cst.Lambda)):
            if any(p.name.value == name for p in parameters(ancestor)):
                return None
            if isinstance(ancestor, cst.FunctionDef) and binds_anywhere(ancestor.body, name):
                return None
        elif isinstance(ancestor, cst.ClassDef):
            return None
    found: list[cst.CSTNode] = []
    lines: list[cst.CSTNode] = list(ctx.module.body)
    while lines:
        stmt = lines.pop()
        if isinstance(stmt, cst.SimpleStatementLine):
            found.extend(small for small in stmt.body if name in bound_names(small))
        elif isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            if stmt.name.value == name:
                return None
        else:
            if name in bound_names(stmt):
                return None
            for child in semantic_children(stmt):
                lines.extend(_statements_of(child))
    if len(found) != 1:
        return None
    only = found[0]
    if isinstance(only, cst.Assign) and len(only.targets) == 1 and isinstance(
            only.targets[0].target, cst.Name):
        return only, only.value
    return None


def _statements_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    if isinstance(node, cst.BaseSuite):
        return list(node.body)
    if isinstance(node, (cst.If, cst.Else, cst.ExceptHandler, cst.Finally)):
        return [node]
    return []


def torch_spelling(ctx: FileContext, func: cst.BaseExpression, qualname: str
                   ) -> tuple[str, ImportNeed | None] | None:
    """Spell ``qualname`` (``torch.…``) the way ``func`` spells torch (``T.float32`` after
    ``T.FloatTensor``), else as :func:`torchlint.matchers.reference` would."""
    from torchlint.analysis.matchers import reference

    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if root is not func and isinstance(root, cst.Name) and ctx.lookup(root.value) == "torch":
        return root.value + qualname[len("torch"):], None
    return reference(ctx, qualname)
