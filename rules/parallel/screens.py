"""The screen's ``ast`` checks of the parallel rules (TL801, TL802): each is true on every
file its rule can flag, and follows the rule's own decision closely enough that library
code naming the wrappers and samplers never reaches libcst for it.

A spelling the rules compare as text (a sampler's name, a loader's) is compared here as a
dotted name; any other spelling holds. Imports neither libcst nor a rule (the screen runs
before either is loaded).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from torchlint.analysis.ast_names import (
    argument as _argument,
    dotted as _dotted,
    inside as _inside,
)
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import BACKWARD_METHODS, canonical
from torchlint.engine.triage import FileFacts

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _in_a_function(facts: FileFacts, node: ast.AST) -> bool:
    return any(_inside(node, f) for f in facts.nodes(*_FUNCTIONS))


# ------------------------------------------------------------------ TL801
_DATA_PARALLEL = frozenset(canonical(q) for q in (
    "torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel"))


# a function that trains what it is given: train(model, ...), trainer.fit(model)
TRAINING_CALL = re.compile(r"^_*(train|fit)(_|$)|_(train|fit)$")


def may_flag_tl801(facts: FileFacts, options: Options) -> bool:
    """TL801 reports a call of DataParallel (through imports, aliases and subclasses of
    the file); where the file does not train the model, as a preview shape. Outside
    preview, a file that surely has no call in the default tier is not parsed for the
    others (preview shapes are counted for the summary's hint where the run parses
    anyway, as preview rules are)."""
    if "DataParallel" not in facts.names:
        return False  # every way to reach it spells it (an import, an attribute)
    if not options.preview and _surely_preview_only(facts):
        return False
    aliases = _data_parallel_aliases(facts)
    return any(_names_data_parallel(facts, call.func, aliases)  # type: ignore[attr-defined]
               for call in facts.nodes(ast.Call))


def _surely_preview_only(facts: FileFacts) -> bool:
    """The rule reports every DataParallel call of the file as a preview shape: test code,
    a file that calls DistributedDataParallel or a helper named for it (``_offers_ddp``),
    or one that neither back-propagates, steps anything (``file_trains``) nor calls a
    function named for training (``_handed_to_training``)."""
    if facts.test_file:
        return True
    words = facts.call_words
    if any("ddp" in word.lower() or word == "DistributedDataParallel" for word in words):
        return True
    trains = "step" in facts.method_calls or not BACKWARD_METHODS.isdisjoint(
        facts.method_calls) or "torch.autograd.backward" in facts.calls
    return not trains and not any(TRAINING_CALL.search(word.lower()) for word in words)


def _names_data_parallel(facts: FileFacts, expr: ast.expr, aliases: set[str]) -> bool:
    """``expr`` may be DataParallel: spelled so (through imports and module-level
    aliases), or a name of ``aliases``."""
    kind = type(expr)
    if kind is ast.Name:
        if expr.id in aliases:  # type: ignore[attr-defined]
            return True
        if expr.id not in facts.aliases:  # type: ignore[attr-defined]
            return False  # an import of it is one of the aliases
    elif kind is not ast.Attribute or expr.attr != "DataParallel":  # type: ignore[attr-defined]
        return False
    return not _DATA_PARALLEL.isdisjoint(facts.qualnames_of(expr))


def _data_parallel_aliases(facts: FileFacts) -> set[str]:
    """Names bound to DataParallel (imported as another name, ``DP = nn.DataParallel`` in
    any scope) or classes of the file deriving from it, or from one of those."""
    found = {n for n, quals in facts.bindings.items() if not _DATA_PARALLEL.isdisjoint(quals)}
    bound: list[tuple[str, ast.expr]] = [
        (target.id, node.value)  # type: ignore[attr-defined]
        for node in facts.nodes(ast.Assign) for target in node.targets  # type: ignore[attr-defined]
        if type(target) is ast.Name and type(node.value) in (  # type: ignore[attr-defined]
            ast.Name, ast.Attribute)]
    bound += [(node.name, base) for node in facts.nodes(ast.ClassDef)  # type: ignore[attr-defined]
              for base in node.bases]  # type: ignore[attr-defined]
    changed = True
    while changed:
        changed = False
        for name, value in bound:
            if name not in found and _names_data_parallel(facts, value, found):
                found.add(name)
                changed = True
    return found


# ------------------------------------------------------------------ TL802
_SAMPLERS = frozenset({"torch.utils.data.DistributedSampler",
                       "torch.utils.data.distributed.DistributedSampler"})
_LOADERS = frozenset({"torch.utils.data.DataLoader",
                      "torch.utils.data.dataloader.DataLoader"})
_MANAGING_LIBRARIES = frozenset({"accelerate", "lightning", "pytorch_lightning",
                                 "lightning_fabric", "transformers", "composer", "ignite"})
_EVALUATION_WORDS = frozenset({"val", "valid", "validation", "eval", "evaluation", "test",
                               "testing", "dev"})


def _evaluation(name: str | None) -> bool:
    """TL802's test of a name that says the data is evaluated, not trained on."""
    if not name:
        return False
    return not _EVALUATION_WORDS.isdisjoint(name.rsplit(".", 1)[-1].lower().split("_"))


