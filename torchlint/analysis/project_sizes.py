"""What the other files of the project tell the size analysis (``sizes.py``): where a
module class of the linted file is built (``Net(3, 64)`` in ``train.py`` for ``class Net``
in ``model.py``), whether it is named anywhere else (a subclass, ``build(Net)``), and the
value of a module-level constant another module defines (``from .config import HIDDEN``).

Other files are read with CPython's ``ast``, once a run per file content; a file is parsed
only when its text names the class and the linted module. Every file looked at becomes a
dependency of the linted file, so that a cached result is redone when one changes.
"""

from __future__ import annotations

import ast
import os
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from torchlint.analysis.layer_table import INPUT_FACTORIES, INSTANCE_METHODS
from torchlint.analysis.project import Dependency, Project, _absolute

if TYPE_CHECKING:
    from torchlint.analysis.context import FileContext
    from torchlint.analysis.project import FileProject

# folders never searched for the project's files, and the most files a search reads
_SKIPPED = frozenset({"node_modules", "__pycache__", "build", "dist", "site-packages"})
_MAX_FILES = 2000
_MAX_BUILDER_BYTES = 40_000  # larger files are not read for literal constructions
_WORD = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
_PLAIN = rb"[\w\s,.=+\-*/'\"]"  # what the arguments of a literal construction are made of
_ATTRIBUTE = re.compile(rb"\.[ \t]*([A-Za-z_][A-Za-z0-9_]*)")
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     rb"|import[ \t]+([^\n]*))", re.M)


class NotLiteral:
    """An argument or constant that is no literal: its value is unknown."""

    def __repr__(self) -> str:
        return "NotLiteral()"


NOT_LITERAL = NotLiteral()


@dataclass(frozen=True)
class Construction:
    """One call of a class in another file: its arguments' values (``NOT_LITERAL`` where
    unknown); ``starred`` when ``*args`` or ``**kwargs`` hide some."""

    positional: tuple[object, ...]
    keywords: tuple[tuple[str, object], ...]
    starred: bool


@dataclass(frozen=True)
class Uses:
    """How the project's other files use a class: the constructions found, and whether it
    is named anywhere else (or the project was too large to search)."""

    constructions: tuple[Construction, ...]
    named_otherwise: bool


@dataclass(frozen=True)
class _Summary:
    constants: dict[str, object]
    imports: dict[str, str]  # module-level import bindings: name -> qualified name
    # (dotted callee, construction) for every call of a dotted name
    calls: tuple[tuple[str, Construction], ...]
    references: tuple[str, ...]  # dotted names used other than as a callee


def class_uses(ctx: FileContext, name: str) -> Uses:
    """How the other files of the project build or name the module class ``name`` of the
    linted file (none without project knowledge)."""
    return ctx.cached(("project_size_uses", name), lambda: _class_uses(ctx, name))


def class_inputs(ctx: FileContext, name: str) -> tuple[tuple[int, ...], ...]:
    """The shapes of the dummy inputs the other files of the project pass to an instance of
    the module class ``name`` of the linted file (``Net()(torch.randn(1, 3, 32, 32))``,
    ``model = Net(); model(torch.zeros(2, 8))``)."""
    return ctx.cached(("project_size_inputs", name), lambda: _class_inputs(ctx, name))


def _class_inputs(ctx: FileContext, name: str) -> tuple[tuple[int, ...], ...]:
    project = ctx.project
    if project is None:
        return ()
    return project_inputs(project, _files(ctx), name)


def project_inputs(project: FileProject, files: ProjectFiles, name: str
                   ) -> tuple[tuple[int, ...], ...]:
    """:func:`class_inputs` from the project as the linted file sees it (for a screening
    check, which has no FileContext); ``files``: :func:`project_files` of ``project``."""
    wanted = None
    found: list[tuple[int, ...]] = []
    for path, data, dependency in _files_building(project, files, name):
        summary = _read(project, path, "size-inputs", _read_inputs, (data, dependency))
        if summary is None:
            continue
        wanted = wanted or _wanted(project, name)
        found += [shape for callee, shape in summary.inputs if callee.rpartition(".")[2] == (
            name) and _means(project, summary, callee, wanted, may=False)]
    return tuple(found)


