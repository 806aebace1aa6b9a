from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.torch_releases import Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls
from torchlint.fix.edits import import_cleanup, reference
from torchlint.rule import Rule

DEPRECATED = {
    f"torch.nn.utils{module}.{name}": name
    for module in ("", ".clip_grad")
    for name in ("clip_grad_norm", "clip_grad_value")
}


class ClipGradNotInplaceName(Rule):
    """## What it does
    Flags calls of `torch.nn.utils.clip_grad_norm` and `clip_grad_value`, the deprecated
    names of `clip_grad_norm_` and `clip_grad_value_`.

    ## Why is this bad?
    The functions modify the gradients in place, which PyTorch marks with a trailing
    underscore. The old names only forward to the new ones with a deprecation warning, and
    they hide that the call changes `p.grad` rather than returning clipped copies.

    ## Example
    ```python
    import torch

    def step(model, optimizer):
        torch.nn.utils.clip_grad_norm(model.parameters(), max_norm=1.0)
        optimizer.step()
    ```

    Use instead:
    ```python
    import torch

    def step(model, optimizer):
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
    ```

    ## Fix safety
    Safe: the old name calls the new one with the same arguments. A name imported with
    `from torch.nn.utils import clip_grad_norm` is renamed in the import and at its calls.
    """

    code = "TL702"
    name = "clip-grad-not-inplace-name"
    triggers = ("clip_grad",)
    # the old name without "_" is spelled at the call or in its import; torch is imported
    patterns = (r"\bclip_grad_(?:norm|value)\b", r"\btorch\b")
    requires = calls(*DEPRECATED)
    message = "{old} is deprecated; call {old}_ (it clips the gradients in place)"
    fix_safety = "safe"
    applies_to = Releases(why="The old names warn in every release torchlint knows, and "
                          "`clip_grad_norm_`/`clip_grad_value_` exist in every one, so the fix "
                          "suits any target.")
    fix_title = "Use the in-place name (clip_grad_*_)"


    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        old = DEPRECATED.get(qual or "")
        if old is None:
            return
        self.report(node, fix=self._fix(node.func, old), old=old)

    def _fix(self, func: cst.BaseExpression, old: str) -> Fix | None:
        new = f"{old}_"
        if isinstance(func, cst.Attribute):
            return Fix.safe(NodeEdit(func.attr, new))
        if not isinstance(func, cst.Name):
            return None
        index = index_for(self.context)
        site = index.import_site(func.value, func)
        if site is not None and site.alias.asname is not None:
            return Fix.safe(NodeEdit(site.alias.name, new))
        cleanup = import_cleanup(index, func.value, lambda call: True, func)
        if site is not None and cleanup and self.context.lookup(new) is None and (
                new not in index.names and new not in index.imports):
            return Fix.safe(NodeEdit(func, new), NodeEdit(site.alias.name, new))
        spelled = reference(self.context, f"torch.nn.utils.{new}")
        if spelled is None:
            return None
        spelling, need = spelled
        edits = [NodeEdit(func, spelling)]
        if cleanup:
            edits.extend(cleanup)
        return Fix.safe(*edits, imports=(need,) if need else ())
