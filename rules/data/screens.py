"""The screen's ``ast`` check of TL903: true on every file the rule can flag, and looking
for the generator the rule reports, assigned where a dataset could copy it.

Imports neither libcst nor a rule (the screen runs before either is loaded).
"""

from __future__ import annotations

import ast

from torchlint.analysis.ast_names import dotted as _dotted
from torchlint.analysis.ast_names import self_attribute as _self_attribute
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import canonical
from torchlint.engine.triage import FileFacts

# TL903's generators (training_objects.RANDOM_GENERATORS)
_GENERATORS = frozenset({
    "numpy.random.default_rng", "numpy.random.RandomState", "numpy.random.Generator",
    "numpy.random.mtrand.RandomState", "random.Random",
})
# the first release whose workers reseed NumPy's global generator
_NUMPY_RESEEDED = (1, 9)


def may_flag_tl903(facts: FileFacts, options: Options) -> bool:
    """TL903 reports a generator (``np.random.default_rng()``, ``random.Random()``...)
    assigned to ``self.X`` or to a module-level name that a method of the file draws from
    (``self.X.integers(...)``, ``rng.random()``); for a target before torch 1.9, also a
    draw from NumPy's global state."""
    target = options.target_torch
    if target is not None and tuple(target) < _NUMPY_RESEEDED and any(
            q.startswith("numpy.random.") and q not in _GENERATORS for q in facts.calls):
        return True
    functions = list(facts.nodes(ast.FunctionDef, ast.AsyncFunctionDef))
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        targets = node.targets if type(node) is ast.Assign else [node.target]  # type: ignore[attr-defined]
        value = node.value  # type: ignore[attr-defined]
        if len(targets) != 1 or value is None:
            continue
        made = [value]  # the generator, or one of a conditional's or boolean's operands
        if type(value) is ast.IfExp:
            made += [value.body, value.orelse]  # type: ignore[attr-defined]
        elif type(value) is ast.BoolOp:
            made += value.values  # type: ignore[attr-defined]
        if any(type(v) is ast.Call and not _GENERATORS.isdisjoint(
                facts.qualnames_of(v.func)) for v in made):  # type: ignore[attr-defined]
            if _may_report(facts, options, functions, node, targets[0]):
                return True
    return False


def _may_report(facts: FileFacts, options: Options, functions: list[ast.AST], node: ast.AST,
                target: ast.expr) -> bool:
    """The generator assigned by ``node`` to ``target`` may be reported: a name assigned
    outside any function and drawn from in the sample methods of a class that may be a
    dataset and does not reseed, or ``self.X`` assigned in such a class's own ``__init__``
    (not in a function nested in it), drawn from in its sample methods, and neither
    reassigned in another method nor reseeded (``self.X.seed(...)``)."""
    line = node.lineno  # type: ignore[attr-defined]
    holding = [f for f in functions if f.lineno <= line <= f.end_lineno]  # type: ignore[attr-defined]
    if not holding:  # module level (or a class body): the rule's module generators
        if type(target) is not ast.Name:
            return False
        return any(_may_be_dataset(facts, options, klass) and not _reseeds(klass)
                   and _draws(_sample_methods(_class_methods(klass)), target.id)  # type: ignore[arg-type,attr-defined]
                   for klass in facts.nodes(ast.ClassDef))
    function = max(holding, key=lambda f: f.lineno)  # type: ignore[attr-defined]
    attribute = _self_attribute(target)
    if function.name != "__init__" or attribute is None:  # type: ignore[attr-defined]
        return False  # the rule reports only self.X made in __init__ itself
    klass = next((c for c in facts.nodes(ast.ClassDef)
                  if any(stmt is function for stmt in c.body)), None)  # type: ignore[attr-defined]
    if klass is None:
        # no class holds it directly: a class may through an ``if`` block (the rule then
        # takes it for a method); otherwise the rule has no class and is silent
        return True
    methods = _class_methods(klass)  # type: ignore[arg-type]
    receiver = f"self.{attribute}"
    if not _may_be_dataset(facts, options, klass) or _reseeds(klass) or _assigned_outside(
            methods, attribute) or _seeded(klass, receiver):
        return False
    return _draws(_sample_methods(methods), receiver)