def _files_building(project: FileProject, files: ProjectFiles, name: str
                    ) -> Iterator[tuple[str, bytes, Dependency]]:
    """The files of :func:`_files_naming` that may build the class ``name`` of the linted
    file and make a tensor of a literal shape (the only ones parsed for a dummy input),
    with their bytes and what they were read as."""
    naming = _files_naming(project, files, name)
    if naming is None:
        return
    wanted = _wanted(project, name)
    known = project.project
    for path, data, dependency in naming:
        if data is None or dependency is None:
            continue
        chains = known.derived("size-builds " + name, dependency,
                               lambda: _built_chains(data, name))  # noqa: B023
        if chains is None:
            continue
        bindings = known.derived("size-imports", dependency,
                                 lambda: _import_bindings(known, path, data))  # noqa: B023
        if _may_call(project, bindings, chains, name, wanted):
            yield path, data, dependency


def _built_chains(data: bytes, name: str) -> list[list[str]] | None:
    """None when the file never calls ``name(`` or calls no tensor factory; else the dotted
    names it calls ``name`` on (``a.b`` of ``a.b.name(x)``)."""
    if not (re.search(rb"\b%s\(" % name.encode(), data) and _FACTORY_CALL.search(data)):
        return None
    return _attribute_calls(data, name)


_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_COMMENT = re.compile(rb"#[^\n]*")


def _import_bindings(project: Project, path: str, data: bytes
                     ) -> list[tuple[str, str]] | None:
    """What the import statements of the file ``data`` at ``path`` bind, wherever they are
    (its summary keeps the module-level ones): (name bound, qualified name), read from
    their text without parsing the file. None when one of them cannot be read so (a line
    continued with a backslash, two statements on a line): it may bind anything."""
    module = project.roots_and_module(path)[1] or ""
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    bindings: list[tuple[str, str]] = []
    for match in _IMPORT.finditer(data):
        source, names, plain = match.groups()
        text = _COMMENT.sub(b"", names if source is not None else plain).strip()
        if source is not None and text.startswith(b"("):
            text = text[1:].rstrip().removesuffix(b")")
        for item in text.decode("utf-8", "replace").split(","):
            parts = item.split()
            if not parts and source is not None:
                continue  # a trailing comma
            if len(parts) not in (1, 3) or len(parts) == 3 and parts[1] != "as" or not all(
                    _DOTTED.match(part) for part in parts[::2]):
                return None
            if source is None:
                bound = parts[2] if len(parts) == 3 else parts[0].split(".", 1)[0]
                bindings.append((bound, parts[0] if len(parts) == 3 else bound))
                continue
            relative = source.decode()
            level = len(relative) - len(relative.lstrip("."))
            base = _absolute(relative[level:] or None, level, package)
            if base is not None:
                bindings.append((parts[-1], f"{base}.{parts[0]}"))
    return bindings


def _may_call(project: FileProject, bindings: list[tuple[str, str]] | None,
              chains: list[list[str]], name: str, wanted: str) -> bool:
    """May a file with these import ``bindings``, calling ``name`` on the dotted names
    ``chains``, call a callee its summary's imports resolve to ``wanted`` (what
    :func:`_means` accepts): ``name(...)`` bound by an import, or
    ``bound.<attributes>.name(...)``?"""
    if bindings is None:
        return True
    for bound, qual in bindings:
        if bound == name and (qual == wanted or wanted in project.alias_targets(qual)):
            return True
        for head, *rest in chains:
            if head == bound:
                dotted = ".".join([qual, *rest, name])
                if dotted == wanted or wanted in project.alias_targets(dotted):
                    return True
    return False


_SPACE = rb"[\s\\]*"  # (a line continuation too)


