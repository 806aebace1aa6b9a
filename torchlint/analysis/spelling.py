"""How torch names are spelled: one canonical spelling of a qualified name, and the words
that name a model. Pure text, without libcst: the ``ast`` triage and the text prefilter
use them before any syntax tree of libcst exists."""

from __future__ import annotations

import re


def canonical(qualname: str) -> str:
    """Fold re-export paths so rules compare one spelling (torch.nn.modules.conv.Conv2d)."""
    if qualname.startswith("torch.nn.modules."):
        return "torch.nn." + qualname.rsplit(".", 1)[1]
    if qualname.startswith("torch.nn.parallel.") and qualname.count(".") == 4:
        return "torch.nn.parallel." + qualname.rsplit(".", 1)[1]
    return qualname


def model_names_pattern(model_names: frozenset[str]) -> str:
    """A regular expression alternative matching every name
    :func:`~torchlint.analysis.torch_facts.is_model_name` accepts as the last part of a
    callee (for the rules' prefilter patterns)."""
    words = "|".join(sorted(re.escape(w) for w in model_names))
    return rf"\w*(?:model|net)|(?:\b|_)(?:{words})|\b(?:model|net)_\w*"


def is_optimizer_word(name: str) -> bool:
    """A name that reads as an optimizer's: ``optimizer``, ``opt``, ``optimizerD``,
    ``opt_g``, ``g_opt`` (the last part of an optimizer's expression)."""
    lowered = name.lower()
    return "optim" in lowered or lowered in ("opt", "opts") or lowered.startswith(
        "opt_") or lowered.endswith("_opt")
