"""The screen's ``ast`` checks of the migration rules whose words are common in clean code
(TL701, TL705, TL719): each is true on every file its rule can flag, and looks for the very call
the rule reports.

A name imported from another module than torch or torchvision may be an alias the project
defines (the rules follow the project's aliases). Imports neither libcst nor a rule (the
screen runs before either is loaded).
"""

from __future__ import annotations

import ast

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