def _attribute_calls(data: bytes, name: str) -> list[list[str]]:
    """The dotted names before ``.name(`` in ``data`` (``a.b`` of ``a.b.name(x)``)."""
    pattern = rb"\b(\w+(?:%s\.%s\w+)*)%s\.%s%s%s\(" % (
        _SPACE, _SPACE, _SPACE, _SPACE, name.encode(), _SPACE)
    return [re.findall(r"\w+", found.decode("utf-8", "replace"))
            for found in re.findall(pattern, data)]


def _files(ctx: FileContext) -> ProjectFiles:
    assert ctx.project is not None
    project = ctx.project
    return ctx.cached("project_size_files", lambda: project_files(project))


def _files_naming(project: FileProject, files: ProjectFiles, name: str
                  ) -> Iterator[tuple[str, bytes | None, Dependency | None]] | None:
    """The project's other files that may name the module class ``name`` of the linted
    file: those that import it (from its module, or re-exported by a package), or import
    its module and name it as an attribute; with their bytes (None: unreadable, or a large
    module of a library, not a script building a model) and what they were read as. None
    when there is no project
    knowledge or the project is too large to search."""
    if not project.roots or project.module is None or files is None:
        return None
    word, module_word = name.encode(), project.module.rpartition(".")[2].encode()

    def found() -> Iterator[tuple[str, bytes | None, Dependency | None]]:
        for path, (imported, attributes) in files:
            if word in imported or module_word in imported and word in attributes:
                read = project.project.read(path)
                if read is None or len(read[0]) > _MAX_BUILDER_BYTES:
                    yield path, None, None
                else:
                    yield path, *read

    return found()


def _wanted(project: FileProject, name: str) -> str:
    assert project.module is not None
    return f"{project.module}.{name}"


_FACTORY_CALL = re.compile(rb"\b(?:randn|rand|zeros|ones|empty)\(")


def imported_constant(ctx: FileContext, qualname: str) -> object:
    """The value of the module-level constant ``qualname`` (``pkg.config.HIDDEN``) when a
    module of the project assigns it a literal once; ``NOT_LITERAL`` otherwise."""
    project = ctx.project
    if project is None:
        return NOT_LITERAL
    for target in project.alias_targets(qualname):
        module, _, name = target.rpartition(".")
        if not module or not project.knows_top_level(module.split(".", 1)[0]):
            continue
        path = project.project.find_module(module, project.roots)
        if path is None or os.path.abspath(path) == project.path:
            continue
        defined, _ = project.project.summary(path, module)  # shared with the other rules
        if defined is None or name in defined.classes or name in defined.functions or (
                name in defined.names):
            continue  # a class, a function or an import: no constant
        summary = _read(project, path, "size-summary", _summarise)
        if summary is not None and name in summary.constants:
            return summary.constants[name]
    return NOT_LITERAL


def _class_uses(ctx: FileContext, name: str) -> Uses:
    project = ctx.project
    if project is None or not project.roots or project.module is None:
        return Uses((), False)
    files = _files_naming(project, _files(ctx), name)
    if files is None:
        return Uses((), True)
    wanted, word = _wanted(project, name), name.encode()
    found: list[Construction] = []
    named = False
    for path, data, dependency in files:
        if data is None or dependency is None or not re.search(rb"\b%s\((?:\s*|%s*\d%s*)\)" % (
                word, _PLAIN, _PLAIN), data):
            # it may name the class, and never builds it with no arguments or with a number
            # among plain ones (or is a large module of a library, not a script building
            # a model): only a file that may is parsed
            named = True
            continue
        summary = _read(project, path, "size-summary", _summarise, (data, dependency))
        if summary is None:
            named = True
            continue
        for callee, construction in summary.calls:
            if callee.rpartition(".")[2] == name and _means(project, summary, callee, wanted,
                                                            may=False):
                found.append(construction)
        named = named or any(r.rpartition(".")[2] == name and _means(
            project, summary, r, wanted, may=True) for r in summary.references)
    return Uses(tuple(found), named)


