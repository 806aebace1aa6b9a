"""The screen's ``ast`` checks of the serialization rules (TL604, TL605): each is true on
every file its rule can flag, and follows the rule's own decision closely enough that the
many files that merely save or load a checkpoint never reach libcst for it.

A name is followed through every value the file assigns to it, in any scope (the rules
follow the one binding in effect, always one of these). A name imported from another
module than torch may be anything the project defines. Imports neither libcst nor a rule
(the screen runs before either is loaded).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchlint.analysis.ast_names import argument as _argument, inside as _inside
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import canonical
from torchlint.engine.triage import FileFacts

_SAVES = frozenset({"torch.save", "torch.serialization.save"})
_LOADS = frozenset({"torch.load", "torch.serialization.load"})
# the wrappers TL604 knows (its WRAPPERS), as the triage spells them
_WRAPPERS = frozenset(canonical(q) for q in (
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel",
    "torch.nn.parallel.data_parallel.DataParallel"))
_MAX_HOPS = 6


# ------------------------------------------------------------------ the file's bindings
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _Bindings:
    """What the file binds each name to: the values of ``name = value`` and ``name: T =
    value`` (one target), and the items of ``with item as name``; read at a node, those
    of the function holding it when it binds the name, else those of the whole file (a
    superset of the one binding the rules follow there)."""

    def __init__(self, facts: FileFacts) -> None:
        self.values: dict[str, list[ast.expr]] = {}
        self.opened: dict[str, list[ast.expr]] = {}
        self.scopes = list(facts.nodes(*_SCOPES))
        for node in facts.nodes(ast.Assign):
            targets = node.targets  # type: ignore[attr-defined]
            for target in targets:
                if type(target) is ast.Name:
                    self.values.setdefault(target.id, []).append(node.value)  # type: ignore[attr-defined]
        for node in facts.nodes(ast.AnnAssign):
            target, value = node.target, node.value  # type: ignore[attr-defined]
            if type(target) is ast.Name and value is not None:
                self.values.setdefault(target.id, []).append(value)
        for node in facts.nodes(ast.With, ast.AsyncWith):
            for item in node.items:  # type: ignore[attr-defined]
                if type(item.optional_vars) is ast.Name:
                    self.opened.setdefault(item.optional_vars.id, []).append(item.context_expr)

    def values_at(self, name: str, at: ast.AST) -> list[ast.expr]:
        return self._scoped(self.values.get(name, []), name, at)

    def opened_at(self, name: str, at: ast.AST) -> list[ast.expr]:
        return self._scoped(self.opened.get(name, []), name, at)

    def _scoped(self, found: list[ast.expr], name: str, at: ast.AST) -> list[ast.expr]:
        if not found:
            return found
        holding = [s for s in self.scopes if _inside(at, s)]
        if not holding:
            return found
        scope = max(holding, key=lambda s: (s.lineno, s.col_offset))  # type: ignore[attr-defined]
        own = [v for v in found if _inside(v, scope)]
        arguments = scope.args  # type: ignore[attr-defined]
        if own or any(a.arg == name for a in (
                *arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                *(a for a in (arguments.vararg, arguments.kwarg) if a is not None))):
            return own
        return found


# ------------------------------------------------------------------ calls
def _calls_of(facts: FileFacts, names: frozenset[str]) -> Iterator[ast.Call]:
    """The calls whose callee may be one of ``names``: only a callee spelled with the last
    part of one of them, or a name the file imports or assigns, may resolve to one."""
    lasts = {name.rsplit(".", 1)[1] for name in names}
    bound = facts.aliases.keys() | {n for n, quals in facts.bindings.items()
                                    if not names.isdisjoint(quals)}
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        kind = type(func)
        if (kind is ast.Attribute and func.attr in lasts or kind is ast.Name and (
                func.id in lasts or func.id in bound)) and not names.isdisjoint(
                facts.qualnames_of(func)):
            yield call  # type: ignore[misc]


def _last(node: ast.expr) -> str | None:
    kind = type(node)
    return node.id if kind is ast.Name else (  # type: ignore[attr-defined]
        node.attr if kind is ast.Attribute else None)  # type: ignore[attr-defined]


def _from_elsewhere(qual: str) -> bool:
    """A name of another module than torch, the builtins and os: a project module's
    constant or class, maybe."""
    return "." in qual and not qual.startswith(("torch.", "builtins.", "os."))


# ------------------------------------------------------------------ TL604
def may_flag_tl604(facts: FileFacts, options: Options) -> bool:
    """TL604 reports ``torch.save(name.state_dict(), ...)`` (or such a value in a dict
    display) where ``name`` is assigned a DataParallel/DistributedDataParallel call
    (maybe moved with ``.to()``/``.cuda()``)."""
    saved: set[str] = set()
    for call in _calls_of(facts, _SAVES):
        obj = _argument(call, "obj", 0)
        if obj is None:
            continue
        for value in (obj.values if type(obj) is ast.Dict else [obj]):  # type: ignore[attr-defined]
            if type(value) is ast.Call and type(value.func) is ast.Attribute and (
                    value.func.attr == "state_dict") and type(value.func.value) is ast.Name:
                saved.add(value.func.value.id)
    if not saved:
        return False
    values = _Bindings(facts).values
    return any(_wraps(facts, value) for name in saved for value in values.get(name, ()))


def _wraps(facts: FileFacts, value: ast.expr) -> bool:
    while type(value) is ast.Call and type(value.func) is ast.Attribute and (  # type: ignore[attr-defined]
            value.func.attr in ("to", "cuda")):  # type: ignore[attr-defined]
        value = value.func.value  # type: ignore[attr-defined]
    return type(value) is ast.Call and not _WRAPPERS.isdisjoint(
        facts.qualnames_of(value.func))  # type: ignore[attr-defined]


# ------------------------------------------------------------------ TL605
def may_flag_tl605(facts: FileFacts, options: Options) -> bool:
    """TL605 reports a ``torch.load`` without ``weights_only=`` (or with a literal True)
    and without ``*args``, of a path that this file saves something the weights-only
    unpickler refuses to, or that another script of the folder may save to (a path it can
    name too: a literal, a template, a project constant, through names and ``open``)."""
    loads = [call for call in _calls_of(facts, _LOADS) if _may_load_unsafely(call)]
    if loads:
        allowed = [w for w in facts.nodes(ast.With, ast.AsyncWith) if any(
            type(i.context_expr) is ast.Call and facts.qualnames_of(
                i.context_expr.func) == {"torch.serialization.safe_globals"}
            for i in w.items)]  # type: ignore[attr-defined]
        loads = [call for call in loads if not any(_inside(call, w) for w in allowed)]
    if not loads:
        return False
    bindings = _Bindings(facts)
    for load in loads:
        path = _argument(load, "f", 0)
        if path is not None and _shared_path(facts, bindings, path, 0, set()):
            return True
    # a save of this file to a path a load reads (the rule matches their keys), with
    # something refused in it
    functions = {s.name for s in facts.tree.body if isinstance(  # type: ignore[union-attr]
        s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    read: set[tuple[str, str]] = set()
    memo: dict[int, bool] = {}
    for load in loads:
        path = _argument(load, "f", 0)
        if path is not None:
            read |= _keys(facts, bindings, path, functions, load=True)
    for save in _calls_of(facts, _SAVES):
        obj, path = _argument(save, "obj", 0), _argument(save, "f", 1)
        if obj is not None and path is not None and not read.isdisjoint(
                _keys(facts, bindings, path, functions, load=False)) and _may_refuse(
                facts, bindings, obj, options.module_bases, memo):
            return True
    return False


def _keys(facts: FileFacts, bindings: _Bindings, expr: ast.expr, functions: set[str], *,
          load: bool) -> set[tuple[str, str]]:
    """The path keys (files.path_key) a load or save of ``expr`` may have: the file opened
    by ``with open(path) as name``, for a load also the value the name was bound to."""
    keys = _path_keys(expr, functions)
    if type(expr) is ast.Name:
        for item in bindings.opened_at(expr.id, expr):
            opened = _opened(facts, item)
            if opened is not None:
                keys |= _path_keys(opened, functions)
        if load:
            for value in bindings.values_at(expr.id, expr):
                keys |= _path_keys(value, functions)
    return keys


def _path_keys(expr: ast.expr, functions: set[str]) -> set[tuple[str, str]]:
    """What files.path_key may make of ``expr``, compared as ``ast`` dumps: one key, or
    for a call each key it may have."""
    kind = type(expr)
    if kind is ast.Constant and isinstance(expr.value, str):  # type: ignore[attr-defined]
        return {("s", expr.value)}  # type: ignore[attr-defined]
    if kind is ast.Name:
        return {("n", expr.id)}  # type: ignore[attr-defined]
    template = _template(expr)
    if template is not None:
        return {("t", template)}
    if kind is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        if type(func) is ast.Name and func.id in functions or type(
                func) is ast.Attribute and type(func.value) is ast.Name and (
                func.value.id == "self"):
            return {("f", ast.dump(func)), ("e", ast.dump(expr))}
    return {("e", ast.dump(expr))}


def _template(expr: ast.expr) -> str | None:
    """A formatted path's naming template, every placeholder written ``{}``."""
    kind = type(expr)
    if kind is ast.JoinedStr:
        return "".join(v.value if type(v) is ast.Constant else "{}"  # type: ignore[attr-defined]
                       for v in expr.values)  # type: ignore[attr-defined]
    if kind is ast.BinOp and type(expr.op) is ast.Mod and type(  # type: ignore[attr-defined]
            expr.left) is ast.Constant and isinstance(expr.left.value, str):  # type: ignore[attr-defined]
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", "{}", expr.left.value)  # type: ignore[attr-defined]
    if kind is ast.Call and type(expr.func) is ast.Attribute and (  # type: ignore[attr-defined]
            expr.func.attr == "format") and type(  # type: ignore[attr-defined]
            expr.func.value) is ast.Constant and isinstance(  # type: ignore[attr-defined]
            expr.func.value.value, str):  # type: ignore[attr-defined]
        return re.sub(r"\{[^{}]*\}", "{}", expr.func.value.value)  # type: ignore[attr-defined]
    return None


