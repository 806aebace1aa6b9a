"""Which files a module writes with ``torch.save`` itself, shared by the loading rules.

A ``torch.load`` of a path this same file also saves to reads the program's own output
(a best model reloaded after training, a dataset's processed cache), not a checkpoint
from elsewhere: it holds no stranger's pickle, and its tensors come back where this
program put them.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import cast

import libcst as cst

from torchlint.analysis.bindings import module_value
from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    get_arg,
    iter_nodes,
    method_call,
    self_attribute,
    semantic_children,
    string_value,
)
from torchlint.analysis.project import Dependency
from torchlint.analysis.torch_facts import is_layer_call
from torchlint.notebook import Notebook, NotebookError
from torchlint.rules.serialization.screens import NUMPY_ARRAYS as _NUMPY_ARRAYS
from torchlint.rules.serialization.screens import NUMPY_RANDOM as _NUMPY_RANDOM

SAVE_FUNCTIONS = frozenset({"torch.save", "torch.serialization.save"})
_OPEN_FUNCTIONS = frozenset({"open", "io.open", "builtins.open", "gzip.open", "bz2.open",
                             "lzma.open"})


def path_key(expr: cst.BaseExpression, scope: cst.CSTNode | None = None,
             functions: frozenset[str] = frozenset()) -> str:
    """The path an expression names, as comparable text: a string's value, a formatting
    template, the method of the class that returns it, otherwise the code with its
    whitespace and comments left out. A bare name counts only in its own
    function (``scope``): two functions' ``path`` parameters are different paths.
    ``functions``: the names of the file's own top-level functions."""
    value = string_value(expr)
    if value is not None:
        return "s:" + value
    if isinstance(expr, cst.Call) and (self_attribute(expr.func) is not None or isinstance(
            expr.func, cst.Name) and expr.func.value in functions):
        # self.checkpoint_path(epoch), checkpoint_path(run): the files one of the file's own
        # functions names, whatever its arguments
        return "f:" + "".join(cst.Module([]).code_for_node(expr.func).split())
    template = _template(expr)
    if template is not None:  # "ckpt_%d.pth" % epoch: one family of files, whatever the epoch
        return "t:" + template
    text = "".join(cst.Module([]).code_for_node(expr).split())
    if isinstance(expr, cst.Name):
        return f"n{id(scope)}:{text}"
    return "e:" + text