def _means(project: FileProject, summary: _Summary | _Inputs, dotted: str, wanted: str, *,
           may: bool) -> bool:
    """Does ``dotted``, spelled in the file ``summary`` describes, name ``wanted``? With
    ``may``, a dotted name whose head is not imported counts (it may)."""
    head, _, rest = dotted.partition(".")
    base = summary.imports.get(head)
    if base is None:
        return may and "." in dotted
    qual = f"{base}.{rest}" if rest else base
    return wanted in project.alias_targets(qual) or qual == wanted


# ------------------------------------------------------------------ the project's files
class _Words:
    """The identifiers the import statements of each .py file under a folder spell, and
    those after a dot, kept by modification time and size for the run."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[int, int, tuple[frozenset[bytes], frozenset[bytes]],
                                    Dependency]] = {}


# the other files of a project: each with the identifiers its import statements spell and
# those spelled after a dot (None: too many files)
ProjectFiles = list[tuple[str, tuple[frozenset[bytes], frozenset[bytes]]]] | None


def project_files(project: FileProject) -> ProjectFiles:
    """The other .py files under the linted file's package root with the identifiers their
    import statements spell and those spelled after a dot (None: too many files, or no
    root); every one is recorded as a dependency, since any of them may build the file's
    classes."""
    if not project.roots:
        return None
    root = project.roots[0]
    memo: _Words = project.project.derived("size-words", Dependency(root, ""), _Words)
    files = project.project.derived("size-project-files", Dependency(root, ""),
                                    lambda: _walk(root))
    if files is None:
        return None
    found: list[tuple[str, tuple[frozenset[bytes], frozenset[bytes]]]] = []
    for path in files:
        if path == project.path:
            continue
        try:
            stat = os.stat(path)
        except OSError:
            continue
        known = memo.known.get(path)
        if known is None or known[:2] != (stat.st_mtime_ns, stat.st_size):
            read = project.project.read(path)
            if read is None:
                continue
            data, dependency = read
            known = memo.known[path] = (stat.st_mtime_ns, stat.st_size,
                                        (_imported_words(data), frozenset(
                                            _ATTRIBUTE.findall(data))), dependency)
        project.learned([known[3]])
        found.append((path, known[2]))
    return found


def _imported_words(data: bytes) -> frozenset[bytes]:
    return frozenset(word for match in _IMPORT.finditer(data) for group in match.groups()
                     if group for word in _WORD.findall(group))


def _walk(root: str) -> tuple[str, ...] | None:
    files: list[str] = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED)
        files.extend(os.path.abspath(os.path.join(folder, n)) for n in sorted(names)
                     if n.endswith(".py"))
        if len(files) > _MAX_FILES:
            return None
    return tuple(files)


_T = TypeVar("_T")


def _read(project: FileProject, path: str, kind: str, make: Callable[[bytes, str, str], _T],
          read: tuple[bytes, Dependency] | None = None) -> _T | None:
    """``make(data, module, path)`` of the project file ``path`` (its summary ``kind``),
    once a run per file content, recorded as a dependency; ``read``: its bytes and what
    they were read as, when the caller has them already. None when it cannot be read."""
    read = read or project.project.read(path)
    if read is None:
        return None
    data, dependency = read
    project.learned([dependency])
    _, module = project.project.roots_and_module(path)
    return project.project.derived(kind, dependency, lambda: make(data, module or "", path))


@dataclass(frozen=True)
class _Inputs:
    imports: dict[str, str]  # as in _Summary
    # (dotted callee of a construction, shape of a dummy input given to the instance)
    inputs: tuple[tuple[str, tuple[int, ...]], ...]


def _read_inputs(data: bytes, module: str, path: str) -> _Inputs | None:
    parsed = _parsed(data, module, path)
    if parsed is None:
        return None
    tree, imports = parsed
    return _Inputs(imports, tuple(_dummy_inputs(tree, imports)) if _FACTORY_CALL.search(
        data) else ())


def _parsed(data: bytes, module: str, path: str) -> tuple[ast.Module, dict[str, str]] | None:
    """The file's tree and what its module-level imports bind (None: it does not parse)."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree, _module_imports(tree, module, path)