def may_flag_tl802(facts: FileFacts, options: Options) -> bool:
    """TL802 reports a shuffling DistributedSampler given (``sampler=``, by itself or by
    the name it is assigned to) to a DataLoader assigned to a name, which a ``for`` iterates
    or a call inside a loop is given, when the file imports no library that sets the epoch
    and no ``set_epoch`` call can reach it; a sampler or loader named for evaluation is
    left alone."""
    samplers = [call for call in facts.nodes(ast.Call)
                if not _SAMPLERS.isdisjoint(facts.qualnames_of(call.func))  # type: ignore[attr-defined]
                and not _literal_false(_argument(call, "shuffle", 3))]  # type: ignore[arg-type]
    if not samplers or _imports_managing_library(facts):
        return False
    names, targets = _assigned_names(facts)
    loaders = [(call, target) for call, target in targets.items()
               if not _LOADERS.isdisjoint(facts.qualnames_of(call.func))]  # type: ignore[attr-defined]
    set_epoch = [call for call in facts.nodes(ast.Call)
                 if type(call.func) is ast.Attribute and call.func.attr == "set_epoch"]  # type: ignore[attr-defined]
    if any(not _in_a_function(facts, call) for call in set_epoch):
        return False  # a module-level set_epoch: the rule takes it for every sampler's
    for sampler in samplers:
        name = names.get(sampler)
        if _evaluation(name):
            continue
        for loader, target in loaders:
            given = _argument(loader, "sampler", 3)  # type: ignore[arg-type]
            if given is None or not (given is sampler or name == "" or name is not None and (
                    _dotted(given) == name)):
                continue
            if target == "" or not _evaluation(target) and _iterated(facts, target) and (
                    _epoch_unset(facts, set_epoch, sampler, name, target)):
                return True
    return False


def _literal_false(node: ast.expr | None) -> bool:
    return type(node) is ast.Constant and node.value is False  # type: ignore[attr-defined]


def _assigned_names(facts: FileFacts) -> tuple[dict[ast.AST, str], dict[ast.AST, str]]:
    """The calls assigned alone to a name or attribute by ``=`` (the sampler's name), and
    by ``=`` or ``x: T =`` (the loader's): the dotted name, or "" for a target the rules
    spell otherwise (compared as unknown)."""
    names: dict[ast.AST, str] = {}
    targets: dict[ast.AST, str] = {}
    for node in facts.nodes(ast.Assign, ast.AnnAssign):
        value = node.value  # type: ignore[attr-defined]
        if type(value) is not ast.Call:
            continue
        plain = type(node) is ast.Assign
        found = node.targets if plain else [node.target]  # type: ignore[attr-defined]
        if len(found) == 1 and type(found[0]) in (ast.Name, ast.Attribute):
            targets[value] = _dotted(found[0]) or ""
            if plain:
                names[value] = targets[value]
    return names, targets


def _iterated(facts: FileFacts, loader: str) -> bool:
    """``loader`` is named in the iterable of a ``for`` loop, or given to a call inside the
    body of a loop."""
    for loop in facts.nodes(ast.For, ast.AsyncFor):
        if any(_dotted(n) == loader for n in ast.walk(loop.iter)):  # type: ignore[attr-defined]
            return True
    loops = list(facts.nodes(*_LOOPS))
    for call in facts.nodes(ast.Call):
        given = [*call.args, *(kw.value for kw in call.keywords)]  # type: ignore[attr-defined]
        if any(_dotted(a.value if type(a) is ast.Starred else a) == loader  # type: ignore[attr-defined]
               for a in given) and any(
                _inside(call, s) for loop in loops for s in loop.body):  # type: ignore[attr-defined]
            return True
    return False


def _epoch_unset(facts: FileFacts, set_epoch: list[ast.Call], sampler: ast.Call,
                 name: str | None, loader: str) -> bool:
    """May no ``set_epoch`` call reach the sampler? (Some does, for the rule, when the
    sampler is module-level or an attribute, or when the function holding it calls
    ``set_epoch`` on it or on its loader's ``.sampler``.)"""
    if not set_epoch:
        return True
    if any(n is not None and n.startswith("self.") for n in (name, loader)):
        return False
    holding = [f for f in facts.nodes(*_FUNCTIONS) if _inside(sampler, f)]
    if not holding:
        return False
    innermost = max(holding, key=lambda f: (f.lineno, f.col_offset))  # type: ignore[attr-defined]
    own = {name, f"{loader}.sampler"} - {None}
    for call in set_epoch:
        if _dotted(call.func.value) in own and _inside(call, innermost) and not any(  # type: ignore[attr-defined]
                _inside(f, innermost) and f is not innermost and _inside(call, f)
                for f in facts.nodes(*_FUNCTIONS)):
            return False
    return True


def _imports_managing_library(facts: FileFacts) -> bool:
    """The file surely imports, at module level, a library that sets the epoch of the
    loaders it prepares (the name it binds is bound by nothing else)."""
    assert facts.tree is not None
    classes = {name for name, _ in facts.class_bases}
    for stmt in _module_level(facts.tree.body):
        if type(stmt) is ast.Import:
            bound = [(a.asname or a.name.split(".", 1)[0], a.name) for a in stmt.names]  # type: ignore[attr-defined]
        elif type(stmt) is ast.ImportFrom and not stmt.level and stmt.module:  # type: ignore[attr-defined]
            bound = [(a.asname or a.name, stmt.module) for a in stmt.names]  # type: ignore[attr-defined]
        else:
            continue
        for name, module in bound:
            if module.split(".", 1)[0] not in _MANAGING_LIBRARIES or name == "*":
                continue
            quals = facts.bindings.get(name, set())
            if len(quals) == 1 and name not in facts.aliases and (
                    name not in facts.functions) and name not in classes:
                return True
    return False


def _module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements that run at module level (in blocks too, not in defs or classes)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*_FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from _module_level(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", ()):
            yield from _module_level(handler.body)
