"""Reporting the mismatches of the size analysis (``torchlint.analysis.sizes``) shared by
TL510-TL512: each rule reports its kind at the layer call or argument being walked."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.sizes import size_facts
from torchlint.rule import Rule


def report_mismatches(rule: Rule, call: cst.Call, kind: str) -> None:
    """Report the ``kind`` mismatches found at ``call`` or at one of its arguments."""
    facts = size_facts(rule.context)
    if not facts.by_node:
        return
    nodes = (call,) if kind == "rank" else tuple(arg.value for arg in call.args)
    for node in nodes:
        for mismatch in facts.at(node, kind):
            rule.report(mismatch.node, detail=mismatch.message)
