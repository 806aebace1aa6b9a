"""The screen's ``ast`` checks of the migration rules whose words are common in clean code
(TL701, TL703, TL705, TL719): each is true on every file its rule can flag, and looks for the
very call the rule reports.

A name imported from another module than torch or torchvision may be an alias the project
defines (the rules follow the project's aliases). Imports neither libcst nor a rule (the
screen runs before either is loaded).
"""

from __future__ import annotations

import ast

from torchlint.analysis.ast_names import end, first_start, start
from torchlint.analysis.options import Options
from torchlint.analysis.spelling import LOSS_FUNCTIONS, is_loss_class
from torchlint.analysis.spelling import from_elsewhere as _from_elsewhere
from torchlint.analysis.torchvision_weights import ALIASES, PRETRAINED, PRETRAINED_BACKBONE
from torchlint.engine.triage import FileFacts

# the legacy type constructors (TL705's LEGACY)
_TYPES = ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte",
          "Bool")
_LEGACY_TYPES = frozenset(f"torch{cuda}.{name}Tensor" for name in _TYPES
                          for cuda in ("", ".cuda"))
# TL719's legacy arguments -> the builders that take them
_LEGACY_ARGUMENTS = {"pretrained": PRETRAINED, "pretrained_backbone": PRETRAINED_BACKBONE}


# TL703: the deprecated torch.cuda.amp callables (name -> the torch.amp one), and the
# names of the new API whose use beside a deprecated call makes it a compatibility fallback
CUDA_AMP_DEPRECATED = {
    "torch.cuda.amp.autocast": "autocast",
    "torch.cuda.amp.autocast_mode.autocast": "autocast",
    "torch.cuda.amp.GradScaler": "GradScaler",
    "torch.cuda.amp.grad_scaler.GradScaler": "GradScaler",
}
NEW_AMP_API = ("torch.amp.", "torch.autocast")
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_SWITCHES = (ast.If, ast.IfExp, ast.Try)
# the patterns of a match statement that bind a name
_MATCH_CAPTURES = tuple(getattr(ast, kind) for kind in ("MatchAs", "MatchStar", "MatchMapping")
                        if hasattr(ast, kind))


# a name from another module may be an alias the project defines, but not one of these:
# torch's, and libraries whose names ending in Tensor are classes (``ToTensor``)
_NO_ALIASES = ("torch.", "builtins.", "torchvision.", "torch_geometric.", "timm.")


def may_flag_tl705(facts: FileFacts, options: Options) -> bool:
    """TL705 reports a call of a legacy type (``torch.FloatTensor(...)``, through imports
    and module-level aliases, conditional ones included), or of a name ending in
    ``Tensor`` that the project may alias to one."""
    if not _LEGACY_TYPES.isdisjoint(facts.calls):
        return True
    if not any(word.endswith("Tensor") for word in facts.call_words):
        return False
    for call in facts.nodes(ast.Call):
        func = call.func  # type: ignore[attr-defined]
        kind = type(func)
        last = func.attr if kind is ast.Attribute else func.id if kind is ast.Name else ""
        if last.endswith("Tensor") and any("." in q and not q.startswith(_NO_ALIASES)
                                           for q in facts.qualnames_of(func)):
            return True
    return False


def may_flag_tl719(facts: FileFacts, options: Options) -> bool:
    """TL719 reports ``pretrained=``/``pretrained_backbone=`` passed to a torchvision model
    builder that takes it (through imports and module-level aliases)."""
    if not any(q.startswith("torchvision.models.") for q in facts.calls):
        return False
    for call in facts.nodes(ast.Call):
        for keyword in call.keywords:  # type: ignore[attr-defined]
            table = _LEGACY_ARGUMENTS.get(keyword.arg)  # type: ignore[arg-type]
            if table is not None and any(
                    qual.startswith("torchvision.models.") and (
                        qual if qual in PRETRAINED else ALIASES.get(qual)) in table
                    for qual in facts.qualnames_of(call.func)):  # type: ignore[attr-defined]
                return True
    return False


_LOSS_WORDS = frozenset(q.rsplit(".", 1)[1] for q in LOSS_FUNCTIONS)
_LEGACY_REDUCTION = ("size_average", "reduce")


