"""The screen's checks of the device rules (TL301, TL302, TL303, TL305, TL310): each says,
from the ``ast`` facts of a file, whether its rule can report there, mirroring the rule's
decision in ``ast`` terms and erring only towards yes (see ``triage.check``).

They import neither libcst nor a rule: the screen runs them before either is loaded.
"""

from __future__ import annotations

import ast
from collections.abc import Generator, Iterable, Iterator

from torchlint.analysis.ast_names import (
    NEW_SCOPES as _SCOPES,
    last_name as _word,
    scope_nodes as _scope_nodes,
    start as _start,
    target_names as _names_in,
)
from torchlint.analysis.options import Options
from torchlint.engine.triage import FileFacts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
_DTYPES = frozenset(f"torch.{name}" for name in (
    "float", "float32", "float64", "double", "float16", "half", "bfloat16", "int", "int8",
    "int16", "int32", "int64", "long", "short", "uint8", "bool", "complex64", "complex128",
    "cfloat", "cdouble", "float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"))
_DEVICE_PREFIXES = ("cuda", "cpu", "mps", "xpu", "meta")


# ------------------------------------------------------------------ helpers
def _text(node: ast.AST) -> str:
    """An expression's source without whitespace, as the rules compare spellings."""
    parts: list[str] = []
    while type(node) is ast.Attribute:
        parts.append(node.attr)  # type: ignore[attr-defined]
        node = node.value  # type: ignore[attr-defined]
    if type(node) is ast.Name:
        return ".".join([node.id, *reversed(parts)])  # type: ignore[attr-defined]
    return "".join(ast.unparse(node).split()) + "".join("." + p for p in reversed(parts))


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _has_keyword(call: ast.Call, name: str) -> bool:
    """As the rules' ``has_keyword``: given by name, or maybe through ``**kwargs``."""
    return any(k.arg == name or k.arg is None for k in call.keywords)


def _first_argument(call: ast.Call) -> ast.expr | None:
    """What libcst calls ``call.args[0].value``: the first argument written, any kind."""
    if call.args:
        first = call.args[0]
        return first.value if type(first) is ast.Starred else first  # type: ignore[attr-defined]
    return call.keywords[0].value if call.keywords else None


def _holds(outer: ast.AST, node: ast.AST) -> bool:
    """``node`` lies within ``outer``'s source span."""
    return _start(outer) <= _start(node) and (
        (node.end_lineno, node.end_col_offset) <= (  # type: ignore[attr-defined]
            outer.end_lineno, outer.end_col_offset))  # type: ignore[attr-defined]


def _innermost_function(facts: FileFacts, node: ast.AST) -> ast.AST | None:
    """The innermost function whose span holds ``node`` (None: module level)."""
    found = None
    for function in facts.nodes(*_FUNCTIONS):
        if _holds(function, node) and (found is None or _start(function) > _start(found)):
            found = function
    return found


def _is_string(node: ast.AST | None, *prefixes: str) -> bool:
    return type(node) is ast.Constant and isinstance(node.value, str) and (  # type: ignore[attr-defined]
        node.value.startswith(prefixes))  # type: ignore[attr-defined]


def _calls_of(facts: FileFacts, func: ast.expr, wanted: frozenset[str]) -> bool:
    return not wanted.isdisjoint(facts.qualnames_of(func))


def _project_or_foreign(qualnames: Iterable[str]) -> bool:
    """A name imported from elsewhere than torch or the builtins (a project function may
    return anything)."""
    return any(not q.startswith(("torch.", "builtins.")) for q in qualnames)


# ------------------------------------------------------------------ loaders and batches
_BATCH_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "track"})


def _module_functions(facts: FileFacts) -> frozenset[str]:
    assert facts.tree is not None
    return frozenset(s.name for s in facts.tree.body if isinstance(s, _FUNCTIONS))


def _may_return_loader(facts: FileFacts, call: ast.Call) -> bool:
    """A call that may give a plain DataLoader: of DataLoader itself without a
    ``collate_fn``/``pin_memory_device``, of a module-level function of the file, or of a
    name from another module (a project function)."""
    func = call.func
    quals = facts.qualnames_of(func)
    if not _DATA_LOADERS.isdisjoint(quals) and not any(
            k.arg in ("collate_fn", "pin_memory_device") for k in call.keywords):
        return True
    if _project_or_foreign(quals):
        return True
    return type(func) is ast.Name and func.id in _module_functions(facts)  # type: ignore[attr-defined]


def _assigned_calls(facts: FileFacts) -> dict[str, list[ast.Call]]:
    """For each name or attribute (by text) of the file, the calls assigned to it or
    unpacked into it (``a, b = build()``): computed once per file."""
    return facts.once("assigned calls", lambda: _find_assigned_calls(facts))


def _find_assigned_calls(facts: FileFacts) -> dict[str, list[ast.Call]]:
    found: dict[str, list[ast.Call]] = {}
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        value = node.value  # type: ignore[attr-defined]
        if type(value) is not ast.Call:
            continue
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            elements = target.elts if type(target) in (ast.Tuple, ast.List) else [target]
            for element in elements:
                if type(element) is ast.Starred:
                    element = element.value
                if type(element) in (ast.Name, ast.Attribute):
                    found.setdefault(_text(element), []).append(value)
    return found


def _target_names(target: ast.expr) -> set[str]:
    """``x`` or the names of ``x, y`` / ``[x, *rest]`` (not nested ones)."""
    if type(target) is ast.Name:
        return {target.id}  # type: ignore[attr-defined]
    if type(target) in (ast.Tuple, ast.List):
        return {(e.value if type(e) is ast.Starred else e).id  # type: ignore[attr-defined]
                for e in target.elts  # type: ignore[attr-defined]
                if type(e.value if type(e) is ast.Starred else e) is ast.Name}  # type: ignore[attr-defined]
    return set()


# ------------------------------------------------------------------ TL310
_MANAGING = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric", "ignite",
             "composer", "deepspeed")
_KEEPING_METHODS = frozenset({"float", "long", "half", "double", "int", "view", "reshape",
                              "unsqueeze", "squeeze", "permute", "flatten", "contiguous",
                              "transpose", "clone", "detach"})