def _may_load_unsafely(call: ast.Call) -> bool:
    if any(type(a) is ast.Starred for a in call.args) or any(
            kw.arg is None for kw in call.keywords):
        return False
    given = _argument(call, "weights_only", None)
    return given is None or type(given) is ast.Constant and given.value is True


_OPENS = frozenset({"open", "io.open", "builtins.open", "gzip.open", "bz2.open", "lzma.open"})
_JOINS = frozenset({"os.path.join", "posixpath.join"})


def _opened(facts: FileFacts, expr: ast.expr) -> ast.expr | None:
    """The path of ``open(path, ...)`` (and the other openers files.py knows)."""
    if type(expr) is not ast.Call:
        return None
    func = expr.func  # type: ignore[attr-defined]
    if not (type(func) is ast.Name and func.id == "open") and _OPENS.isdisjoint(
            facts.qualnames_of(func)):
        return None
    return _argument(expr, "file", 0)  # type: ignore[arg-type]


def _shared_path(facts: FileFacts, bindings: _Bindings, expr: ast.expr, hops: int,
                 seen: set[int]) -> bool:
    """May ``expr`` name a path another file can name too (files.shared_key)?"""
    if hops > _MAX_HOPS:
        return False
    kind = type(expr)
    if kind is ast.Constant:
        value = expr.value  # type: ignore[attr-defined]
        return not (isinstance(value, str) and ("{" in value or "}" in value))
    if kind is ast.JoinedStr:
        return True
    if kind is ast.BinOp and type(expr.op) is ast.Mod and type(  # type: ignore[attr-defined]
            expr.left) is ast.Constant:  # type: ignore[attr-defined]
        return True
    if kind is ast.Call:
        func = expr.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute and func.attr == "format" and type(
                func.value) is ast.Constant:
            return True
        opened = _opened(facts, expr)
        if opened is not None:
            return _shared_path(facts, bindings, opened, hops + 1, seen)
        if not _JOINS.isdisjoint(facts.qualnames_of(func)):
            return all(type(a) is not ast.Starred for a in expr.args) and (  # type: ignore[attr-defined]
                not expr.keywords) and all(  # type: ignore[attr-defined]
                _shared_path(facts, bindings, a, hops + 1, seen) for a in expr.args)  # type: ignore[attr-defined]
        return False
    if kind in (ast.Name, ast.Attribute) and any(
            _from_elsewhere(q) for q in facts.qualnames_of(expr)):
        return True  # a constant imported from the project
    if kind is not ast.Name or id(expr) in seen:
        return False
    name = expr.id  # type: ignore[attr-defined]
    seen = seen | {id(expr)}
    for item in bindings.opened_at(name, expr):
        opened = _opened(facts, item)
        if opened is not None and _shared_path(facts, bindings, opened, hops + 1, seen):
            return True
    return any(_shared_path(facts, bindings, value, hops + 1, seen)
               for value in bindings.values_at(name, expr))


_MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "eval", "train"})
_COPIES = frozenset({"copy.deepcopy", "copy.copy"})
_MODEL_BUILDERS = frozenset({"timm.create_model", "torch.hub.load"})
_NOT_BUILDERS = frozenset({"get_weight", "get_model_weights", "list_models"})
_NAMESPACES = frozenset({"argparse.Namespace", "types.SimpleNamespace"})
# NumPy functions that return an array (or a NumPy scalar): the weights-only unpickler
# refuses both (files.py reads these too)
NUMPY_ARRAYS = frozenset({
    "array", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace", "stack",
    "concatenate", "vstack", "hstack", "load", "loadtxt", "zeros_like", "ones_like",
    "empty_like", "full_like", "sin", "cos", "exp", "log", "sqrt", "abs", "histogram",
    "cumsum", "clip", "where", "eye", "meshgrid", "frombuffer", "fromfile"})
NUMPY_RANDOM = frozenset({"rand", "randn", "randint", "random", "normal", "uniform",
                           "choice", "permutation"})
_ARRAY_METHODS = frozenset({"astype", "reshape", "copy", "transpose", "squeeze", "flatten",
                            "ravel"})


def _followed(facts: FileFacts, bindings: _Bindings, expr: ast.expr) -> Iterator[ast.expr]:
    """What ``expr`` may be, through module moves, copies and the names' values."""
    todo, seen = [(expr, 0)], set()
    while todo:
        expr, hops = todo.pop()
        kind = type(expr)
        if hops <= _MAX_HOPS and kind is ast.Call:
            func = expr.func  # type: ignore[attr-defined]
            if type(func) is ast.Attribute and func.attr in _MOVES:
                todo.append((func.value, hops + 1))
                continue
            if expr.args and not _COPIES.isdisjoint(facts.qualnames_of(func)):  # type: ignore[attr-defined]
                todo.append((expr.args[0], hops + 1))  # type: ignore[attr-defined]
                continue
        if hops <= _MAX_HOPS and kind is ast.Name and id(expr) not in seen:
            seen.add(id(expr))
            todo.extend((v, hops + 1) for v in bindings.values_at(expr.id, expr))  # type: ignore[attr-defined]
        yield expr


