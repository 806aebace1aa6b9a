from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_nodes, self_attribute, string_value
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import attribute, check
from torchlint.rule import Rule
from torchlint.rules.patterns import GAP

_TYPO = "require_grad"


class RequiresGradTypo(Rule):
    """## What it does
    Flags an assignment to `X.require_grad` (without the `s`) in a file that imports torch,
    typically `p.require_grad = False` in a loop meant to freeze layers. Not `self.require_grad`
    and not an attribute the same file also reads: that is the project's own attribute.

    ## Why is this bad?
    Tensors have no `require_grad` attribute, but Python lets any attribute be set on them:
    the assignment quietly creates a new, unused attribute and the real flag,
    `requires_grad`, keeps its value. Layers meant to be frozen go on training (or layers
    meant to train stay frozen), the optimizer updates them, and nothing ever fails.

    ## Example
    ```python
    import torch

    backbone = torch.nn.Linear(8, 8)
    for p in backbone.parameters():
        p.require_grad = False
    ```

    Use instead:
    ```python
    import torch

    backbone = torch.nn.Linear(8, 8)
    for p in backbone.parameters():
        p.requires_grad = False
    ```

    ## Fix safety
    Safe: the attribute becomes `requires_grad`, which is what the assignment meant to set;
    nothing read the misspelled attribute.
    """

    code = "TL212"
    name = "requires-grad-typo"
    triggers = (_TYPO,)
    # the file imports torch, and `.require_grad` is written somewhere
    patterns = (r"\btorch\b", rf"\.{GAP}*require_grad\b")
    requires = attribute(_TYPO) & check("torchlint.rules.training.value_screens:may_flag_tl212")
    message = "'{expr}.require_grad' only sets a new attribute; the flag is 'requires_grad'"
    fix_safety = "safe"
    fix_title = "Use requires_grad"

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._check_target(target.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._check_target(node.target)

    def _check_target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._check_target(element.value)
            return
        if not isinstance(target, cst.Attribute) or target.attr.value != _TYPO:
            return
        if self_attribute(target) is not None or not self.context.imports_from("torch"):
            return
        if self._read_in_file():
            return
        self.report(target, expr=self.context.code(target.value).strip(),
                    fix=Fix.safe(NodeEdit(target.attr, "requires_grad")))

    def _read_in_file(self) -> bool:
        """The file reads ``.require_grad`` somewhere (or names it in ``getattr``/``hasattr``):
        the project's own attribute, not a typo."""
        return self.context.cached("tl212_read", self._scan_reads)

    def _scan_reads(self) -> bool:
        written: set[int] = set()
        module = self.context.module
        for node in iter_nodes(module):
            if isinstance(node, cst.Assign):
                for target in node.targets:
                    written.update(id(n) for n in _target_attributes(target.target))
            elif isinstance(node, cst.AnnAssign):  # `x.require_grad += ...` reads it too
                written.update(id(n) for n in _target_attributes(node.target))
        for node in iter_nodes(module):
            if isinstance(node, cst.Attribute) and node.attr.value == _TYPO and (
                    id(node) not in written):
                return True
            if isinstance(node, cst.SimpleString) and string_value(node) == _TYPO:
                return True
        return False


def _target_attributes(target: cst.BaseExpression) -> list[cst.Attribute]:
    """The ``x.require_grad`` attributes an assignment target writes."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [a for element in target.elements for a in _target_attributes(element.value)]
    if isinstance(target, cst.Attribute) and target.attr.value == _TYPO:
        return [target]
    return []