def _module_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at module level (inside if/try/with/for blocks too)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_statements(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", ()):
            yield from _module_statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _module_statements(case.body)


def _bound_names(stmt: ast.stmt) -> Iterator[str]:
    """The names a module-level statement binds, other than by an import."""
    if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
        yield stmt.name
        return
    targets: list[ast.AST] = []
    if type(stmt) is ast.Assign:
        targets = list(stmt.targets)  # type: ignore[attr-defined]
    elif type(stmt) in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor):
        targets = [stmt.target]  # type: ignore[attr-defined]
    elif type(stmt) in (ast.With, ast.AsyncWith):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]  # type: ignore[attr-defined]
    for handler in getattr(stmt, "handlers", ()):
        if handler.name:
            yield handler.name
    for target in targets:
        for node in ast.walk(target):
            if type(node) is ast.Name:
                yield node.id  # type: ignore[attr-defined]


def _placed_by_a_library(facts: FileFacts) -> bool:
    """The file surely imports, at module level, a library that places models and batches
    on the device itself (the rule then stays silent): a name bound only by imports of one
    name under accelerate, Lightning, Fabric..."""
    if facts.top_modules.isdisjoint(_MANAGING):
        return False
    assert facts.tree is not None
    imported: dict[str, set[str]] = {}
    other: set[str] = set()
    for stmt in _module_statements(facts.tree.body):
        if type(stmt) is ast.Import:
            for alias in stmt.names:  # type: ignore[attr-defined]
                bound = alias.asname or alias.name.split(".", 1)[0]
                imported.setdefault(bound, set()).add(
                    alias.name if alias.asname else bound)
        elif type(stmt) is ast.ImportFrom:
            for alias in stmt.names:  # type: ignore[attr-defined]
                module = stmt.module or ""  # type: ignore[attr-defined]
                qual = f"{'.' * stmt.level}{module}.{alias.name}"  # type: ignore[attr-defined]
                imported.setdefault(alias.asname or alias.name, set()).add(qual)
        else:
            other.update(_bound_names(stmt))
    return any(len(quals) == 1 and bound not in other and next(iter(quals)).split(".", 1)[0]
               in _MANAGING for bound, quals in imported.items())