def _may_refuse(facts: FileFacts, bindings: _Bindings, expr: ast.expr,
                bases: frozenset[str], memo: dict[int, bool]) -> bool:
    """May the weights-only unpickler refuse what ``expr`` holds (files.refused_content)?
    Containers are searched to any depth (the rule stops at a few: a superset), each
    expression once (``memo``)."""
    if id(expr) in memo:
        return memo[id(expr)]
    memo[id(expr)] = False  # a container holding itself refuses nothing more
    for value in _followed(facts, bindings, expr):
        kind = type(value)
        if kind is ast.Dict:
            items: list[ast.expr] = value.values  # type: ignore[attr-defined]
        elif kind in (ast.List, ast.Tuple, ast.Set):
            items = [e for e in value.elts if type(e) is not ast.Starred]  # type: ignore[attr-defined]
        elif kind is ast.Call:
            if _refused_call(facts, value, bases):  # type: ignore[arg-type]
                memo[id(expr)] = True
                return True
            func = value.func  # type: ignore[attr-defined]
            items = [kw.value for kw in value.keywords if kw.arg is not None] if (  # type: ignore[attr-defined]
                type(func) is ast.Name and func.id == "dict") else []
        else:
            continue
        if any(_may_refuse(facts, bindings, item, bases, memo) for item in items):
            memo[id(expr)] = True
            return True
    return False


def _refused_call(facts: FileFacts, call: ast.Call, bases: frozenset[str]) -> bool:
    """May ``call`` make an object the weights-only unpickler refuses: a NumPy array, a
    Namespace, a module (a layer, a builder's, a class of the file or of the project, one
    deriving from a module base of the settings), an optimizer or a scheduler?"""
    func = call.func
    if _makes_array(facts, call):
        return True
    if type(func) is ast.Attribute and func.attr == "parse_args" and (
            "argparse" in facts.top_modules):
        return True
    if type(func) is ast.Name and func.id in _classes(facts):
        return True  # a class of this file (a module class, or any other)
    for qual in facts.qualnames_of(func):
        last = qual.rpartition(".")[2]
        upper = last[:1].isupper()
        if upper and (qual.startswith(("torch.nn.", "torch.optim.")) or _from_elsewhere(qual)):
            return True  # a layer, an optimizer, a scheduler, a project class
        if qual in _MODEL_BUILDERS or qual in _NAMESPACES or qual in bases or (
                qual.startswith("torchvision.models.") and not upper
                and last not in _NOT_BUILDERS):
            return True
    return False


def _makes_array(facts: FileFacts, call: ast.Call) -> bool:
    """A NumPy array made on the spot, maybe reshaped, cast or copied."""
    func = call.func
    if type(func) is ast.Attribute and func.attr in _ARRAY_METHODS:
        return type(func.value) is ast.Call and _makes_array(facts, func.value)
    for qual in facts.qualnames_of(func):
        module, _, name = qual.rpartition(".")
        if module == "numpy" and name in NUMPY_ARRAYS or (
                module == "numpy.random" and name in NUMPY_RANDOM):
            return True
    return False


def _classes(facts: FileFacts) -> frozenset[str]:
    """The classes of the file (by name, wherever they are)."""
    return frozenset(name for name, _ in facts.class_bases)
