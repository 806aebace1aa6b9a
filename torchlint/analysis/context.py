"""FileContext: what names mean and where we are, shared by every rule of one file.

Name resolution is done from the file's own import statements (no libcst
scope analysis: it costs five times the parse, see ``benchmarks/``). A name
resolves to a dotted qualified name only when every binding of it that could
be visible says the same thing; anything doubtful resolves to ``None``, and
rules stay silent on ``None``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import libcst as cst
from libcst._nodes.internal import CodegenState

from torchlint.analysis.bindings import Binding, bound_names, last_binding, module_statements
from torchlint.analysis.imports import AMBIGUOUS, import_bindings, relative_module
from torchlint.analysis.nodes import (
    dotted_name,
    iter_compound_statements,
    node_types,
    parameters,
)
from torchlint.analysis.options import Options
from torchlint.analysis.project import Project
from torchlint.analysis.test_paths import is_test_file
from torchlint.analysis.torch_facts import canonical

_BUILTIN_NAMES = frozenset(dir(builtins))


_T = TypeVar("_T")
_LOOPS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)
# the same, for a test by exact type (isinstance against libcst's classes goes through ABCMeta)
_LOOP_TYPES = node_types(*_LOOPS)
_SCOPE_TYPES = node_types(*_SCOPES)


@dataclass
class _Frame:
    node: cst.FunctionDef | cst.Lambda | None
    names: dict[str, str] = field(default_factory=dict)


class FileContext:
    """Shared facts about one file. The engine keeps ``ancestors`` current during the walk."""

    def __init__(self, path: str, module: cst.Module, options: Options | None = None,
                 project: Project | None = None) -> None:
        self.path = path
        self.module = module
        self.options = options if options is not None else Options()
        # the project's other files, as seen from this one (None: this file alone)
        self.project = project.for_file(path) if project is not None else None
        self._package = self.project.package if self.project is not None else None
        self.ancestors: list[cst.CSTNode] = []
        self._frames: list[_Frame] = []
        self._module_names: dict[str, str] = {}
        self._module_bound: set[str] = set()
        self._module_classes: dict[str, cst.ClassDef] = {}
        self._dataset_classes: dict[str, cst.ClassDef] = {}
        self._class_nodes: list[cst.ClassDef] = []
        # module-level aliases: ``Tensor = torch.FloatTensor`` (or ``A if c else B``)
        self._alias_values: dict[str, list[cst.BaseExpression]] = {}
        self._not_aliases: set[str] = set()
        self._aliases: dict[str, tuple[str, ...]] = {}
        self._memo: dict[Hashable, Any] = {}
        self._scan_module(module.body)
        self._resolve_aliases()
        self._find_classes()

    # ------------------------------------------------------------------ setup
    def _scan_module(self, body: Sequence[cst.CSTNode]) -> None:
        for stmt in module_statements(body):
            self._bind_module_statement(stmt)
            if isinstance(stmt, cst.ClassDef):
                self._class_nodes.append(stmt)
                self._collect_nested_classes(stmt.body)

    def _collect_nested_classes(self, suite: cst.BaseSuite) -> None:
        for stmt in suite.body:
            if isinstance(stmt, cst.ClassDef):
                self._class_nodes.append(stmt)
                self._collect_nested_classes(stmt.body)

    def _bind_module_statement(self, stmt: cst.CSTNode) -> None:
        if isinstance(stmt, (cst.Import, cst.ImportFrom)):
            for bound, qual in self._imported(stmt):
                previous = self._module_names.get(bound)
                if bound in self._module_bound and previous is None:
                    self._module_names[bound] = AMBIGUOUS
                elif previous is not None and previous != qual:
                    self._module_names[bound] = AMBIGUOUS
                else:
                    self._module_names[bound] = qual
                self._module_bound.add(bound)
            return
        alias = _alias_form(stmt)
        if alias is not None:
            self._alias_values.setdefault(alias[0], []).append(alias[1])
        for bound in bound_names(stmt):
            if bound in self._module_names:
                self._module_names[bound] = AMBIGUOUS
            if alias is None or bound != alias[0]:
                self._not_aliases.add(bound)
            self._module_bound.add(bound)

    def _imported(self, stmt: cst.Import | cst.ImportFrom) -> list[tuple[str, str]]:
        """(name, qualified name) of each name the import binds; a star import of a module
        of the project binds what that module exports (``from utils import *``)."""
        if isinstance(stmt, cst.ImportFrom) and isinstance(stmt.names, cst.ImportStar):
            if self.project is None:
                return []
            module = relative_module(stmt, self._package) if stmt.relative else (
                dotted_name(stmt.module) if stmt.module is not None else None)
            return list(self.project.star_names(module).items()) if module else []
        return [(bound, qual) for bound, qual, _ in import_bindings(stmt, self._package)]

    def _resolve_aliases(self) -> None:
        for name, values in self._alias_values.items():
            if name in self._not_aliases or name in self._module_names:
                continue
            targets: set[str] = set()
            for value in values:
                branches = _alias_branches(value)
                resolved = [self.resolve_module_level(b) for b in branches]
                if not branches or any(r is None for r in resolved):
                    break
                targets.update(r for r in resolved if r is not None)
            else:
                self._aliases[name] = tuple(sorted(targets))

    def _find_classes(self) -> None:
        changed = True
        while changed:
            changed = False
            for cls in self._class_nodes:
                name = cls.name.value
                if name in self._module_classes or name in self._dataset_classes:
                    continue
                for base in cls.bases:
                    qual = self.resolve_module_level(base.value)
                    local = base.value.value if isinstance(base.value, cst.Name) else None
                    if local in self._module_classes or self.is_module_class_name(qual):
                        self._module_classes[name] = cls
                        changed = True
                        break
                    if local in self._dataset_classes or self._derives(
                            qual, self.options.dataset_bases):
                        self._dataset_classes[name] = cls
                        changed = True
                        break

    def resolve_module_level(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name ``expr`` has through the module's own imports and bindings,
        wherever the walk is (the caller checks that nothing local rebinds its root)."""
        if isinstance(expr, cst.Name):
            qual = self._module_names.get(expr.value)
            if qual is None and len(self._aliases.get(expr.value, ())) == 1:
                qual = self._aliases[expr.value][0]
            return None if qual in (None, AMBIGUOUS) else canonical(qual)
        if isinstance(expr, cst.Attribute):
            base = self.resolve_module_level(expr.value)
            return canonical(f"{base}.{expr.attr.value}") if base else None
        return None

    # ------------------------------------------------------------ walk hooks
    def enter_function(self, node: cst.FunctionDef | cst.Lambda) -> None:
        frame = _Frame(node)
        for param in parameters(node):
            frame.names[param.name.value] = AMBIGUOUS
        self._frames.append(frame)

    def leave_function(self) -> None:
        self._frames.pop()

    def note_local_binding(self, stmt: cst.CSTNode) -> None:
        """Record a binding made inside a function (imports resolve, anything else shadows)."""
        if not self._frames:
            return
        names = self._frames[-1].names
        kind = type(stmt)
        if kind is cst.Import or kind is cst.ImportFrom:
            for bound, qual, _ in import_bindings(stmt, self._package):
                names[bound] = qual
        else:
            for bound in bound_names(stmt):
                names[bound] = AMBIGUOUS

    # ------------------------------------------------------- name resolution
    def lookup(self, name: str) -> str | None:
        """Qualified name a bare name refers to here, ``builtins.X`` for builtins, else None."""
        for frame in reversed(self._frames):
            if name in frame.names:
                qual = frame.names[name]
                return None if qual == AMBIGUOUS else canonical(qual)
        qual = self._module_names.get(name)
        if qual is not None:
            return None if qual == AMBIGUOUS else canonical(qual)
        aliased = self._aliases.get(name)
        if aliased is not None and len(aliased) == 1:
            return canonical(aliased[0])
        if name in self._module_bound:
            return None
        if name in _BUILTIN_NAMES:
            return f"builtins.{name}"
        return None

    def qualified_name(self, expr: cst.CSTNode) -> str | None:
        """``torch.nn.Linear`` for ``nn.Linear`` after ``from torch import nn``; else None."""
        kind = type(expr)  # exact types: an isinstance against libcst's ABCs is slow here
        if kind is cst.Name:
            return self.lookup(expr.value)
        if kind is cst.Attribute:
            base = self.qualified_name(expr.value)
            if base is None or base.startswith("builtins."):
                return None
            return canonical(f"{base}.{expr.attr.value}")
        return None

    def possible_qualified_names(self, expr: cst.CSTNode) -> tuple[str, ...]:
        """Every qualified name ``expr`` may stand for: one for an import, several for a
        conditional alias (``Tensor = torch.cuda.FloatTensor if cuda else
        torch.FloatTensor``, in this file or in the project module it comes from); empty
        when unknown."""
        kind = type(expr)
        if kind is cst.Name:
            in_frame = any(expr.value in frame.names for frame in self._frames)
            aliased = None if in_frame else self._aliases.get(expr.value)
            if aliased:
                found = aliased
            else:
                qual = self.lookup(expr.value)
                found = (qual,) if qual is not None else ()
        elif kind is cst.Attribute:
            found = tuple(f"{base}.{expr.attr.value}"
                          for base in self.possible_qualified_names(expr.value)
                          if not base.startswith("builtins."))
        else:
            return ()
        if self.project is not None:
            found = tuple(t for qual in found for t in self.project.alias_targets(qual)) \
                if any(self._in_project(q) for q in found) else found
        return tuple(sorted({canonical(q) for q in found}))

    def is_module_class_name(self, qualname: str | None) -> bool:
        """A qualified class name that is a torch module: a known base (``torch.nn.Module``,
        the settings' module bases) or a class of the project deriving from one."""
        return self._derives(qualname, self.options.module_bases)

    def _derives(self, qualname: str | None, bases: frozenset[str]) -> bool:
        if qualname is None:
            return False
        if qualname in bases:
            return True
        if self.project is None or not self._in_project(qualname):
            return False
        return self.cached(("derives", qualname, bases),
                           lambda: self.project.derives_from(qualname, bases))  # type: ignore[union-attr]

    def _in_project(self, qualname: str) -> bool:
        return self.project is not None and self.project.owns(qualname)

    def call_name(self, node: cst.CSTNode) -> str | None:
        """Qualified name of the callee when ``node`` is a call, else None."""
        return self.qualified_name(node.func) if isinstance(node, cst.Call) else None

    def alias_for(self, qualname: str) -> str | None:
        """Shortest expression this file already uses for ``qualname`` (``nn``, ``torch.nn``)."""
        best: str | None = None
        for bound, qual in self._module_names.items():
            if qual == AMBIGUOUS:
                continue
            if qual == qualname:
                candidate = bound
            elif qualname.startswith(qual + "."):
                candidate = bound + qualname[len(qual):]
            else:
                continue
            if self.lookup(bound) is None:
                continue
            if best is None or len(candidate) < len(best):
                best = candidate
        return best

    @property
    def is_test_file(self) -> bool:
        """Test code, by its path (see :func:`~torchlint.analysis.test_paths.is_test_file`)."""
        return self.cached("is_test_file", lambda: is_test_file(
            self.path, self.project.roots[0] if self.project is not None else None))

    def definitions(self) -> list[cst.FunctionDef | cst.ClassDef]:
        """Every function, method and class of the file (nested ones too), in source
        order; found once, walking statements only."""
        return self.cached("definitions", lambda: [
            n for n in iter_compound_statements(self.module)
            if isinstance(n, (cst.FunctionDef, cst.ClassDef))])

    def cached(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """A per-file memo for facts rules derive more than once (``key`` names the fact)."""
        try:
            return self._memo[key]  # type: ignore[no-any-return]
        except KeyError:
            value = self._memo[key] = compute()
            return value

    def imports_from(self, package: str) -> bool:
        """The file imports ``package`` or anything from it (``from torch import nn``)."""
        prefix = package + "."
        return any(q == package or q.startswith(prefix) for q in self._module_names.values())

    def is_free(self, name: str) -> bool:
        """True if binding ``name`` at module level cannot clash with anything in the file."""
        return name not in self._module_bound and all(
            name not in frame.names for frame in self._frames
        ) and name not in _BUILTIN_NAMES

    # --------------------------------------------------------------- classes
    @property
    def module_class_names(self) -> frozenset[str]:
        return frozenset(self._module_classes)

    def is_module_class(self, node: cst.ClassDef) -> bool:
        return self._module_classes.get(node.name.value) is node

    def is_dataset_class(self, node: cst.ClassDef) -> bool:
        return self._dataset_classes.get(node.name.value) is node

    def local_module_class(self, expr: cst.BaseExpression) -> cst.ClassDef | None:
        """The module class of this file that a bare name refers to, if any."""
        if isinstance(expr, cst.Name) and self.lookup(expr.value) is None:
            if all(expr.value not in frame.names for frame in self._frames):
                return self._module_classes.get(expr.value)
        return None

    def code(self, node: cst.CSTNode) -> str:
        """Source of ``node`` as it would read in place of the current node.

        Continuation lines inside brackets are indented relative to the enclosing blocks,
        so codegen starts with the indentation of every block around the current node
        (``Module.code_for_node`` alone would lose it on multi-line expressions).
        """
        module = self.module
        state = CodegenState(default_indent=module.default_indent,
                             default_newline=module.default_newline)
        for anc in self.ancestors:
            if isinstance(anc, cst.IndentedBlock):
                state.increase_indent(module.default_indent if anc.indent is None else anc.indent)
        node._codegen(state)
        return "".join(state.tokens)

    # ----------------------------------------------------------- scope facts
    @property
    def node(self) -> cst.CSTNode:
        return self.ancestors[-1]

    def parent(self, node: cst.CSTNode | None = None) -> cst.CSTNode | None:
        """Parent of ``node`` (default: the node being visited), if it is on the walk stack."""
        index = len(self.ancestors) - 1 if node is None else self.index_of(node)
        return self.ancestors[index - 1] if index > 0 else None

    def index_of(self, node: cst.CSTNode) -> int:
        """Where ``node`` is on the walk stack (-1: not on it)."""
        for i in range(len(self.ancestors) - 1, -1, -1):
            if self.ancestors[i] is node:
                return i
        return -1

    def enclosing(self, types: type | tuple[type, ...], *, stop_at_scope: bool = False
                  ) -> cst.CSTNode | None:
        """Innermost ancestor (excluding the current node) of the given type(s)."""
        for i in range(len(self.ancestors) - 2, -1, -1):
            anc = self.ancestors[i]
            if isinstance(anc, types):
                return anc
            if stop_at_scope and isinstance(anc, _SCOPES):
                return None
        return None

    @property
    def current_function(self) -> cst.FunctionDef | None:
        """The innermost function whose body we are in (lambdas are seen through)."""
        function, klass = cst.FunctionDef, cst.ClassDef
        for anc in reversed(self.ancestors):
            kind = type(anc)
            if kind is function:
                return anc
            if kind is klass:
                return None
        return None

    def enclosing_class(self, function: cst.FunctionDef | None = None) -> cst.ClassDef | None:
        """The class whose body directly holds ``function`` (default: the current function)."""
        function = function or self.current_function
        if function is None:
            return None
        index = self.index_of(function)
        for i in range(index - 1, -1, -1):
            anc = self.ancestors[i]
            kind = type(anc)
            if kind is cst.ClassDef:
                return anc
            if kind is cst.FunctionDef or kind is cst.Lambda:
                return None
        return None

    def in_module_class(self) -> bool:
        """Inside a method (any depth of blocks) of a module class."""
        cls = self.enclosing_class()
        return cls is not None and self.is_module_class(cls)

    def in_method(self, *names: str) -> bool:
        function = self.current_function
        return function is not None and function.name.value in names and self.in_module_class()

    def in_forward(self) -> bool:
        return self.in_method("forward")

    def current_loop(self) -> cst.For | cst.While | None:
        """Innermost loop whose *body* holds the current node, within the current scope."""
        ancestors = self.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            kind = type(anc)
            if kind in _SCOPE_TYPES:
                return None
            if kind in _LOOP_TYPES and ancestors[i + 1] is anc.body:  # type: ignore[attr-defined]
                return anc  # type: ignore[return-value]
        return None

    def loops(self) -> list[cst.For | cst.While]:
        """All loops (innermost first) whose bodies hold the current node, in this scope."""
        found: list[cst.For | cst.While] = []
        ancestors = self.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            kind = type(anc)
            if kind in _SCOPE_TYPES:
                break
            if kind in _LOOP_TYPES and ancestors[i + 1] is anc.body:  # type: ignore[attr-defined]
                found.append(anc)  # type: ignore[arg-type]
        return found

    def is_expression_statement(self, node: cst.CSTNode | None = None) -> bool:
        """The node is a whole expression statement (its value is dropped)."""
        node = node or self.node
        parent = self.parent(node)
        return isinstance(parent, cst.Expr) and parent.value is node

    # ------------------------------------------------------------- bindings
    def binding(self, name: str, at: cst.CSTNode | None = None) -> Binding | None:
        """What ``name`` was last bound to before ``at`` (default: the current node): see
        :func:`torchlint.analysis.bindings.last_binding`."""
        return last_binding(self, name, at)


def _alias_form(stmt: cst.CSTNode) -> tuple[str, cst.BaseExpression] | None:
    """``(name, value)`` for ``name = A.B`` / ``name = A if c else B`` at module level."""
    if type(stmt) is not cst.Assign or len(stmt.targets) != 1:  # type: ignore[attr-defined]
        return None
    target = stmt.targets[0].target  # type: ignore[attr-defined]
    value = stmt.value  # type: ignore[attr-defined]
    if type(target) is cst.Name and _alias_branches(value):
        return target.value, value
    return None


def _alias_branches(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The dotted names an alias value may be (empty: not an alias)."""
    if isinstance(value, cst.IfExp):
        body, orelse = _alias_branches(value.body), _alias_branches(value.orelse)
        return body + orelse if body and orelse else []
    if isinstance(value, (cst.Name, cst.Attribute)) and dotted_name(value) is not None:
        return [value]
    return []