def _draws(methods: list[ast.AST], receiver: str) -> bool:
    """A method of ``methods`` calls a method of ``receiver`` (``self.rng.normal()``)."""
    return any(type(call) is ast.Call and type(call.func) is ast.Attribute  # type: ignore[attr-defined]
               and _dotted(call.func.value) == receiver  # type: ignore[attr-defined]
               for method in methods for stmt in method.body  # type: ignore[attr-defined]
               for call in ast.walk(stmt))


def _may_be_dataset(facts: FileFacts, options: Options, klass: ast.AST) -> bool:
    """The context may take ``klass`` for a dataset class: unless each base surely names a
    torch or builtin class that is no dataset base (``BatchSampler``, ``nn.Module``), or
    it has none. A base named for a class of the file, or from another module (a project
    class may derive from a dataset), may."""
    classes = {name for name, _ in facts.class_bases}
    for base in klass.bases:  # type: ignore[attr-defined]
        head = base
        while type(head) is ast.Attribute:
            head = head.value  # type: ignore[attr-defined]
        names = {canonical(q) for q in facts.qualnames_of(base)}
        if not names or type(head) is not ast.Name or head.id in classes or any(  # type: ignore[attr-defined]
                q in options.dataset_bases or not q.startswith(("torch.", "builtins."))
                for q in names):
            return True
    return False


def _class_methods(klass: ast.ClassDef) -> dict[str, ast.AST]:
    """The methods a class body defines directly, by name (the last def of a name wins:
    training_objects.class_methods)."""
    return {stmt.name: stmt for stmt in klass.body  # type: ignore[attr-defined]
            if type(stmt) in (ast.FunctionDef, ast.AsyncFunctionDef)}


# training_objects._SAMPLE_METHODS: the methods of a dataset that run per sample
_SAMPLE_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__"})


def _sample_methods(methods: dict[str, ast.AST]) -> list[ast.AST]:
    """The sample methods and the methods they call as ``self.m(...)``
    (training_objects.sample_methods)."""
    pending = [m for name, m in methods.items() if name in _SAMPLE_METHODS]
    seen: dict[int, ast.AST] = {}
    while pending:
        method = pending.pop()
        if id(method) in seen:
            continue
        seen[id(method)] = method
        for stmt in method.body:  # type: ignore[attr-defined]
            for call in ast.walk(stmt):
                if type(call) is ast.Call:
                    name = _self_attribute(call.func)  # type: ignore[attr-defined]
                    if name is not None and name in methods and name != "__init__":
                        pending.append(methods[name])
    return list(seen.values())


def _assigned_outside(methods: dict[str, ast.AST], attribute: str) -> bool:
    """``self.<attribute>`` is assigned (``=``, ``+=``, ``x: T =``) in a method other than
    ``__init__`` (training_objects.assigned_outside)."""
    for name, method in methods.items():
        if name == "__init__":
            continue
        for stmt in method.body:  # type: ignore[attr-defined]
            for node in ast.walk(stmt):
                kind = type(node)
                if kind is ast.Assign:
                    targets = node.targets  # type: ignore[attr-defined]
                elif kind is ast.AnnAssign or kind is ast.AugAssign:
                    targets = [node.target]  # type: ignore[attr-defined]
                else:
                    continue
                if any(_self_attribute(t) == attribute for t in targets):
                    return True
    return False


def _reseeds(klass: ast.AST) -> bool:
    """A name or dotted name of the class ends with ``get_worker_info``: the rule takes the
    class for one that seeds per worker."""
    for node in ast.walk(klass):
        kind = type(node)
        if kind is ast.Name and node.id.endswith("get_worker_info") or (  # type: ignore[attr-defined]
                kind is ast.Attribute and node.attr.endswith("get_worker_info")  # type: ignore[attr-defined]
                and _dotted(node) is not None):
            return True
    return False


def _seeded(klass: ast.AST, receiver: str) -> bool:
    """``self.X.seed(...)`` somewhere in the class (``self`` not in parentheses, which the
    rule would compare as written)."""
    for node in ast.walk(klass):
        if type(node) is ast.Call and type(node.func) is ast.Attribute and (  # type: ignore[attr-defined]
                node.func.attr == "seed"):  # type: ignore[attr-defined]
            value = node.func.value  # type: ignore[attr-defined]
            if _dotted(value) == receiver and value.value.col_offset == value.col_offset:
                return True
    return False