def _module_imports(tree: ast.Module, module: str, path: str) -> dict[str, str]:
    """What the module-level imports of a file bind: name -> qualified name."""
    package: str | None = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    imports: dict[str, str] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname:
                    imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".", 1)[0]
                    imports[top] = top
        elif isinstance(stmt, ast.ImportFrom):
            base = _absolute(stmt.module, stmt.level, package)
            for alias in stmt.names:
                if base is not None and alias.name != "*":
                    imports[alias.asname or alias.name] = f"{base}.{alias.name}"
    return imports


def _summarise(data: bytes, module: str, path: str) -> _Summary | None:
    parsed = _parsed(data, module, path)
    if parsed is None:
        return None
    tree, imports = parsed
    assigned: dict[str, list[ast.expr | None]] = {}  # None: unpacked, never a constant
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                for node in ast.walk(target):
                    if isinstance(node, ast.Name):
                        assigned.setdefault(node.id, []).append(
                            stmt.value if isinstance(target, ast.Name) else None)
    stores = Counter(n.id for n in ast.walk(tree) if type(n) is ast.Name and type(
        n.ctx) is ast.Store)
    # a name stored more often than the module's own assignments: rebound somewhere
    rebound = {name for name, values in assigned.items() if stores[name] > len(values)}
    constants: dict[str, object] = {}
    for name, values in assigned.items():  # in source order: earlier constants resolve
        if len(values) == 1 and values[0] is not None and name not in rebound and (
                name not in imports):
            value = _value(values[0], constants)
            if value is not NOT_LITERAL:
                constants[name] = value
    calls: list[tuple[str, Construction]] = []
    references: list[str] = []
    _collect(tree, constants, calls, references, False)
    return _Summary(constants, imports, tuple(calls), tuple(references))


def _dummy_inputs(tree: ast.Module, imports: dict[str, str]
                  ) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(callee, shape) for each dummy input passed to an instance built in the same
    function (or module-level code): ``Net()(torch.randn(1, 3, 32, 32))`` or ``model =
    Net().to(dev)`` then ``model(x)`` with ``x = torch.randn(...)`` or the factory call
    itself. Names assigned more than once in a scope are not followed."""
    # per scope (a function, or the module's own code): its assignments to a name, and
    # the calls given a first argument; one walk of the tree
    assigned: dict[int, dict[str, list[ast.expr]]] = {}
    called: list[tuple[int, ast.Call]] = []
    stack: list[tuple[ast.AST, int]] = [(tree, id(tree))]
    while stack:
        node, scope = stack.pop()
        kind = type(node)
        if kind is ast.Assign:
            for target in node.targets:  # type: ignore[attr-defined]
                for name in ast.walk(target):
                    if type(name) is ast.Name:
                        assigned.setdefault(scope, {}).setdefault(name.id, []).append(
                            node.value if target is name else None)  # type: ignore[attr-defined]
        elif kind in (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr):
            for name in ast.walk(node.target):  # type: ignore[attr-defined]
                if type(name) is ast.Name:  # another binding: the name is not followed
                    assigned.setdefault(scope, {}).setdefault(name.id, []).append(None)
        elif kind is ast.Call and node.args:  # type: ignore[attr-defined]
            called.append((scope, node))  # type: ignore[arg-type]
        inner = id(node) if kind in (ast.FunctionDef, ast.AsyncFunctionDef) else scope
        if kind not in (ast.ClassDef, ast.Lambda):
            stack.extend((child, inner) for child in ast.iter_child_nodes(node))
    for scope, call in called:
        names = assigned.get(scope, {})
        func = call.func
        if type(func) is ast.Name:
            values = names.get(func.id, ())
            model = _built(values[0]) if len(values) == 1 and values[0] is not None else None
        else:
            model = _built(func)
        if model is None:
            continue
        arg = call.args[0]
        if type(arg) is ast.Name:
            values = names.get(arg.id, ())
            arg = values[0] if len(values) == 1 and values[0] is not None else None
        shape = _factory_shape(arg, imports) if arg is not None else None
        if shape is not None:
            yield model, shape


def _built(node: ast.expr) -> str | None:
    """The dotted callee of ``Net(...)`` (through ``.to(dev)``, ``.cuda()``, ``.eval()``)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
            node.func.attr in INSTANCE_METHODS):
        node = node.func.value
    return _dotted(node.func) if isinstance(node, ast.Call) else None