def _template(expr: cst.BaseExpression) -> str | None:
    """The naming template of a formatted path (``"g_%d.pth" % n``, ``"g_{}.pth".format(n)``,
    ``f"g_{n}.pth"``), with every placeholder written ``{}``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        left = string_value(expr.left)
        return None if left is None else re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]", "{}", left)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.attr.value == "format":
        left = string_value(expr.func.value)
        return None if left is None else re.sub(r"\{[^{}]*\}", "{}", left)
    if isinstance(expr, cst.FormattedString):
        return "".join(part.value if isinstance(part, cst.FormattedStringText) else "{}"
                       for part in expr.parts)
    return None


def _save_keys(ctx: FileContext) -> dict[int, str]:
    """The path key of each ``torch.save`` call of the module (by the call's id), seeing
    through ``with open(path) as f``: one pass over the syntax nodes, each carrying its
    function and the file handles bound around it (name -> path key)."""
    saved: dict[int, str] = {}
    functions = own_functions(ctx)
    Handles = dict[str, str]
    stack: list[tuple[cst.CSTNode, cst.FunctionDef | None, Handles]] = [(ctx.module, None, {})]
    while stack:
        node, scope, handles = stack.pop()
        kind = type(node)  # exact types: one pass over every node of the module
        if kind is cst.FunctionDef:
            scope = node  # type: ignore[assignment]
        elif kind is cst.With:
            handles = dict(handles)
            for item in node.items:
                opened = file_opened(ctx, item.item)
                if opened is not None and item.asname is not None and isinstance(
                        item.asname.name, cst.Name):
                    handles[item.asname.name.value] = path_key(opened, scope, functions)
        elif kind is cst.Call and ctx.qualified_name(node.func) in SAVE_FUNCTIONS:  # type: ignore[attr-defined]
            target = get_arg(node, "f", 1)
            if target is not None:
                expr = target.value
                if isinstance(expr, cst.Name) and expr.value in handles:
                    saved[id(node)] = handles[expr.value]
                else:
                    saved[id(node)] = path_key(expr, scope, functions)
        stack.extend((child, scope, handles) for child in semantic_children(node))
    return saved


def own_functions(ctx: FileContext) -> frozenset[str]:
    """The file's top-level functions (a call of one names the files it computes)."""
    return ctx.cached("serialization-own-functions", lambda: frozenset(
        stmt.name.value for stmt in ctx.module.body if isinstance(stmt, cst.FunctionDef)))


def save_keys(ctx: FileContext) -> dict[int, str]:
    """The path key each ``torch.save`` call of the file writes (by the call's id)."""
    return ctx.cached("torch-save-keys", lambda: _save_keys(ctx))


def file_opened(ctx: FileContext, expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The path of ``open(path, ...)``."""
    if not isinstance(expr, cst.Call):
        return None
    name = ctx.qualified_name(expr.func) or (
        expr.func.value if isinstance(expr.func, cst.Name) else None)
    if name not in _OPEN_FUNCTIONS:
        return None
    path = get_arg(expr, "file", 0)
    return path.value if path is not None else None


def saved_paths(ctx: FileContext) -> frozenset[str]:
    return ctx.cached("torch-saved-paths", lambda: frozenset(save_keys(ctx).values()))


def loads_own_save(ctx: FileContext, load: cst.Call) -> bool:
    """Whether a ``torch.load`` call reads a path this file also writes with ``torch.save``
    (called while ``load`` is being visited, so enclosing ``with open(...)`` items are seen)."""
    saved = saved_paths(ctx)
    return bool(saved) and not saved.isdisjoint(load_keys(ctx, load))


def loads_project_save(ctx: FileContext, load: cst.Call) -> bool:
    """Whether a ``torch.load`` call reads a path this file, or another script of its
    folder (:func:`project_saves`), writes with ``torch.save`` (called while ``load`` is
    being visited)."""
    if loads_own_save(ctx, load):
        return True
    source = get_arg(load, "f", 0)
    key = shared_key(ctx, source.value) if source is not None else None
    return key is not None and bool(project_saves(ctx, key))


def load_keys(ctx: FileContext, load: cst.Call) -> frozenset[str]:
    """The path keys a ``torch.load`` call may read, to compare with :func:`save_keys`
    (called while ``load`` is being visited): the file handle's path, the path a name was
    bound to, the argument itself."""
    source = get_arg(load, "f", 0)
    if source is None:
        return frozenset()
    expr = source.value
    scope, functions = ctx.current_function, own_functions(ctx)
    if isinstance(expr, cst.Name):
        for anc in reversed(ctx.ancestors):
            if isinstance(anc, cst.With):
                for item in anc.items:
                    opened = file_opened(ctx, item.item)
                    if (opened is not None and item.asname is not None
                            and isinstance(item.asname.name, cst.Name)
                            and item.asname.name.value == expr.value):
                        return frozenset({path_key(opened, scope, functions)})
        bound = ctx.binding(expr.value)  # ckpt = os.path.join(out, "ckpt.pt"); load(ckpt)
        if bound is not None and bound.kind == "assign" and bound.value is not None:
            return frozenset({path_key(bound.value, scope, functions),
                              path_key(expr, scope, functions)})
    return frozenset({path_key(expr, scope, functions)})


_HOST_READS = frozenset({"numpy"})
_FROM_NUMPY = frozenset({"torch.from_numpy", "torch.as_tensor"})


def holds_numpy(ctx: FileContext, load: cst.Call) -> bool:
    """Whether what a ``torch.load`` call returns is NumPy data, not tensors:
    ``torch.load(f).numpy()``, or ``data = torch.load(f)`` read by
    ``torch.from_numpy(data[...])`` in the same scope. Such a file has no tensors to place
    on a device, and the weights-only unpickler would refuse its arrays."""
    parent = ctx.parent(load)
    if isinstance(parent, cst.Attribute) and parent.value is load:
        return parent.attr.value in _HOST_READS
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return False
    name = parent.targets[0].target.value
    scope: cst.CSTNode = ctx.current_function or ctx.module
    for call in iter_nodes(scope):
        if not isinstance(call, cst.Call):
            continue
        if ctx.qualified_name(call.func) not in _FROM_NUMPY or not call.args:
            continue
        value = call.args[0].value
        if isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Name) and value.value == name:
            return True
    return False


# ------------------------------------------------------------------ what a save holds
_MOVES = ("to", "cuda", "cpu", "half", "float", "double", "eval", "train")
_COPIES = frozenset({"copy.deepcopy", "copy.copy"})
_MAX_HOPS = 6
# functions that return a model object (torchvision's builders: torchvision.models.resnet18)
_MODEL_BUILDERS = frozenset({"timm.create_model", "torch.hub.load"})
_BUILDER_PACKAGES = ("torchvision.models.",)
_NOT_BUILDERS = frozenset({"get_weight", "get_model_weights", "list_models"})
_NAMESPACES = frozenset({"argparse.Namespace", "types.SimpleNamespace"})


def _follow(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode | None
            ) -> tuple[cst.BaseExpression, cst.CSTNode | None]:
    """What ``expr`` provably is, seeing through names bound in straight-line code (or
    once at module level), module moves and copies: ``model = Net(); m = model.cuda()``
    -> ``Net()``. ``at`` is where ``expr`` is read (None: the node being visited); the
    place the result is read from comes back with it."""
    for _ in range(_MAX_HOPS):
        move = method_call(expr, *_MOVES)
        if move is not None:
            expr = move.value
            continue
        if isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) in _COPIES \
                and expr.args:
            expr = expr.args[0].value
            continue
        if not isinstance(expr, cst.Name):
            return expr, at
        bound = ctx.binding(expr.value, at)
        if bound is None and ctx.current_function is not None:
            found = module_value(ctx, expr.value)
            if found is None:
                return expr, at
            at, expr = found  # later hops search the module body, where it stands
            continue
        if bound is None or bound.kind != "assign" or bound.value is None:
            return expr, at
        at, expr = bound.node, bound.value
    return expr, at


def is_module_value(ctx: FileContext, expr: cst.BaseExpression) -> bool:
    """``expr`` (read at the node being visited) is provably a module object: a layer or
    module class constructed, moved or copied, directly or through names."""
    value, _ = _follow(ctx, expr, None)
    return is_layer_call(ctx, value)


def refused_content(ctx: FileContext, expr: cst.BaseExpression,
                    at: cst.CSTNode | None = None, depth: int = 0) -> str | None:
    """What in ``expr`` (an object given to ``torch.save``, read at the node being visited)
    the weights-only unpickler refuses, in words ("a whole module", "an argparse.Namespace",
    ...), or None when everything it holds is provably or possibly acceptable (tensors,
    state dicts, numbers, strings, containers of them, and anything unknown)."""
    if depth > 4:
        return None
    value, at = _follow(ctx, expr, at)
    if isinstance(value, (cst.Dict, cst.List, cst.Tuple, cst.Set)):
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                found = refused_content(ctx, element.value, at, depth + 1)
            elif isinstance(element, cst.Element):
                found = refused_content(ctx, element.value, at, depth + 1)
            else:
                found = None  # **spread, *spread: unknown
            if found is not None:
                return found
        return None
    if not isinstance(value, cst.Call):
        return None
    if _makes_numpy_array(ctx, value):
        return "a NumPy array"
    qual = ctx.qualified_name(value.func) or ""
    if is_layer_call(ctx, value) or qual in _MODEL_BUILDERS or (
            qual.startswith(_BUILDER_PACKAGES) and qual.rsplit(".", 1)[1][:1].islower()
            and qual.rsplit(".", 1)[1] not in _NOT_BUILDERS):
        return "a whole module"
    if qual.startswith("torch.optim.lr_scheduler."):
        return "a learning-rate scheduler object" if qual.rsplit(".", 1)[1][:1].isupper() \
            else None
    if qual.startswith("torch.optim.") and qual.count(".") == 2 and \
            qual.rsplit(".", 1)[1][:1].isupper():
        return "an optimizer object"
    if qual in _NAMESPACES or _parses_arguments(ctx, value):
        return "an argparse.Namespace"
    if qual == "builtins.dict":
        return next((found for arg in value.args if arg.keyword is not None
                     for found in (refused_content(ctx, arg.value, at, depth + 1),)
                     if found is not None), None)
    if isinstance(value.func, cst.Name) and value.func.value in _local_classes(ctx) \
            and ctx.lookup(value.func.value) is None:
        return f"an instance of the project's class {value.func.value}"
    return None


_ARRAY_METHODS = ("astype", "reshape", "copy", "transpose", "squeeze", "flatten", "ravel")


def _makes_numpy_array(ctx: FileContext, call: cst.Call) -> bool:
    """``np.sin(x).astype("float64")``, ``np.zeros(n)``, ``np.random.rand(3)``: a NumPy
    array made on the spot (or reshaped, cast or copied)."""
    method = method_call(call, *_ARRAY_METHODS)
    if method is not None:
        return isinstance(method.value, cst.Call) and _makes_numpy_array(ctx, method.value)
    qual = ctx.qualified_name(call.func) or ""
    module, _, name = qual.rpartition(".")
    return module == "numpy" and name in _NUMPY_ARRAYS or (
        module == "numpy.random" and name in _NUMPY_RANDOM)


def _parses_arguments(ctx: FileContext, call: cst.Call) -> bool:
    """``parser.parse_args()`` in a file that uses argparse (its result is a Namespace)."""
    method = method_call(call, "parse_args")
    return method is not None and ctx.imports_from("argparse")


def _local_classes(ctx: FileContext) -> frozenset[str]:
    """Classes defined at the top level of the file (their instances pickle by reference)."""
    return ctx.cached("serialization-local-classes", lambda: frozenset(
        stmt.name.value for stmt in ctx.module.body if isinstance(stmt, cst.ClassDef)))


# allow-lists for the weights-only unpickler: a load inside one may read what they list
SAFE_GLOBALS = frozenset({"torch.serialization.safe_globals"})
_ADD_SAFE_GLOBALS = frozenset({"torch.serialization.add_safe_globals"})


def under_safe_globals(ctx: FileContext) -> bool:
    """The node being visited is inside ``with torch.serialization.safe_globals([...])``."""
    return any(isinstance(anc, cst.With) and any(
        isinstance(item.item, cst.Call) and ctx.qualified_name(item.item.func) in SAFE_GLOBALS
        for item in anc.items) for anc in ctx.ancestors)


def adds_safe_globals(ctx: FileContext) -> bool:
    """The file extends the weights-only allow-list (``add_safe_globals([...])``)."""
    return ctx.cached("serialization-adds-safe-globals", lambda: any(
        type(node) is cst.Call and ctx.qualified_name(node.func) in _ADD_SAFE_GLOBALS  # type: ignore[attr-defined]
        for node in iter_nodes(ctx.module)))


# ------------------------------------------------------------------ the project's saves
_JOINS = frozenset({"os.path.join", "posixpath.join"})
_BINDERS = (cst.Import, cst.ImportFrom, cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For,
            cst.With, cst.FunctionDef, cst.ClassDef)
_MAX_SAVING_FILES = 8


def shared_key(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode | None = None
               ) -> str | None:
    """The path ``expr`` (read at ``at``, default the node being visited) names in a form
    another file of the project can name too, or None: a literal path (``"ckpt/model.pth"``,
    ``os.path.join("ckpt", "model.pth")``, through names bound to one, the file handle of
    ``with open(path) as f``), a naming template (``f"ckpt/epoch_{n}.pth"``), or a constant
    imported from the project (``from config import CKPT``)."""
    text = _path_text(ctx, expr, at, 0)
    if text is None:
        return None
    if text.startswith("q:"):
        return text
    text = posixpath.normpath(text)
    return ("t:" if "{}" in text else "s:") + text


def _path_text(ctx: FileContext, expr: cst.BaseExpression, at: cst.CSTNode | None,
               hops: int) -> str | None:
    if hops > _MAX_HOPS:
        return None
    value = string_value(expr)
    if value is not None:
        return None if "{" in value or "}" in value else value
    template = _template(expr)
    if template is not None:
        return template
    opened = file_opened(ctx, expr)  # torch.save(obj, open(path, "wb"))
    if opened is not None:
        return _path_text(ctx, opened, at, hops + 1)
    if isinstance(expr, (cst.Name, cst.Attribute)):
        constant = _project_constant(ctx, expr)
        if constant is not None:
            return "q:" + constant
    if isinstance(expr, cst.Name):
        opened = _handle_opened(ctx, expr.value) if at is None else None
        if opened is not None:  # with open(path, "wb") as f: torch.save(obj, f)
            return _path_text(ctx, opened, None, hops + 1)
        bound = ctx.binding(expr.value, at)
        if bound is None and ctx.current_function is not None:
            found = module_value(ctx, expr.value)
            return None if found is None else _path_text(ctx, found[1], found[0], hops + 1)
        if bound is None or bound.value is None:
            return None
        if bound.kind == "with":
            opened = file_opened(ctx, bound.value)
            return None if opened is None else _path_text(ctx, opened, bound.node, hops + 1)
        if bound.kind != "assign":
            return None
        return _path_text(ctx, bound.value, bound.node, hops + 1)
    if isinstance(expr, cst.Call) and ctx.qualified_name(expr.func) in _JOINS and expr.args \
            and all(arg.keyword is None and not arg.star for arg in expr.args):
        parts = [_path_text(ctx, arg.value, at, hops + 1) for arg in expr.args]
        if not all(part is not None and not part.startswith("q:") for part in parts):
            return None
        return posixpath.join(*cast("list[str]", parts))
    return None


def _handle_opened(ctx: FileContext, name: str) -> cst.BaseExpression | None:
    """The path of ``with open(path) as name`` around the node being visited."""
    for anc in reversed(ctx.ancestors):
        if isinstance(anc, cst.With):
            for item in anc.items:
                if (item.asname is not None and isinstance(item.asname.name, cst.Name)
                        and item.asname.name.value == name):
                    return file_opened(ctx, item.item)
    return None


def _project_constant(ctx: FileContext, expr: cst.Name | cst.Attribute) -> str | None:
    """``config.CKPT`` for ``CKPT`` after ``from config import CKPT`` (or for
    ``config.CKPT`` after ``import config``), when ``config`` is a module of the project."""
    qual = ctx.qualified_name(expr)
    if qual is None or "." not in qual or ctx.project is None:
        return None
    module = qual.rpartition(".")[0]
    if module.split(".", 1)[0] in ("torch", "builtins", "os") or not ctx.project.knows_top_level(
            module.split(".", 1)[0]):
        return None
    # a module's own name, not an attribute of an object (cfg.MODEL.WEIGHTS may change)
    return qual if ctx.project.project.find_module(module, ctx.project.roots) else None


def _needle(key: str) -> str | None:
    """Text every spelling of a save to the path ``key`` names contains: its longest
    literal piece (a file name, a folder, a template's fixed part)."""
    if key.startswith("q:"):
        return key.rsplit(".", 1)[1]
    pieces = [p for part in key[2:].split("{}") for p in part.split("/")]
    best = max(pieces, key=len, default="")
    return best if len(best) >= 3 else None


def project_saves(ctx: FileContext, key: str) -> list[tuple[str, str | None]]:
    """The saves of the path ``key`` (a :func:`shared_key`) in the other scripts of this
    file's folder: the file's name, and what the save holds that the weights-only
    unpickler refuses (None for a save that holds nothing refused). Only files whose text names the path are parsed; every
    file read becomes a dependency of this file's result."""
    needle = _needle(key)
    if needle is None or ctx.project is None:
        return []
    view = ctx.project
    found: list[tuple[str, str | None]] = []
    for path, data, dependency in view.siblings_containing(needle)[:_MAX_SAVING_FILES]:
        saves, learned = view.project.derived(
            "torch-save-contents", dependency,
            lambda path=path, data=data: _saves_in(ctx, path, data))
        view.learned(learned)
        found.extend((os.path.basename(path), what) for saved, what in saves if saved == key)
    return found


def _saves_in(ctx: FileContext, path: str, data: bytes
              ) -> tuple[tuple[tuple[str, str | None], ...], tuple[Dependency, ...]]:
    """The ``torch.save`` calls of another file: the shared key of each path, what the
    save holds that the weights-only unpickler refuses; and the files that answer read."""
    try:
        module = cst.parse_module(
            Notebook.from_bytes(path, data).program if path.endswith(".ipynb") else data)
    except (cst.ParserSyntaxError, NotebookError, RecursionError, ValueError, UnicodeError):
        return (), ()
    project = ctx.project.project if ctx.project is not None else None
    other = FileContext(path, module, ctx.options, project)
    saves: list[tuple[str, str | None]] = []

    def walk(node: cst.CSTNode) -> None:
        # the walk state the engine keeps for rules: where the walk is, the names a
        # function binds
        other.ancestors.append(node)
        if isinstance(node, _BINDERS):
            other.note_local_binding(node)
        function = isinstance(node, (cst.FunctionDef, cst.Lambda))
        if function:
            other.enter_function(node)  # type: ignore[arg-type]
        if isinstance(node, cst.Call) and other.qualified_name(node.func) in SAVE_FUNCTIONS:
            saved, target = get_arg(node, "obj", 0), get_arg(node, "f", 1)
            key = shared_key(other, target.value) if target is not None else None
            if key is not None and saved is not None:
                saves.append((key, refused_content(other, saved.value)))
        for child in semantic_children(node):
            walk(child)
        if function:
            other.leave_function()
        other.ancestors.pop()

    try:
        walk(module)
    except RecursionError:
        return (), ()
    learned = tuple(other.project.dependencies.values()) if other.project is not None else ()
    return tuple(saves), learned
