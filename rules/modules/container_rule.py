"""The shared rule of TL101/TL102: report a plain container of layers stored on ``self``
and wrap it in ``nn.ModuleList``/``nn.ModuleDict``; and their prefilter pattern."""

from __future__ import annotations

import re

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import self_attribute
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import reference
from torchlint.rule import Rule
from torchlint.rules.modules.containers import Finding, may_hold_container, unregistered_containers
from torchlint.rules.patterns import ASSIGNED, DOTTED, GAP


def container_pattern(bracket: str, builtin: str) -> str:
    """Prefilter of TL101/TL102: a container made by ``= [...]`` / ``= {...}`` (or inside
    parentheses), by ``= list(...)`` / ``= builtins.list(...)``, or an alias ``list as L``."""
    return (ASSIGNED + re.escape(bracket) + "|" + ASSIGNED + DOTTED + builtin + r"\b"
            r"|\b" + builtin + GAP + r"+as\b")


class UnregisteredContainerRule(Rule):
    """Shared logic of TL101/TL102 (no code: not a rule by itself)."""

    kind = "list"
    container = "ModuleList"

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # functions that store something list- or dict-like on self: the only ones analysed
        self._candidates: set[int] = set()
        # per function, the names assigned so far (``self.X = name`` needs an earlier one)
        self._assigned: dict[int, set[str]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1:
            self._note(node.targets[0].target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._note(node.target, node.value)

    def _note(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        function = self.context.current_function
        if function is None:
            return
        if isinstance(target, cst.Name):
            self._assigned.setdefault(id(function), set()).add(target.value)
        elif self_attribute(target) is not None:
            if isinstance(value, cst.Name):
                candidate = value.value in self._assigned.get(id(function), ())
            else:
                candidate = may_hold_container(self.context, value, self.kind)
            if candidate:
                self._candidates.add(id(function))

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        if id(node) not in self._candidates:
            return
        cls = self.context.enclosing_class(node)
        if cls is None or not self.context.is_module_class(cls):
            return
        for finding in unregistered_containers(self.context, cls, node, self.kind):
            self.report(finding.target, fix=self._fix(finding),
                        attr=self_attribute(finding.target))

    def _fix(self, finding: Finding) -> Fix | None:
        if finding.fix is None:
            return None
        ref = reference(self.context, "torch.nn")
        if ref is None:
            return None
        spelling, need = ref
        imports = (need,) if need is not None else ()
        container = f"{spelling}.{self.container}"
        value = finding.value
        if finding.fix == "wrap":
            # two insertions keep the value's own lines and indentation untouched
            return Fix.safe(NodeEdit(value, f"{container}(", "insert_before"),
                            NodeEdit(value, ")", "insert_after"), imports=imports)
        elif finding.fix == "empty":
            edit = NodeEdit(value, f"{container}()")
        else:
            assert isinstance(value, cst.Call)
            edit = NodeEdit(value.func, container)
        return Fix.safe(edit, imports=imports)