def _factory_shape(node: ast.expr, imports: dict[str, str]) -> tuple[int, ...] | None:
    """The shape of ``torch.randn(1, 3, 32, 32)`` / ``torch.zeros((2, 8))`` given in int
    literals."""
    if not isinstance(node, ast.Call) or node.keywords and any(
            k.arg in ("size", None) for k in node.keywords):
        return None
    callee = _dotted(node.func)
    if callee is None:
        return None
    head, _, rest = callee.partition(".")
    qual = f"{imports.get(head, head)}.{rest}" if rest else imports.get(head, head)
    if qual not in INPUT_FACTORIES:
        return None
    args = node.args
    if len(args) == 1 and isinstance(args[0], (ast.Tuple, ast.List)):
        args = args[0].elts
    values = tuple(a.value for a in args if isinstance(a, ast.Constant))
    if not values or len(values) != len(args) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        return None
    return values


def _collect(node: ast.AST, constants: dict[str, object], calls: list[tuple[str, Construction]],
             references: list[str], in_function: bool) -> None:
    """Calls and other uses of dotted names, below ``node``; inside a function only
    literals are read (a local name may shadow a constant)."""
    for child in ast.iter_child_nodes(node):
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                  ast.Lambda))
        if isinstance(child, ast.Call):
            callee = _dotted(child.func)
            if callee is not None:
                known = {} if inner else constants
                starred = any(isinstance(a, ast.Starred) for a in child.args) or any(
                    k.arg is None for k in child.keywords)
                calls.append((callee, Construction(
                    tuple(_value(a, known) for a in child.args if not isinstance(a, ast.Starred)),
                    tuple((k.arg, _value(k.value, known)) for k in child.keywords if k.arg),
                    starred)))
                for part in (*child.args, *child.keywords):
                    _collect(part, constants, calls, references, inner)
                if not isinstance(child.func, (ast.Name, ast.Attribute)):
                    _collect(child.func, constants, calls, references, inner)
                elif isinstance(child.func, ast.Attribute):
                    _collect(child.func.value, constants, calls, references, inner)
                continue
        if isinstance(child, (ast.Name, ast.Attribute)):
            dotted = _dotted(child)
            if dotted is not None:
                references.append(dotted)
                continue
        if isinstance(child, ast.ClassDef):
            references.extend(d for d in map(_dotted, child.bases) if d is not None)
        _collect(child, constants, calls, references, inner)


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _value(node: ast.expr, constants: dict[str, object]) -> object:
    """The literal value of ``node`` (numbers, strings, booleans, None, tuples and simple
    arithmetic, module constants); ``NOT_LITERAL`` for anything else."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, (int, float, str, bool, type(None))) \
            else NOT_LITERAL
    if isinstance(node, ast.Name):
        return constants.get(node.id, NOT_LITERAL)
    if isinstance(node, (ast.Tuple, ast.List)):
        values = tuple(_value(e, constants) for e in node.elts)
        return NOT_LITERAL if any(v is NOT_LITERAL for v in values) else values
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _value(node.operand, constants)
        return -inner if _number(inner) else NOT_LITERAL  # type: ignore[operator]
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, constants), _value(node.right, constants)
        if not (_number(left) and _number(right)):
            return NOT_LITERAL
        try:
            if isinstance(node.op, ast.Add):
                return left + right  # type: ignore[operator]
            if isinstance(node.op, ast.Sub):
                return left - right  # type: ignore[operator]
            if isinstance(node.op, ast.Mult):
                return left * right  # type: ignore[operator]
            if isinstance(node.op, ast.FloorDiv):
                return left // right  # type: ignore[operator]
        except ZeroDivisionError:
            return NOT_LITERAL
    return NOT_LITERAL


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
