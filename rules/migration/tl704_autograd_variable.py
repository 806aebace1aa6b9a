from __future__ import annotations

import libcst as cst

from torchlint.analysis.fresh_tensors import carries_no_graph
from torchlint.analysis.imports import ModuleIndex, index_for
from torchlint.analysis.nodes import is_literal_true
from torchlint.analysis.torch_releases import Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import as_atom, import_cleanup, keeps_comments, receiver_text
from torchlint.rule import Rule

VARIABLE = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


class AutogradVariable(Rule):
    """## What it does
    Flags calls of `torch.autograd.Variable(...)`.

    ## Why is this bad?
    Since PyTorch 0.4 tensors carry autograd state themselves and `Variable` is a leftover
    that just hands back a tensor. Wrapping adds noise, suggests the tensor would otherwise
    not be tracked, and its old options (`volatile=True`) silently do nothing any more:
    use `torch.no_grad()` for those.

    ## Example
    ```python
    import torch
    from torch.autograd import Variable

    weights = Variable(torch.randn(3, 3), requires_grad=True)
    ```

    Use instead:
    ```python
    import torch

    weights = torch.randn(3, 3).requires_grad_()
    ```

    ## Fix safety
    Safe, and exact: `Variable(x)` hands back `x.detach()` (a new tensor sharing `x`'s
    memory, cut from its graph), so it becomes `x.detach()`, and
    `Variable(x, requires_grad=True)` a new leaf, `x.detach().requires_grad_()`, leaving `x`
    itself untouched. Where `x` provably carries no graph and is not used elsewhere (a
    literal, a fresh factory call without `requires_grad=`, `torch.from_numpy(...)`, or a
    move or cast of one), the detach is dropped: `x` and `x.requires_grad_()`. The import of
    `Variable` goes once no use remains. Other forms (`volatile=`, `requires_grad=` with a
    variable) are reported without a fix.
    """

    code = "TL704"
    name = "autograd-variable"
    triggers = ("Variable",)
    # every part of torch.autograd.Variable is spelled in an import or the call
    patterns = (r"\bVariable\b", r"\bautograd\b", r"\btorch\b")
    message = "torch.autograd.Variable is deprecated; tensors track gradients themselves"
    fix_safety = "safe"
    applies_to = Releases(why="`Variable` has been a no-op wrapper since 0.4, and "
                          "`requires_grad_()` exists in every release torchlint knows.")
    fix_title = "Remove Variable()"


    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in VARIABLE:
            return
        index = index_for(self.context)
        replacement = self._replacement(index, node)
        fix = None
        if replacement is not None:
            edits = [NodeEdit(node, replacement)]
            if isinstance(node.func, cst.Name):
                cleanup = import_cleanup(index, node.func.value,
                                         lambda call: self._replacement(index, call) is not None,
                                         node)
                if cleanup:
                    edits.extend(cleanup)
            fix = Fix.safe(*edits)
        self.report(node, fix=fix)

    def _replacement(self, index: ModuleIndex, node: cst.Call) -> str | None:
        args = node.args
        if not args or args[0].keyword is not None or args[0].star:
            return None
        value = args[0].value
        flag = args[1] if len(args) == 2 else None
        if flag is not None and (flag.star or flag.keyword is not None and (
                flag.keyword.value != "requires_grad")):
            return None  # volatile=, **options
        if len(args) > 2 or flag is not None and not isinstance(flag.value, cst.Name):
            return None
        # Variable(x) is x.detach(): where x may carry a graph, the graph stays cut
        fresh = carries_no_graph(self.context, value)
        if flag is None or flag.value.value == "False":  # type: ignore[attr-defined]
            text = as_atom(value, index.parents.get(node)) if fresh else (
                f"{receiver_text(value)}.detach()")
        elif is_literal_true(flag.value):
            # a new leaf: x itself must not start requiring grad (nor keep its history)
            text = f"{receiver_text(value)}{'' if fresh else '.detach()'}.requires_grad_()"
        else:
            return None
        if node.lpar:
            text = f"({text})"
        return text if keeps_comments(node, text) else None
