"""Reporting the mismatches of the size analysis (``torchlint.analysis.sizes``) shared by
TL510-TL512. The analysis needs every call and assignment of the file: the rules note them
during the walk and report once it is over."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.sizes import observe, size_facts
from torchlint.rule import Rule


class SizeChainRule(Rule):
    """A rule reporting the size analysis's mismatches of one ``kind``."""

    kind: str

    def visit_Call(self, node: cst.Call) -> None:
        observe(self.context, node)

    def visit_Assign(self, node: cst.Assign) -> None:
        observe(self.context, node)

    def leave_Module(self, original_node: cst.Module) -> None:
        for found in size_facts(self.context).by_node.values():
            for mismatch in found:
                if mismatch.kind == self.kind:
                    self.report(mismatch.node, detail=mismatch.message)