def _move_device(facts: FileFacts, call: ast.Call) -> ast.expr | None:
    """The device of ``m.to(device)`` / ``m.cuda()`` (None: no move, or a dtype)."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr not in ("to", "cuda"):  # type: ignore[attr-defined]
        return None
    if func.attr == "cuda":  # type: ignore[attr-defined]
        return _first_argument(call) or ast.Constant("cuda")
    device = _keyword(call, "device")
    if device is None and call.args and type(call.args[0]) is not ast.Starred:
        device = call.args[0]
    if device is None:
        return None
    quals = facts.qualnames_of(device)
    return None if quals and quals <= _DTYPES else device


def _surely_cpu(facts: FileFacts, device: ast.expr) -> bool:
    """``"cpu"`` or ``torch.device("cpu")``."""
    if type(device) is ast.Constant:
        return isinstance(device.value, str) and device.value.split(":")[0] == "cpu"  # type: ignore[attr-defined]
    if type(device) is ast.Call and "torch.device" in facts.qualnames_of(device.func):  # type: ignore[attr-defined]
        first = _keyword(device, "type") or (device.args[0] if device.args else None)  # type: ignore[arg-type,attr-defined]
        return first is not None and _surely_cpu(facts, first)
    return False


def _model_moves(facts: FileFacts) -> dict[str, list[ast.Call]]:
    """The models moved to a device anywhere in the file (by text), with the move calls:
    ``m.to(dev)`` / ``m.cuda()`` as statements, ``m = Net().to(dev)``,
    ``m = DDP(net.to(dev))`` (as ``training_objects.model_moves``)."""
    moves: dict[str, list[ast.Call]] = {}
    for node in facts.nodes(ast.Expr, ast.Assign):
        value = node.value  # type: ignore[attr-defined]
        if type(value) is not ast.Call:
            continue
        if type(node) is ast.Expr:
            receiver = value.func.value if type(value.func) is ast.Attribute else None
            if type(receiver) in (ast.Name, ast.Attribute):
                device = _move_device(facts, value)
                if device is not None and not _surely_cpu(facts, device):
                    moves.setdefault(_text(receiver), []).append(value)  # type: ignore[arg-type]
            continue
        if len(node.targets) != 1 or type(node.targets[0]) not in (ast.Name, ast.Attribute):  # type: ignore[attr-defined]
            continue
        device = _move_device(facts, value)
        if device is None:
            inner = _first_argument(value)
            if type(inner) is ast.Call:
                value, device = inner, _move_device(facts, inner)
        if device is None or _surely_cpu(facts, device):
            continue
        receiver = value.func.value  # type: ignore[attr-defined]
        if type(receiver) in (ast.Call, ast.Name, ast.Attribute):
            moves.setdefault(_text(node.targets[0]), []).append(value)  # type: ignore[attr-defined]
    return moves


def _batch_names(facts: FileFacts, loop: ast.For | ast.AsyncFor) -> set[str]:
    """The names a loop over a DataLoader (of the file, or one a function may return) binds
    to a batch's elements, as the rule's ``_batch_names``."""
    iterable, target = loop.iter, loop.target
    while type(iterable) is ast.Call and (iterable.args or iterable.keywords) and (  # type: ignore[attr-defined]
            _word(iterable.func) in _BATCH_WRAPPERS):  # type: ignore[attr-defined]
        if type(iterable.func) is ast.Name and iterable.func.id == "enumerate":  # type: ignore[attr-defined]
            if type(target) is not ast.Tuple or len(target.elts) != 2:
                return set()
            target = target.elts[1]
        iterable = _first_argument(iterable)  # type: ignore[arg-type,assignment]
    names = _target_names(target)
    if not names:
        return set()
    if type(iterable) is ast.Call:
        return names if _may_return_loader(facts, iterable) else set()  # type: ignore[arg-type]
    if type(iterable) not in (ast.Name, ast.Attribute):
        return set()
    calls = _assigned_calls(facts).get(_text(iterable), ())
    if type(iterable) is ast.Attribute:  # only a DataLoader assigned to it
        calls = [c for c in calls if not _DATA_LOADERS.isdisjoint(facts.qualnames_of(c.func))]
    return names if any(_may_return_loader(facts, c) for c in calls) else set()


def _keeping(node: ast.expr) -> ast.expr:
    while type(node) is ast.Call and type(node.func) is ast.Attribute and (  # type: ignore[attr-defined]
            node.func.attr in _KEEPING_METHODS):  # type: ignore[attr-defined]
        node = node.func.value  # type: ignore[attr-defined]
    return node


def _from_batch(value: ast.expr, batch: set[str]) -> bool:
    if type(value) is ast.Subscript:
        value = value.value  # type: ignore[attr-defined]
    return type(value) is ast.Name and value.id in batch  # type: ignore[attr-defined]


def _fed_models(loop: ast.For | ast.AsyncFor, batch: set[str]) -> list[ast.Call]:
    """The calls of the loop's body given, first, a batch element neither rebound nor moved
    in the body: ``model(x)``, ``model(x.float())``."""
    body = list(_scope_nodes(loop.body))
    batch = batch | {n.id for node in body if type(node) is ast.Assign  # type: ignore[attr-defined]
                     and len(node.targets) == 1 and _from_batch(node.value, batch)  # type: ignore[attr-defined]
                     for n in _scope_nodes(node.targets) if type(n) is ast.Name}  # type: ignore[attr-defined]
    changed: set[str] = set()
    for node in body:
        kind = type(node)
        if kind is ast.Assign and len(node.targets) == 1 and _from_batch(  # type: ignore[attr-defined]
                node.value, batch):  # type: ignore[attr-defined]
            continue
        if kind in (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor):
            targets = node.targets if kind is ast.Assign else [node.target]  # type: ignore[attr-defined]
            changed |= {n.id for n in _scope_nodes(targets) if type(n) is ast.Name}  # type: ignore[attr-defined]
        elif kind is ast.Call and type(node.func) is ast.Attribute and (  # type: ignore[attr-defined]
                node.func.attr in ("to", "cuda")) and type(node.func.value) is ast.Name:  # type: ignore[attr-defined]
            changed.add(node.func.value.id)  # type: ignore[attr-defined]
    fed = []
    for node in body:
        if type(node) is ast.Call and type(node.func) in (ast.Name, ast.Attribute):  # type: ignore[attr-defined]
            arg = next((a for a in node.args if type(a) is not ast.Starred), None)  # type: ignore[attr-defined]
            if arg is None:
                continue
            arg = _keeping(arg)
            if type(arg) is ast.Name and arg.id in batch and arg.id not in changed:  # type: ignore[attr-defined]
                fed.append(node)
    return fed  # type: ignore[return-value]


def may_flag_tl310(facts: FileFacts, options: Options) -> bool:
    """A loop over a DataLoader feeds a batch element, unmoved, to a model moved to a
    device before the loop in the same function, or at module level."""
    if _placed_by_a_library(facts):
        return False
    moves = _model_moves(facts)
    if not moves:
        return False
    for loop in facts.nodes(ast.For, ast.AsyncFor):
        batch = _batch_names(facts, loop)  # type: ignore[arg-type]
        if not batch:
            continue
        fed = [c for c in _fed_models(loop, batch) if _text(c.func) in moves]  # type: ignore[arg-type]
        if not fed:
            continue
        scope = _innermost_function(facts, loop)
        for call in fed:
            model = _text(call.func)
            for move in moves[model]:
                where = _innermost_function(facts, move)
                if where is scope and _start(move) < _start(loop) or (
                        where is None and scope is not None and "." not in model):
                    return True
    return False


# ------------------------------------------------------------------ TL301
_RANDOM = frozenset({"rand", "randn", "randint", "randperm", "rand_like", "randn_like",
                     "randint_like"})
_FACTORIES = frozenset(f"torch.{name}" for name in (
    "zeros", "ones", "empty", "full", "eye", "arange", "range", "linspace", "logspace",
    "zeros_like", "ones_like", "empty_like", "full_like", *_RANDOM))
_LIKE = frozenset(q for q in _FACTORIES if q.endswith("_like"))
_HOST_MADE = frozenset({"torch.tensor", "torch.as_tensor", "torch.from_numpy"}) | (
    _FACTORIES - _LIKE)
_RANDOM_FILLS = frozenset({"uniform_", "normal_", "random_", "bernoulli_", "exponential_",
                           "cauchy_", "log_normal_", "geometric_"})
_SAME_ON_ANY_DEVICE = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "short", "bool", "byte", "char",
    "cfloat", "cdouble", "view", "reshape", "view_as", "reshape_as", "unsqueeze", "squeeze",
    "flatten", "unflatten", "permute", "transpose", "t", "contiguous", "clone", "detach",
    "repeat", "fill_", "zero_", "tril", "triu", "neg", "abs", "expand", "expand_as"})
_MOVE_KEYWORDS = frozenset({"device", "dtype", "non_blocking"})


def _may_be_device(facts: FileFacts, node: ast.expr) -> bool:
    """As TL301's ``_is_device``: a device string or f-string, ``torch.device(...)``, or a
    name or attribute named for a device."""
    if type(node) is ast.Constant:
        return _is_string(node, *_DEVICE_PREFIXES)
    if type(node) is ast.JoinedStr:
        return bool(node.values) and _is_string(node.values[0], "cuda:", "xpu:", "mps:")  # type: ignore[attr-defined]
    if type(node) is ast.Call:
        return "torch.device" in facts.qualnames_of(node.func)  # type: ignore[attr-defined]
    word = _word(node)
    if word is None:
        return False
    lowered = word.lower()
    return "device" in lowered or lowered == "dev" or lowered.startswith("dev_") or (
        lowered.endswith("_dev"))


def _moves_somewhere(facts: FileFacts, call: ast.Call, method: str) -> bool:
    """``.cuda(...)`` / ``.to(device[, dtype])`` with arguments TL301 reads as a move."""
    if any(type(a) is ast.Starred for a in call.args) or any(
            k.arg not in _MOVE_KEYWORDS for k in call.keywords):
        return False
    if method == "cuda":
        return True
    rest = call.args
    if _keyword(call, "device") is None:
        if not rest or not _may_be_device(facts, rest[0]):
            return False
        rest = rest[1:]
    return _keyword(call, "dtype") is not None or len(rest) <= 1


def _factory(facts: FileFacts, expr: ast.expr) -> tuple[ast.Call, bool, bool] | None:
    """The device factory call ``expr`` is built from through conversions that do not
    depend on the device (``torch.zeros(n).long().view(1, n)``), with whether its values
    are random draws and whether it is a ``*_like`` factory; as ``factories.factory_chain``."""
    random = False
    while type(expr) is ast.Call:
        quals = facts.qualnames_of(expr.func)  # type: ignore[attr-defined]
        found = quals & _FACTORIES
        if found:
            return (expr, random or any(q.rsplit(".", 1)[1] in _RANDOM for q in found),  # type: ignore[return-value]
                    found <= _LIKE)
        func = expr.func  # type: ignore[attr-defined]
        if type(func) is not ast.Attribute:
            return None
        name = func.attr
        if name in _RANDOM_FILLS:
            if _has_keyword(expr, "generator"):  # type: ignore[arg-type]
                return None
            random = True
        elif name in ("to", "type"):
            args = [*expr.args, *(k.value for k in expr.keywords  # type: ignore[attr-defined]
                                  if k.arg in ("dtype", None))]
            if len(args) != len(expr.args) + len(expr.keywords) or len(args) != 1 or (  # type: ignore[attr-defined]
                    facts.qualnames_of(args[0]).isdisjoint(_DTYPES)):
                return None
        elif name not in _SAME_ON_ANY_DEVICE:
            return None
        if any(type(a) is ast.Starred for a in expr.args) or any(  # type: ignore[attr-defined]
                k.arg is None for k in expr.keywords):  # type: ignore[attr-defined]
            return None
        expr = func.value
    return None


def may_flag_tl301(facts: FileFacts, options: Options) -> bool:
    """A device factory without ``device=`` moved right away (or after device-independent
    conversions) with ``.cuda()``/``.to(device)``."""
    if facts.test_file:  # the rule is silent in test code
        return False
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        if type(func) is not ast.Attribute or func.attr not in ("cuda", "to") or not (
                _moves_somewhere(facts, call, func.attr)):  # type: ignore[arg-type]
            continue
        found = _factory(facts, func.value)
        if found is None:
            continue
        factory, random, like = found
        if _has_keyword(factory, "device") or random and (
                _has_keyword(factory, "generator") or _seeded(facts, call)):
            continue
        if like and not _host_source(facts, factory):
            continue
        # one-off code too: the rule reports it as a preview shape, which a run without
        # preview still counts, and a noqa comment on it still uses
        return True
    return False


def _seeded(facts: FileFacts, node: ast.AST) -> bool:
    """As ``factories.seeded``: a call named for a seed (``torch.manual_seed``,
    ``seed_everything``; not a generator's own) in the function of ``node``, in a class
    holding it, or in the module's code outside functions and classes."""
    seeds = [c for c in facts.nodes(ast.Call) if "seed" in (_word(c.func) or "").lower()  # type: ignore[attr-defined]
             and not (type(c.func) is ast.Attribute and type(c.func.value) is ast.Call  # type: ignore[attr-defined]
                      and "torch.Generator" in facts.qualnames_of(c.func.value.func))]  # type: ignore[attr-defined]
    if not seeds:
        return False
    function = _innermost_function(facts, node)
    classes = [c for c in facts.nodes(ast.ClassDef) if _holds(c, node)]
    scopes = list(facts.nodes(*_SCOPES))
    return any(function is not None and _holds(function, seed)
               or any(_holds(c, seed) for c in classes)
               or not any(_holds(scope, seed) for scope in scopes) for seed in seeds)


def _host_source(facts: FileFacts, factory: ast.Call) -> bool:
    """``torch.zeros_like(src)`` may make a host tensor: ``src`` is a name, or a host
    constructor called without ``device=``."""
    source = _keyword(factory, "input") or (
        factory.args[0] if factory.args and type(factory.args[0]) is not ast.Starred else None)
    if type(source) is ast.Name:
        return True
    return type(source) is ast.Call and not _has_keyword(source, "device") and not (
        facts.qualnames_of(source.func).isdisjoint(_HOST_MADE))  # type: ignore[attr-defined]


# ------------------------------------------------------------------ TL302
_LOADER_WRAPPERS = frozenset({"iter", "tqdm"})
_INPLACE_BATCH_PACKAGES = frozenset({"transformers", "torch_geometric", "dgl", "torch_sparse"})
# the keywords a legacy constructor takes (``torch.FloatTensor(size=(2, 3), device=d)``):
# given any other, it raises before the statement after it runs
_LEGACY_KEYWORDS = frozenset({"device", "data", "size", "other", "storage", "names", "cdata"})
# torch functions that make no tensor for the rule (none is in ``tensor_facts.TENSOR_OPS``):
# ``model = torch.compile(model)`` / ``torch.load(path)`` then ``model.to(device)``
_NO_TENSOR = frozenset({"torch.load", "torch.compile", "torch.device"})
_LOOP_TYPES = (ast.For, ast.AsyncFor, ast.While)
# what ends a search for a name's binding (``bindings._FINAL_KINDS``)
_FINAL = frozenset({"for", "with", "param", "unknown"})

Found = tuple[str, ast.AST | None]


def _first_positional(call: ast.Call) -> ast.expr | None:
    return next((a for a in call.args if type(a) is not ast.Starred), None)


def _loader_target(facts: FileFacts, loop: ast.For | ast.AsyncFor) -> ast.expr | None:
    """The part of the loop's target that holds batches when it walks a data loader
    (``for i, (x, y) in enumerate(loader)``: ``(x, y)``), as ``batches.loader_iterable``."""
    iterable, target = loop.iter, loop.target
    while type(iterable) is ast.Call and (iterable.args or iterable.keywords):  # type: ignore[attr-defined]
        word = _word(iterable.func)  # type: ignore[attr-defined]
        first = _first_positional(iterable)  # type: ignore[arg-type]
        if first is None:
            break
        if word == "enumerate" and type(target) is ast.Tuple and len(target.elts) == 2:
            iterable, target = first, target.elts[1]
        elif word in _LOADER_WRAPPERS:
            iterable = first
        else:
            break
    if type(iterable) is ast.Call:
        return target if not _DATA_LOADERS.isdisjoint(facts.qualnames_of(iterable.func)) else None  # type: ignore[attr-defined]
    word = _word(iterable)
    return target if word is not None and "loader" in word.lower() else None


def _name_bindings(facts: FileFacts) -> frozenset[str]:
    """The names the rule can follow to a tensor: assigned (``x = v``, ``x: T = v``),
    unpacked from a name or from as many elements (``x, y = batch``, ``x, y = a, b``), or
    bound by the batch target of a loader loop. Computed once per file."""
    return facts.once("tl302 names", lambda: frozenset(_find_name_bindings(facts)))


def _find_name_bindings(facts: FileFacts) -> Iterator[str]:
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        value = node.value  # type: ignore[attr-defined]
        if value is None:
            continue
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        for target in targets:
            if type(target) is ast.Name:
                yield target.id
            elif type(target) in (ast.Tuple, ast.List) and (type(value) is ast.Name or type(
                    value) in (ast.Tuple, ast.List) and len(value.elts) == len(target.elts)):
                yield from (e.id for e in target.elts if type(e) is ast.Name)
    for loop in facts.nodes(ast.For, ast.AsyncFor):
        batch = _loader_target(facts, loop)  # type: ignore[arg-type]
        if batch is not None:
            yield from _names_in(batch)


def _in_target(name: str, target: ast.AST) -> tuple[bool, bool]:
    """(``name`` is bound by ``target``, it was unpacked), as ``batches.in_target``."""
    if type(target) is ast.Name:
        return target.id == name, False  # type: ignore[attr-defined]
    if type(target) in (ast.Tuple, ast.List):
        return name in _names_in(target), name in _names_in(target)
    return False, False


def _binds(nodes: Iterable[ast.AST], name: str) -> bool:
    """Some of ``nodes`` binds ``name`` (nested functions, classes and lambdas aside; a
    comprehension's variables are its own), never where ``bindings.binds_anywhere`` would
    not: an assignment, loop or ``with`` target, walrus, ``del``, import, ``def``,
    ``class``, ``global``/``nonlocal``, an ``except ... as``."""
    stack = list(nodes)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is ast.Name:
            if node.id == name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                return True
        elif kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            if node.name == name:  # type: ignore[attr-defined]
                return True
        elif kind in (ast.Import, ast.ImportFrom):
            if any((a.asname or a.name.split(".", 1)[0]) == name for a in node.names):  # type: ignore[attr-defined]
                return True
        elif kind in (ast.Global, ast.Nonlocal):
            if name in node.names:  # type: ignore[attr-defined]
                return True
        elif kind is ast.comprehension:
            stack.append(node.iter)  # type: ignore[attr-defined]
            stack.extend(node.ifs)  # type: ignore[attr-defined]
        elif kind is ast.ExceptHandler and node.name == name:  # type: ignore[attr-defined]
            return True
        elif kind is not ast.Lambda and kind.__name__ not in ("TryStar", "TypeAlias"):
            stack.extend(ast.iter_child_nodes(node))
        elif kind.__name__ == "TryStar":  # libcst's ``except*`` binds no name
            stack.extend((*node.body, *node.orelse, *node.finalbody))  # type: ignore[attr-defined]
            stack.extend(s for h in node.handlers for s in h.body)  # type: ignore[attr-defined]
    return False


def _binding_by(stmt: ast.stmt, name: str) -> Found | None:
    """How the statement ``stmt`` binds ``name`` (None: it does not), as
    ``bindings._binding_by``."""
    kind = type(stmt)
    if kind is ast.Assign and len(stmt.targets) == 1:  # type: ignore[attr-defined]
        target = stmt.targets[0]  # type: ignore[attr-defined]
        if type(target) is ast.Name:
            if target.id == name:
                return "assign", stmt
            return ("unknown", stmt) if _binds([stmt.value], name) else None  # type: ignore[attr-defined]
        if type(target) in (ast.Tuple, ast.List) and name in _names_in(target):
            return "unpack", stmt
    elif kind is ast.AnnAssign and type(stmt.target) is ast.Name and (  # type: ignore[attr-defined]
            stmt.target.id == name):  # type: ignore[attr-defined]
        return ("unknown" if stmt.value is None else "assign"), stmt  # type: ignore[attr-defined]
    elif kind is ast.AugAssign and type(stmt.target) is ast.Name and (  # type: ignore[attr-defined]
            stmt.target.id == name):  # type: ignore[attr-defined]
        return "augmented", stmt
    elif kind in (ast.With, ast.AsyncWith) and any(
            type(i.optional_vars) is ast.Name and i.optional_vars.id == name  # type: ignore[union-attr]
            for i in stmt.items) and not _binds(stmt.body, name):  # type: ignore[attr-defined]
        return "with", stmt
    return ("unknown", stmt) if _binds([stmt], name) else None


def _earlier(statements: list[ast.stmt], name: str, into_with: bool
             ) -> Generator[Found, None, bool]:
    """The bindings of ``name`` by ``statements``, last first, as
    ``bindings._in_statements``; returns True once a final one was yielded."""
    for stmt in reversed(statements):
        if type(stmt) in (ast.With, ast.AsyncWith) and not any(
                i.optional_vars is not None and name in _names_in(i.optional_vars)
                for i in stmt.items):  # type: ignore[attr-defined]
            if not _binds(stmt.body, name):  # type: ignore[attr-defined]
                continue
            if not into_with:
                yield "unknown", stmt
                return True
            if (yield from _earlier(stmt.body, name, into_with)):  # type: ignore[attr-defined]
                return True
            continue
        found = _binding_by(stmt, name)
        if found is not None:
            yield found
            if found[0] in _FINAL:
                return True
    return False


def _blocks(stmt: ast.stmt) -> Iterator[tuple[str, list[ast.stmt]]]:
    """The blocks of statements of a compound statement, with the field holding each."""
    for field in ("body", "orelse", "finalbody"):
        block = getattr(stmt, field, None)
        if block:
            yield field, block
    for handler in getattr(stmt, "handlers", ()):
        yield "handler", handler.body
    for case in getattr(stmt, "cases", ()):
        yield "case", case.body


def _path_to(facts: FileFacts, stmt: ast.stmt
             ) -> list[tuple[ast.AST | None, str, list[ast.stmt], int]] | None:
    """The blocks from the body of the innermost function or class holding ``stmt`` (or the
    module's) down to ``stmt``: (the statement owning the block, its field, the block, the
    index there of the statement that holds ``stmt``). None when not found."""
    scope: ast.AST | None = None
    for node in facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        if _holds(node, stmt) and (scope is None or _start(node) > _start(scope)):
            scope = node
    assert facts.tree is not None
    owner: ast.AST | None = scope
    field, block = "body", (scope.body if scope is not None else facts.tree.body)  # type: ignore[attr-defined]
    path = []
    while True:
        index = next((i for i, s in enumerate(block) if _holds(s, stmt)), None)
        if index is None:
            return None
        path.append((owner, field, block, index))
        found = block[index]
        if found is stmt:
            return path
        inner = next(((f, b) for f, b in _blocks(found) if any(_holds(s, stmt) for s in b)),
                     None)
        if inner is None or isinstance(found, _SCOPES):
            return None
        owner, (field, block) = found, inner


def _bindings_before(facts: FileFacts, name: str, stmt: ast.stmt, *, into_with: bool
                     ) -> Iterator[Found]:
    """The bindings of ``name`` before the statement ``stmt``, latest first, in
    straight-line code of its scope, as ``bindings.bindings_before``: ``("lost", None)``
    when ``stmt`` could not be placed."""
    path = _path_to(facts, stmt)
    if path is None:
        yield "lost", None
        return
    for owner, field, block, index in reversed(path):
        if (yield from _earlier(block[:index], name, into_with)):
            return
        if type(owner) in _LOOP_TYPES and field == "body":
            if type(owner) is not ast.While and name in _names_in(owner.target):  # type: ignore[union-attr]
                yield "for", owner
                return
            if _binds(owner.body, name):  # type: ignore[union-attr]
                yield "unknown", owner
                return
    # the scope's start: a parameter, or nothing more (neither a tensor for the rule)


def _imports_inplace_batch_package(facts: FileFacts) -> bool:
    """The module's code (not that of its functions and classes) imports a package whose
    batches move in place (``transformers``, PyG...): the rule then reads more."""
    def find() -> bool:
        assert facts.tree is not None
        for stmt in _module_statements(facts.tree.body):
            if type(stmt) is ast.Import:
                modules = [a.name for a in stmt.names]  # type: ignore[attr-defined]
            elif type(stmt) is ast.ImportFrom and stmt.module:  # type: ignore[attr-defined]
                modules = [stmt.module]  # type: ignore[attr-defined]
            else:
                continue
            if any(m.split(".", 1)[0] in _INPLACE_BATCH_PACKAGES for m in modules):
                return True
        return False
    return facts.once("tl302 inplace batches", find)


def _loader_batch(facts: FileFacts, name: str, at: ast.stmt) -> tuple[bool, bool]:
    """(``name`` is, at ``at``, the target of a loop over a data loader, it was unpacked),
    as ``batches.loader_batch``."""
    for kind, node in _bindings_before(facts, name, at, into_with=True):
        if kind == "lost":
            return True, False
        batch = _loader_target(facts, node) if kind == "for" else None  # type: ignore[arg-type]
        return (False, False) if batch is None else _in_target(name, batch)
    return False, False


def _batch_item(facts: FileFacts, node: ast.expr, at: ast.stmt) -> bool:
    """``batch["image"]`` / ``batch[0]`` of a whole loader batch, as ``batches.batch_item``."""
    if type(node) is not ast.Subscript or type(node.value) is not ast.Name:  # type: ignore[attr-defined]
        return False
    key = node.slice  # type: ignore[attr-defined]
    if type(key) is not ast.Constant or not (
            isinstance(key.value, (str, bytes)) or type(key.value) is int):  # type: ignore[attr-defined]
        return False
    found, unpacked = _loader_batch(facts, node.value.id, at)  # type: ignore[attr-defined]
    return found and not unpacked and not _imports_inplace_batch_package(facts)


def _element_for(name: str, target: ast.Tuple | ast.List, value: ast.expr) -> ast.expr | None:
    """The element of ``value`` unpacked into ``name``, as ``batches._element_for``."""
    if type(value) not in (ast.Tuple, ast.List):
        return value if type(value) is ast.Name else None
    elements = target.elts
    if any(type(e) is ast.Starred for e in elements):
        return None
    position = next((k for k, e in enumerate(elements)
                     if type(e) is ast.Name and e.id == name), None)
    if position is None or len(value.elts) != len(elements) or any(  # type: ignore[attr-defined]
            type(e) is ast.Starred for e in value.elts):  # type: ignore[attr-defined]
        return None
    return value.elts[position]  # type: ignore[attr-defined,no-any-return]


def _may_make_tensor(facts: FileFacts, value: ast.expr) -> bool:
    """A call that may make a tensor (as ``tensor_facts.is_tensor_expression`` and
    ``is_legacy_tensor_call``): of a torch function, of a legacy constructor
    (``torch.FloatTensor``) or of a name from another module that may be a project alias
    of one (called with no keyword such a constructor refuses), maybe with methods chained
    on it."""
    while type(value) is ast.Call:
        func = value.func  # type: ignore[attr-defined]
        quals = facts.qualnames_of(func)
        if any(_tensor_function(q) for q in quals) or _project_or_foreign(quals) and all(
                k.arg is None or k.arg in _LEGACY_KEYWORDS for k in value.keywords) and (  # type: ignore[attr-defined]
                _may_alias_tensor_maker(facts, quals)):
            return True
        if type(func) is not ast.Attribute:
            return False
        value = func.value
    return False


def _may_alias_tensor_maker(facts: FileFacts, qualnames: Iterable[str]) -> bool:
    """May a name from another module stand for a torch function or a legacy constructor,
    as ``FileContext.possible_qualified_names`` follows it: through the project's aliases
    and re-exports when it names a module of the project; a name of another library is
    itself. Without knowing the project: it may."""
    if not facts.project_known:
        return True
    project = facts.project
    if project is None:
        return False
    for qual in qualnames:
        if qual.startswith(("torch.", "builtins.")):
            continue
        absolute = project.absolute(qual)
        if absolute is None:
            return True  # not resolved here: it may
        if project.owns(absolute) and any(
                _tensor_function(target) for target in project.alias_targets(absolute)):
            return True
    return False


def _tensor_function(qual: str) -> bool:
    """``torch.cat``, ``torch.nn.functional.relu``, ``torch.cuda.LongTensor``: not a class
    of ``torch.nn`` nor another torch class."""
    if qual.startswith("torch.nn.functional."):
        return True
    if qual in _NO_TENSOR:
        return False
    if qual.startswith(("torch.", "torch.cuda.")) and qual.endswith("Tensor"):
        return qual.count(".") <= 2
    return qual.startswith("torch.") and qual.count(".") == 1 and qual[6:7].islower()


def _chain_root(value: ast.expr) -> ast.expr:
    while type(value) is ast.Call and type(value.func) is ast.Attribute:  # type: ignore[attr-defined]
        value = value.func.value  # type: ignore[attr-defined]
    return value


def _known_tensor(facts: FileFacts, name: str, at: ast.stmt) -> bool:
    """As ``batches.is_known_tensor_name``: the binding of ``name`` that reaches ``at`` in
    straight-line code (through ``x = x.float()``) makes a tensor, is a loader's batch, an
    element unpacked from one or its item."""
    for kind, node in _bindings_before(facts, name, at, into_with=False):
        if kind == "lost":
            return True
        if kind == "for":
            batch = _loader_target(facts, node)  # type: ignore[arg-type]
            if batch is None:
                return False
            found, unpacked = _in_target(name, batch)
            return found and (unpacked or not _imports_inplace_batch_package(facts))
        if kind not in ("assign", "unpack"):
            return False
        value = node.value  # type: ignore[union-attr]
        if type(node) is ast.Assign and type(node.targets[0]) in (ast.Tuple, ast.List):  # type: ignore[attr-defined]
            value = _element_for(name, node.targets[0], value)  # type: ignore[attr-defined]
            if type(value) is ast.Name:  # x, y = batch
                return value.id != name and _loader_batch(facts, value.id, at)[0]  # type: ignore[attr-defined]
        if value is None:
            return False
        if _may_make_tensor(facts, value) or _batch_item(facts, value, at):
            return True
        root = _chain_root(value)
        if not (type(root) is ast.Name and root.id == name and root is not value):  # type: ignore[attr-defined]
            return False
        # x = x.float(): what was x before?
    return False


def may_flag_tl302(facts: FileFacts, options: Options) -> bool:
    """A statement ``x.cuda()`` / ``x.cpu()`` / ``x.to(...)`` (or on a batch's item) whose
    ``x``, bound before it in straight-line code, may be a tensor: of a torch call (or a
    call of a project name), a loader's batch or its item."""
    for statement in facts.nodes(ast.Expr):
        call = statement.value  # type: ignore[attr-defined]
        if type(call) is not ast.Call or type(call.func) is not ast.Attribute or (
                call.func.attr not in ("cuda", "cpu", "to")):
            continue
        target = call.func.value
        if type(target) is ast.Name:
            if target.id in _name_bindings(facts) and _known_tensor(
                    facts, target.id, statement):  # type: ignore[arg-type]
                return True
        elif _batch_item(facts, target, statement):  # type: ignore[arg-type]
            return True
    return False


# ------------------------------------------------------------------ TL303
_VARIABLE = "CUDA_VISIBLE_DEVICES"
_LAZY_CUDA_CALLS = frozenset({
    "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all", "device", "stream",
    "device_of", "nvtx", "set_sync_debug_mode", "get_sync_debug_mode", "empty_cache",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "memory_stats", "memory_stats_as_nested_dict",
    "memory_summary", "memory_snapshot", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "reset_max_memory_cached",
    "reset_accumulated_memory_stats", "get_arch_list", "is_built",
})


def _sets_visible_devices(facts: FileFacts) -> Iterator[ast.AST]:
    """The statements and calls that set ``CUDA_VISIBLE_DEVICES`` in ``os.environ``."""
    for node in facts.nodes(ast.Assign):
        for target in node.targets:  # type: ignore[attr-defined]
            if type(target) is ast.Subscript and _is_string(target.slice, _VARIABLE) and (  # type: ignore[attr-defined]
                    target.slice.value == _VARIABLE) and "os.environ" in facts.qualnames_of(  # type: ignore[attr-defined]
                    target.value):  # type: ignore[attr-defined]
                yield node
    for call in facts.nodes(ast.Call):
        if _word(call.func) not in ("setdefault", "putenv", "update"):  # type: ignore[attr-defined]
            continue
        quals = facts.qualnames_of(call.func)  # type: ignore[attr-defined]
        if quals & {"os.environ.setdefault", "os.putenv"}:
            first = call.args[0] if call.args else None  # type: ignore[attr-defined]
            if _is_string(first, _VARIABLE) and first.value == _VARIABLE:  # type: ignore[union-attr]
                yield call
        # update(CUDA_VISIBLE_DEVICES=...), update({...}) or update(**{...})
        dicts = [*call.args, *(k.value for k in call.keywords if k.arg is None)]  # type: ignore[attr-defined]
        if "os.environ.update" in quals and (_keyword(call, _VARIABLE) is not None or any(  # type: ignore[arg-type]
                type(arg) is ast.Dict and any(
                    _is_string(key, _VARIABLE) and key.value == _VARIABLE  # type: ignore[union-attr]
                    for key in arg.keys) for arg in dicts)):  # type: ignore[attr-defined]
            yield call


def _may_be_cuda_device(facts: FileFacts, node: ast.expr | None) -> bool:
    if node is None:
        return False
    if _is_string(node, "cuda"):
        return node.value == "cuda" or node.value.startswith("cuda:")  # type: ignore[attr-defined]
    if type(node) is ast.Call and "torch.device" in facts.qualnames_of(node.func):  # type: ignore[attr-defined]
        first = _keyword(node, "type") or (node.args[0] if node.args else None)  # type: ignore[arg-type,attr-defined]
        return _may_be_cuda_device(facts, first)
    return False


def _may_start_cuda(facts: FileFacts, call: ast.Call) -> bool:
    """As ``cuda.initialises_cuda``: ``torch.cuda.device_count()``, ``x.cuda()``,
    ``x.to("cuda")``, ``torch.zeros(3, device="cuda")``."""
    for qual in facts.qualnames_of(call.func):
        if qual.startswith("torch.cuda.") and qual.count(".") == 2:
            leaf = qual.rsplit(".", 1)[1]
            if leaf[:1].islower() and not leaf.startswith("_") and leaf not in _LAZY_CUDA_CALLS:
                return True
        if qual.startswith("torch.") and _may_be_cuda_device(facts, _keyword(call, "device")):
            return True
    func = call.func
    if type(func) is not ast.Attribute or func.attr not in ("cuda", "to"):
        return False
    if func.attr == "cuda":
        return all(k.arg in ("device", "non_blocking", "memory_format") for k in call.keywords)
    device = _keyword(call, "device")
    if device is None and call.args and type(call.args[0]) is not ast.Starred:
        device = call.args[0]
    return _may_be_cuda_device(facts, device)


_LAUNCHERS = ("subprocess.", "os.system", "os.popen", "os.exec", "os.spawn", "os.posix_spawn",
              "multiprocessing.", "torch.multiprocessing.", "torch.distributed.run",
              "torch.distributed.launch", "ray.", "submitit.")


def _own_scope(facts: FileFacts, node: ast.AST) -> ast.AST | None:
    """The innermost function, class or lambda whose span holds ``node`` (None: the
    module's own code)."""
    found = None
    for scope in facts.nodes(*_SCOPES):
        if _holds(scope, node) and (found is None or _start(scope) > _start(found)):
            found = scope
    return found


def may_flag_tl303(facts: FileFacts, options: Options) -> bool:
    """``CUDA_VISIBLE_DEVICES`` is set in ``os.environ`` after a call of the same function
    (or of the module's code) that may start CUDA, and that code launches no process."""
    settings = list(_sets_visible_devices(facts))
    if not settings:
        return False
    calls = list(facts.nodes(ast.Call))
    for setting in settings:
        scope = _own_scope(facts, setting)
        if not isinstance(scope, (ast.ClassDef, ast.Lambda)) and any(
                _launches(facts, c) and _own_scope(facts, c) is scope for c in calls):  # type: ignore[arg-type]
            continue  # the variable is meant for the child processes
        if any(_start(c) < _start(setting) and _may_start_cuda(facts, c)  # type: ignore[arg-type]
               and _own_scope(facts, c) is scope for c in calls):
            return True
    return False


def _launches(facts: FileFacts, call: ast.Call) -> bool:
    quals = facts.qualnames_of(call.func)
    return bool(quals) and all(q.startswith(_LAUNCHERS) for q in quals)


# ------------------------------------------------------------------ TL305
_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.perf_counter_ns", "time.time_ns",
                     "time.monotonic", "time.monotonic_ns"})


