"""What a file learns from the other files of its project: which classes are module classes
(or datasets), and what module-level aliases stand for, through the file's own imports.

Nothing is indexed up front. When a question reaches a name imported from the project
(``from .layers import BaseBlock``, ``from mypkg.modules import SharedDropout``), the
module that defines it is found on disk (relative imports, absolute imports of the
project's packages, ``__init__`` re-exports), read and summarised with CPython's ``ast``
(a tenth of libcst's cost), and the summary is kept by file content for the rest of the
run. Every file consulted is recorded, so a cached lint result can be invalidated when a
file it learned from changes. Files are read, never imported or run.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

# How far a chain of imports, re-exports and base classes is followed.
MAX_DEPTH = 12
# an import statement's module (``from .x import *``: dots, module, star) or modules
# (``import a.b as c, d``), anywhere in a file's text
_IMPORT_LINE = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*)[ \t]*([\w.]*)[ \t]+import[ \t]*(\*)?|import[ \t]+([^#;\r\n]+))",
    re.MULTILINE)
# How many files beside a linted file a question about its folder reads, at most, and the
# largest one read (a generated or vendored file is no script of the project)
MAX_SIBLINGS = 200
MAX_SIBLING_BYTES = 1 << 20
_T = TypeVar("_T")
# Bases that make a class no library's object: ``class Predictor(object)``, an ABC
_PLAIN_BASES = frozenset({"builtins.object", "abc.ABC", "typing.Generic", "typing.Protocol"})


@dataclass(frozen=True)
class ModuleSummary:
    """What one module of the project defines at module level."""

    name: str  # dotted module name (``pkg.layers``)
    # class name -> its bases as qualified names (None for a base we cannot name)
    classes: dict[str, tuple[str | None, ...]]
    # name -> what it stands for: an import (``from .x import A``) or an alias
    # (``Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor``), one
    # qualified name per possible value
    names: dict[str, tuple[str, ...]]
    # functions defined at module level
    functions: frozenset[str] = frozenset()
    # ``__all__`` when it is a literal list or tuple of strings (what ``import *`` takes)
    public: tuple[str, ...] | None = None
    # modules it star-imports (``from .utils import *``), absolute
    stars: tuple[str, ...] = ()


@dataclass(frozen=True)
class Dependency:
    """A file some answer came from, as it was when read."""

    path: str
    digest: str


def file_digest(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


class Project:
    """The project's other files, read on demand. One per run (or per language server),
    shared by the files linted; it keeps what it read by file content."""

    def __init__(self, roots: Iterable[str] = (), token: str | None = None) -> None:
        # extra folders absolute imports are searched from (the configuration's folder,
        # its src/); each file's own package root and folder come first
        self.extra_roots = tuple(os.path.abspath(r) for r in roots)
        # names this project in the worker processes of a parallel run
        self.token = token or os.urandom(8).hex()
        self._summaries: dict[str, tuple[int, int, str, ModuleSummary | None]] = {}
        self._exists: dict[str, bool] = {}
        self._packages: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._listings: dict[str, tuple[int, tuple[str, ...]]] = {}
        self._digests: dict[str, tuple[int, int, str]] = {}
        self._derived: dict[tuple[str, str, str], object] = {}

    def __reduce__(self) -> tuple[Callable[[str, tuple[str, ...]], Project],
                                  tuple[str, tuple[str, ...]]]:
        # sent to a worker process with each chunk of files: the worker keeps one Project
        # per token, so that every chunk it lints shares what the others read (the files'
        # summaries, the project's file list), as in a run in one process
        return _worker_project, (self.token, self.extra_roots)

    # ------------------------------------------------------------ locating
    def for_file(self, path: str) -> FileProject:
        """The view of the project from one file (its module name, where it searches)."""
        return FileProject(self, os.path.abspath(path))

    def _isfile(self, path: str) -> bool:
        known = self._exists.get(path)
        if known is None:
            known = self._exists[path] = os.path.isfile(path)
        return known

    def find_module(self, module: str, roots: tuple[str, ...]) -> str | None:
        """The file defining ``module`` (``a.b`` -> ``a/b.py`` or ``a/b/__init__.py``)."""
        parts = module.split(".")
        for root in roots:
            base = os.path.join(root, *parts)
            for candidate in (base + ".py", os.path.join(base, "__init__.py")):
                if self._isfile(candidate):
                    return candidate
        return None

    def roots_and_module(self, path: str) -> tuple[tuple[str, ...], str | None]:
        """Where absolute imports of ``path`` are searched, and its dotted module name.

        The file's package root (the folder above its outermost package) comes first, then
        its own folder (a script imports its sibling modules), then the extra roots."""
        folder = os.path.dirname(path)
        known = self._packages.get(folder)
        if known is None:
            known = self._packages[folder] = _package_of(folder)
        top, packages = known
        name = os.path.splitext(os.path.basename(path))[0]
        parts = [*packages] if name == "__init__" else [*packages, name]
        roots: list[str] = []
        for root in (top, folder, *self.extra_roots):
            if root not in roots:
                roots.append(root)
        return tuple(roots), ".".join(parts) or None

    # ------------------------------------------------------------ summaries
    def summary(self, path: str, module: str) -> tuple[ModuleSummary | None, Dependency | None]:
        """The summary of the file at ``path`` (module ``module``) and what it was read as."""
        try:
            stat = os.stat(path)
        except OSError:
            return None, None
        known = self._summaries.get(path)
        if known is not None and known[0] == stat.st_mtime_ns and known[1] == stat.st_size:
            return known[3], Dependency(path, known[2])
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None, None
        digest = file_digest(data)
        summary = _summarise(data, module, path.endswith("__init__.py"))
        self._summaries[path] = (stat.st_mtime_ns, stat.st_size, digest, summary)
        return summary, Dependency(path, digest)


    # ------------------------------------------------------------ siblings
    def scripts_in(self, folder: str) -> tuple[str, ...]:
        """The Python files and notebooks of ``folder`` (not its subfolders), sorted, at
        most :data:`MAX_SIBLINGS` of them."""
        try:  # a long-lived project (the language server) sees files come and go
            stamp = os.stat(folder).st_mtime_ns
            names = None
        except OSError:
            stamp, names = -1, []
        known = self._listings.get(folder)
        if known is None or known[0] != stamp:
            if names is None:
                try:
                    names = sorted(os.listdir(folder))
                except OSError:
                    names = []
            known = self._listings[folder] = (stamp, tuple(
                os.path.join(folder, name) for name in names
                if name.endswith((".py", ".ipynb")) and not name.startswith("."))[:MAX_SIBLINGS])
        return known[1]

    def read(self, path: str) -> tuple[bytes, Dependency] | None:
        """The bytes of ``path`` and what they were read as (None: unreadable or too large)."""
        try:
            stat = os.stat(path)
            if stat.st_size > MAX_SIBLING_BYTES:
                return None
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        known = self._digests.get(path)
        if known is None or known[:2] != (stat.st_mtime_ns, stat.st_size):
            known = self._digests[path] = (stat.st_mtime_ns, stat.st_size, file_digest(data))
        return data, Dependency(path, known[2])

    def derived(self, kind: str, dependency: Dependency, compute: Callable[[], _T]) -> _T:
        """A fact ``kind`` about a file as ``dependency`` says it was read, computed once a
        run (a rule's summary of another file of the project)."""
        key = (kind, dependency.path, dependency.digest)
        try:
            return self._derived[key]  # type: ignore[return-value]
        except KeyError:
            value = self._derived[key] = compute()
            return value


# the projects a worker process was sent, by token
_WORKER_PROJECTS: dict[str, Project] = {}


def _worker_project(token: str, extra_roots: tuple[str, ...]) -> Project:
    project = _WORKER_PROJECTS.get(token)
    if project is None:
        project = _WORKER_PROJECTS[token] = Project(extra_roots, token)
    return project


class FileProject:
    """The project as seen from one linted file: resolves the names it imports from the
    project and records which files the answers came from."""

    def __init__(self, project: Project, path: str) -> None:
        self.project = project
        self.path = path
        self.dependencies: dict[str, Dependency] = {}
        self.roots, self.module = project.roots_and_module(path)
        self._top_levels: dict[str, bool] = {}

    @property
    def package(self) -> str | None:
        """The package relative imports of this file start from."""
        if self.module is None:
            return None
        if os.path.basename(self.path) == "__init__.py":
            return self.module
        return self.module.rpartition(".")[0]

    def absolute(self, qualname: str) -> str | None:
        """``qualname`` as the triage spells a name imported relatively (``..models.Net``)
        made absolute from this file's package; None when it climbs out of the packages."""
        level = len(qualname) - len(qualname.lstrip("."))
        if not level:
            return qualname
        base = _absolute(None, level, self.package)
        return None if base is None else f"{base}.{qualname[level:]}"

    def owns(self, qualname: str) -> bool:
        """Is ``qualname`` a name of this project's own modules: its top-level package or
        module is a file of the project (torch and the builtins never are)?"""
        top = qualname.split(".", 1)[0]
        return top not in ("torch", "builtins") and self.knows_top_level(top)

    def knows_top_level(self, name: str) -> bool:
        """Is ``name`` (a top-level package or module) part of this project?"""
        known = self._top_levels.get(name)
        if known is None:
            known = self._top_levels[name] = self.project.find_module(
                name, self.roots) is not None
        return known

    def siblings_containing(self, needle: str) -> list[tuple[str, bytes, Dependency]]:
        """The other Python files and notebooks of this file's folder whose text contains
        ``needle``: the scripts that run beside it (``train.py`` next to ``evaluate.py``),
        where a relative path names the same file. Every file read is recorded as a
        dependency, those without ``needle`` too: a change that adds it must invalidate a
        cached answer."""
        wanted = needle.encode("utf-8", "surrogatepass")
        found: list[tuple[str, bytes, Dependency]] = []
        folder = os.path.dirname(self.path)
        # the folder itself: a script added or removed beside this one changes its time
        # (a cache compares a dependency's time and size before its content, which a folder
        # has none of)
        self.dependencies[folder] = Dependency(folder, "")
        for path in self.project.scripts_in(folder):
            if path == self.path:
                continue
            read = self.project.read(path)
            if read is None:
                continue
            data, dependency = read
            self.dependencies[path] = dependency
            if wanted in data:
                found.append((path, data, dependency))
        return found

    def learned(self, dependencies: Iterable[Dependency]) -> None:
        """Record files an answer about another file came from."""
        for dependency in dependencies:
            if dependency.path != self.path:
                self.dependencies[dependency.path] = dependency

    def module_file(self, qualname: str) -> tuple[str, bytes, Dependency] | None:
        """The project file defining ``qualname`` (``pkg.data.build_loader``, followed
        through re-exports and aliases to one definition): the name it has there, the
        file's bytes, and what they were read as, recorded as a dependency."""
        targets = self.alias_targets(qualname)
        if len(targets) != 1:
            return None
        module, _, name = targets[0].rpartition(".")
        if not module or not self.knows_top_level(module.split(".", 1)[0]):
            return None
        path = self.project.find_module(module, self.roots)
        if path is None or os.path.abspath(path) == self.path:
            return None
        read = self.project.read(path)
        if read is None:
            return None
        data, dependency = read
        self.dependencies[dependency.path] = dependency
        return name, data, dependency

    # ------------------------------------------------------------ questions
    def derives_from(self, qualname: str, bases: frozenset[str]) -> bool:
        """Does the project class ``qualname`` derive (through any number of the project's
        own classes, aliases and re-exports) from one of ``bases``?"""
        return self._derives(qualname, bases, 0, set())

    def alias_targets(self, qualname: str) -> tuple[str, ...]:
        """What a project name stands for: the qualified names of its possible values
        (one for a plain alias or re-export, several for a conditional alias); the name
        itself when it is a class or unknown."""
        found = self._resolve(qualname, 0, set())
        return tuple(sorted(found)) if found else (qualname,)

    def star_names(self, module: str) -> dict[str, str]:
        """What ``from module import *`` binds, when ``module`` is a file of the project:
        each public name (``__all__`` when the module spells it out, else the names not
        starting with ``_``) with the qualified name it stands for (an import, a class, a
        function, an unambiguous alias), through the module's own star imports."""
        return self._star_names(module, 0, set())

    def star_module(self, module: str | None, level: int) -> str | None:
        """The module of the project ``from <level dots><module> import *`` in this file
        names; None for another library's module, or one above the packages (a star
        import binds nothing from those for the rules)."""
        absolute = _absolute(module, level, self.package)
        return absolute if absolute and self.owns(absolute) else None

    def star_packages(self, module: str) -> frozenset[str]:
        """The top-level packages of the names ``from module import *`` may bind (a
        superset of those of :meth:`star_names`' values, read from the text of the
        module and of the modules it star-imports, unparsed): the project's own, and every
        package their import statements name."""
        found: set[str] = set()
        self._star_packages(module, 0, set(), found)
        return frozenset(found)

    def _star_packages(self, module: str, depth: int, seen: set[str], found: set[str]
                       ) -> None:
        if depth > MAX_DEPTH or module in seen or not self.owns(module):
            return
        seen.add(module)
        found.add(module.split(".", 1)[0])
        path = self.project.find_module(module, self.roots)
        read = self.project.read(path) if path is not None else None
        if read is None:
            return
        data, dependency = read
        if os.path.abspath(path) != self.path:  # type: ignore[arg-type]
            self.dependencies[dependency.path] = dependency
        package = module if os.path.basename(path) == "__init__.py" else (  # type: ignore[arg-type]
            module.rpartition(".")[0])
        for dots, name, star, names in _IMPORT_LINE.findall(data):
            if names:
                found.update(part.split()[0].split(b".")[0].decode("ascii", "replace")
                             for part in names.split(b",") if part.split())
                continue
            target = _absolute(name.decode("ascii", "replace") or None, len(dots),
                               package or None) if dots else name.decode("ascii", "replace")
            if not target:
                continue
            found.add(target.split(".", 1)[0])
            if star:
                self._star_packages(target, depth + 1, seen, found)

    def _star_names(self, module: str, depth: int, seen: set[str]) -> dict[str, str]:
        if depth > MAX_DEPTH or module in seen:
            return {}
        seen.add(module)
        summary = self._summary_of(module)
        if summary is None:
            return {}
        found: dict[str, str] = {}
        for star in summary.stars:
            found.update(self._star_names(star, depth + 1, seen))
        for name, targets in summary.names.items():
            if len(targets) == 1:
                found[name] = targets[0]
            else:
                found.pop(name, None)
        for name in (*summary.classes, *summary.functions):
            found[name] = f"{module}.{name}"
        if summary.public is not None:
            return {name: found[name] for name in summary.public if name in found}
        return {name: qual for name, qual in found.items() if not name.startswith("_")}

    def is_plain_class(self, qualname: str) -> bool:
        """Is ``qualname`` a class of the project whose bases, followed through the
        project's own classes, are only ``object``, ``ABC`` or ``Generic``: an object of
        no library (not a torch module), whatever methods it defines?"""
        return self._plain(qualname, 0, frozenset())

    def _plain(self, qualname: str, depth: int, seen: frozenset[str]) -> bool:
        if qualname in _PLAIN_BASES:
            return True
        if depth > MAX_DEPTH or qualname in seen:
            return False  # a cycle of bases
        seen |= {qualname}
        for target in self._resolve(qualname, depth, set()) or {qualname}:
            if target in _PLAIN_BASES:
                continue
            defined = self._class_bases(target)
            if defined is None or not all(
                    base is not None and self._plain(base, depth + 1, seen) for base in defined):
                return False
        return True

    def _derives(self, qualname: str, bases: frozenset[str], depth: int,
                 seen: set[str]) -> bool:
        if qualname in bases:
            return True
        if depth > MAX_DEPTH or qualname in seen:
            return False
        seen.add(qualname)
        for target in self._resolve(qualname, depth, set()) or {qualname}:
            if target in bases:
                return True
            defined = self._class_bases(target)
            if defined is not None and any(
                    base is not None and self._derives(base, bases, depth + 1, seen)
                    for base in defined):
                return True
        return False

    def _class_bases(self, qualname: str) -> tuple[str | None, ...] | None:
        module, _, name = qualname.rpartition(".")
        summary = self._summary_of(module) if module else None
        if summary is None:
            return None
        return summary.classes.get(name)

    def _resolve(self, qualname: str, depth: int, seen: set[str]) -> set[str]:
        """The qualified names ``qualname`` finally stands for, following the project's
        re-exports and aliases; empty when it is not a project name we can follow."""
        if depth > MAX_DEPTH or qualname in seen:
            return set()
        seen.add(qualname)
        module, _, name = qualname.rpartition(".")
        if not module:
            return set()
        summary = self._summary_of(module)
        if summary is None or name in summary.classes:
            return set()
        targets = summary.names.get(name)
        if targets is None:
            return set()
        found: set[str] = set()
        for target in targets:
            deeper = self._resolve(target, depth + 1, seen)
            found |= deeper or {target}
        return found

    def _summary_of(self, module: str) -> ModuleSummary | None:
        if not self.knows_top_level(module.split(".", 1)[0]):
            return None
        path = self.project.find_module(module, self.roots)
        if path is None:
            return None
        summary, dependency = self.project.summary(path, module)
        if dependency is not None and os.path.abspath(path) != self.path:
            self.dependencies[dependency.path] = dependency
        return summary


def _package_of(folder: str) -> tuple[str, tuple[str, ...]]:
    """The folder above ``folder``'s outermost package, and the package names down to it."""
    parts: list[str] = []
    top = folder
    while os.path.isfile(os.path.join(top, "__init__.py")):
        parts.insert(0, os.path.basename(top))
        parent = os.path.dirname(top)
        if parent == top:
            break
        top = parent
    return top, tuple(parts)


# ------------------------------------------------------------------ summarising
def _summarise(data: bytes, module: str, is_package: bool) -> ModuleSummary | None:
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    package = module if is_package else module.rpartition(".")[0]
    imported: dict[str, str] = {}
    classes: dict[str, tuple[str | None, ...]] = {}
    names: dict[str, tuple[str, ...]] = {}
    rebound: set[str] = set()
    functions: set[str] = set()
    public: tuple[str, ...] | None = None
    stars: list[str] = []
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                bound = alias.asname or alias.name.split(".", 1)[0]
                target = alias.name if alias.asname else bound
                _bind(names, imported, rebound, bound, target)
        elif isinstance(stmt, ast.ImportFrom):
            base = _absolute(stmt.module, stmt.level, package)
            if base is None:
                continue
            for alias in stmt.names:
                if alias.name == "*":
                    stars.append(base)
                    continue
                _bind(names, imported, rebound, alias.asname or alias.name,
                      f"{base}.{alias.name}")
        elif isinstance(stmt, ast.ClassDef):
            classes[stmt.name] = tuple(_qualified(b, imported) or _builtin_base(b, imported)
                                       for b in stmt.bases)
            imported[stmt.name] = f"{module}.{stmt.name}"  # a base of later classes
            rebound.add(stmt.name)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0], ast.Name) and stmt.targets[0].id == "__all__":
            public = _literal_names(stmt.value)
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(
                stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            values = _alias_values(stmt.value, imported)
            bound_otherwise = name in rebound and name not in names
            if values is None or bound_otherwise:  # not (only) an alias: unknown
                rebound.add(name)
                names.pop(name, None)
                continue
            names[name] = tuple(sorted(set(names.get(name, ())) | set(values)))
            rebound.add(name)
        else:
            for name in _bound_by(stmt):
                rebound.add(name)
                names.pop(name, None)
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions.add(stmt.name)
    return ModuleSummary(module, classes, names, frozenset(functions), public, tuple(stars))


def _literal_names(node: ast.expr) -> tuple[str, ...] | None:
    """``["a", "b"]`` or ``("a", "b")``: the names; None for anything else."""
    if not isinstance(node, (ast.List, ast.Tuple)) or not all(
            isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
        return None
    return tuple(e.value for e in node.elts)  # type: ignore[attr-defined]


def _bind(names: dict[str, tuple[str, ...]], imported: dict[str, str], rebound: set[str],
          bound: str, target: str) -> None:
    """An import binding: several imports of one name (``try: from a import X`` /
    ``except ImportError: from b import X``) stand for every one of them."""
    imported[bound] = target
    names[bound] = tuple(sorted(set(names.get(bound, ())) | {target}))
    rebound.add(bound)


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements that run at module level: those in if/try/with blocks too."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.With, ast.For, ast.While)):
            yield from _module_level(stmt.body)
            yield from _module_level(getattr(stmt, "orelse", []))
        elif isinstance(stmt, ast.Try):
            yield from _module_level(stmt.body)
            for handler in stmt.handlers:
                yield from _module_level(handler.body)
            yield from _module_level(stmt.orelse)
            yield from _module_level(stmt.finalbody)


def _bound_by(stmt: ast.stmt) -> Iterator[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for node in ast.walk(target):
                if isinstance(node, ast.Name):
                    yield node.id


def _absolute(module: str | None, level: int, package: str | None) -> str | None:
    """The absolute module a ``from`` import names (None when it climbs out of the
    project's packages)."""
    if level == 0:
        return module
    if package is None:
        return None
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.append(module)
    return ".".join(base) or None


def _qualified(node: ast.expr, imported: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return imported.get(node.id)
    if isinstance(node, ast.Attribute):
        base = _qualified(node.value, imported)
        return f"{base}.{node.attr}" if base else None
    if isinstance(node, ast.Subscript):  # Generic[T], nn.Module with parametrised bases
        return _qualified(node.value, imported)
    return None


def _builtin_base(node: ast.expr, imported: dict[str, str]) -> str | None:
    """``builtins.object`` for a base spelled ``object`` (not rebound by an import)."""
    if isinstance(node, ast.Name) and node.id == "object" and node.id not in imported:
        return "builtins.object"
    return None


def _alias_values(node: ast.expr, imported: dict[str, str]) -> tuple[str, ...] | None:
    """``A.B`` or ``A if c else B`` (nested too): the qualified names it may stand for."""
    if isinstance(node, ast.IfExp):
        body = _alias_values(node.body, imported)
        orelse = _alias_values(node.orelse, imported)
        return body + orelse if body is not None and orelse is not None else None
    qualified = _qualified(node, imported) if isinstance(node, (ast.Name, ast.Attribute)) \
        else None
    return (qualified,) if qualified is not None else None