def may_flag_tl701(facts: FileFacts, options: Options) -> bool:
    """TL701 reports ``size_average=``/``reduce=`` given to a call whose qualified name is
    a ``torch.nn`` loss class or loss function. A qualified name ends with the callee's
    attribute (``x.scatter_(..., reduce=...)`` is never a loss); a plain name may be an
    alias, unless it is imported as something else than a loss (and than a project name,
    which the project may alias to one)."""
    for call in facts.nodes(ast.Call):
        if not any(k.arg in _LEGACY_REDUCTION for k in call.keywords):  # type: ignore[attr-defined]
            continue
        func = call.func  # type: ignore[attr-defined]
        if type(func) is ast.Attribute:
            if func.attr.endswith("Loss") or func.attr in _LOSS_WORDS:
                return True
            continue
        if type(func) is not ast.Name:
            return True  # a call's result, a subscript: anything
        if func.id.endswith("Loss") or func.id in _LOSS_WORDS:
            return True
        if func.id not in facts.bindings:
            return True  # a local or module-level name may be bound to a loss
        if any(is_loss_class(q) or q in LOSS_FUNCTIONS or _from_elsewhere(q)
               for q in facts.qualnames_of(func)):
            return True
    return False


def may_flag_tl703(facts: FileFacts, options: Options) -> bool:
    """TL703 reports a call of a deprecated ``torch.cuda.amp`` callable, unless it is the
    old-PyTorch branch of a version switch: an ``if``, conditional expression or ``try``
    around it, inside its function, that also names the new API. A call surely such a
    fallback is ruled out; one the rule may read otherwise holds."""
    for call in facts.nodes(ast.Call):
        if not facts.qualnames_of(call.func).isdisjoint(  # type: ignore[attr-defined]
                CUDA_AMP_DEPRECATED) and not _surely_fallback(facts, call):
            return True
    return False


def _surely_fallback(facts: FileFacts, call: ast.AST) -> bool:
    scopes = _scopes(facts)
    for switch in facts.nodes(*_SWITCHES):
        if not _inside(call, switch) or any(
                _inside(scope, switch) and _inside(call, scope) for scope in scopes):
            continue  # (the rule looks no further out than the call's function)
        if any(_surely_new_api(facts, node) for node in ast.walk(switch)):
            return True
    return False


def _scopes(facts: FileFacts) -> list[ast.AST]:
    """The file's defs, classes and lambdas (once per file)."""
    return facts.once("tl703 scopes", lambda: list(facts.nodes(*_SCOPES)))


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    """``node`` starts within ``outer``, a def's or class's decorators included."""
    return first_start(outer) <= start(node) <= end(outer)


def _surely_new_api(facts: FileFacts, node: ast.AST) -> bool:
    """A dotted name that surely means the new API: its first name is only imported (no
    alias, parameter or assignment anywhere could make the rule read it otherwise)."""
    if type(node) not in (ast.Name, ast.Attribute):
        return False
    found = facts.qualnames_of(node)
    if len(found) != 1 or not next(iter(found)).startswith(NEW_AMP_API):
        return False
    head = node
    while type(head) is ast.Attribute:
        head = head.value  # type: ignore[attr-defined]
    return _only_imported(facts, head.id)  # type: ignore[attr-defined]


def _only_imported(facts: FileFacts, name: str) -> bool:
    """``name`` is bound by imports of the module's own code alone (one inside a function
    or class binds it there only, which the rule reads otherwise)."""
    def find() -> bool:
        if name in facts.aliases or name not in facts.bindings:
            return False
        scopes = _scopes(facts)
        for node in facts.nodes(ast.Import, ast.ImportFrom):
            if any((a.asname or a.name.split(".", 1)[0]) == name  # type: ignore[attr-defined]
                   for a in node.names) and any(  # type: ignore[attr-defined]
                    _inside(node, scope) for scope in scopes):
                return False
        for node in facts.nodes(ast.Name):
            if node.id == name and type(node.ctx) is not ast.Load:  # type: ignore[attr-defined]
                return False
        for node in facts.nodes(ast.arg):
            if node.arg == name:  # type: ignore[attr-defined]
                return False
        for node in facts.nodes(*_SCOPES[:3], ast.ExceptHandler, ast.Global, ast.Nonlocal):
            if name == getattr(node, "name", None) or name in getattr(node, "names", ()):
                return False
        return not any(name in (getattr(n, "name", None), getattr(n, "rest", None))
                       for n in facts.nodes(*_MATCH_CAPTURES))
    return facts.once(("only imported", name), find)