def _in_loop_body(facts: FileFacts, node: ast.AST, scope: ast.AST | None) -> bool:
    """``node`` runs in the body of a loop of its own function (``scope``)."""
    end = (node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    for loop in facts.nodes(*_LOOPS):
        body = loop.body  # type: ignore[attr-defined]
        if _start(body[0]) <= _start(node) and end <= (
                body[-1].end_lineno, body[-1].end_col_offset) and (
                _innermost_function(facts, loop) is scope):
            return True
    return False


def _uses_cuda(facts: FileFacts) -> bool:
    """As ``cuda_use.file_uses_cuda``, leaving out its exception (a file that runs on the
    CPU on purpose): ``x.cuda``, or a ``"cuda"``/``"cuda:N"`` string."""
    if "cuda" in facts.attributes:
        return True
    assert facts.tree is not None
    return any(_may_be_cuda_device(facts, node) for node in ast.walk(facts.tree)
               if type(node) is ast.Constant)


def may_flag_tl305(facts: FileFacts, options: Options) -> bool:
    """A stop timestamp (``clock() - start``, or ``end = clock()`` with ``end - ...``
    later) outside the loops of its function, after a start timestamp in that function (the
    rule reads only what runs before the stop there), in a file that uses CUDA."""
    clocks = [c for c in facts.nodes(ast.Call) if _calls_of(facts, c.func, _CLOCKS)]  # type: ignore[attr-defined]
    if len(clocks) < 2:
        return False
    ids = {id(c) for c in clocks}
    stops: list[ast.AST] = [b.left for b in facts.nodes(ast.BinOp)  # type: ignore[attr-defined]
                            if type(b.op) is ast.Sub and id(b.left) in ids]  # type: ignore[attr-defined]
    subtracted = {b.left.id for b in facts.nodes(ast.BinOp)  # type: ignore[attr-defined]
                  if type(b.op) is ast.Sub and type(b.left) is ast.Name}  # type: ignore[attr-defined]
    stops += [a.value for a in facts.nodes(ast.Assign) if id(a.value) in ids  # type: ignore[attr-defined]
              and len(a.targets) == 1 and type(a.targets[0]) is ast.Name  # type: ignore[attr-defined]
              and a.targets[0].id in subtracted]  # type: ignore[attr-defined]
    for stop in stops:
        scope = _innermost_function(facts, stop)
        if not any(_start(c) < _start(stop) and _innermost_function(facts, c) is scope
                   for c in clocks):
            continue
        if _in_loop_body(facts, stop, scope):
            continue
        if _uses_cuda(facts):
            return True
        return False
    return False
