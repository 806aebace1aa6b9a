"""The prefilter pattern kit: building blocks of the regular expressions in rules'
``patterns`` (see :mod:`torchlint.engine.prefilter` for how they are used).

A rule's patterns must match every file the rule could flag, however it is spelled:
through aliases, line continuations, comments between tokens and brackets.
"""

from __future__ import annotations

from torchlint.engine.prefilter import MODEL_NAME

__all__ = ["ASSIGNED", "DOTTED", "GAP", "GRAPH_VALUE", "MODEL_NAME", "torch_function"]

# Building blocks of rules' patterns. Between two tokens Python allows whitespace, a line
# continuation or a whole comment line: GAP is one such piece.
GAP = r"(?:[\s\\]|#[^\r\n]*[\r\n])"
# `=` and the start of the assigned value (gaps and opening parentheses)
ASSIGNED = r"=(?:[\s\\(]|#[^\r\n]*[\r\n])*"
# an optional `name.` (with gaps) before a name
DOTTED = r"(?:\w+(?:[\s\\)]|#[^\r\n]*[\r\n])*\." + GAP + r"*)?"


def torch_function(name: str) -> str:
    """A pattern for a file that can call ``torch.<name>``: spelled out (also through
    brackets, dots and backslashes, or ``torch.serialization``), an alias of torch or
    torch.serialization, ``name`` in a from-import list, or ``.name`` after a comment line."""
    return (rf"\b(?:torch|serialization)\W*{name}\b|\b(?:torch|serialization)[\s\\]+as\b"
            rf"|(?:\bimport|,)[\s\\(]*{name}[ \t\f]*(?:[,)#\\;]|as\b|$)"
            rf"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*{name}\b")


# a value that can carry an autograd graph: a loss (cross_entropy, *Loss, criterion...), an
# nn layer or Module, or a call of a model-named callee
GRAPH_VALUE = (r"(?i)loss|criteri|entropy|kl_div|\bnn\b|LightningModule"
               r"|(?:" + MODEL_NAME + r")(?:[\s\\]|#[^\n\r]*[\r\n])*\(")
