from __future__ import annotations

import libcst as cst

from torchlint.analysis.cuda_use import file_uses_cuda
from torchlint.analysis.nodes import children_of, iter_scope, method_call
from torchlint.analysis.tensor_facts import is_numpy_array, is_tensor_expression
from torchlint.analysis.torch_facts import is_loss_call
from torchlint.rule import Rule
from torchlint.rules.devices.batches import is_known_tensor_name

_SYNC_METHODS = ("item", "cpu", "numpy", "tolist")


class HostSyncInLoop(Rule):
    """## What it does
    Flags `.item()`, `.cpu()`, `.numpy()`, `.tolist()` and `print(tensor)` inside a training
    loop (a loop whose own body calls `.backward()`), in a file that puts tensors or modules
    on a GPU. Only the first such read of a step is reported: once it has waited, the next
    ones find the queue empty.

    It does not flag reads in an epoch loop around the batch loop or in a validation loop
    beside it (once per epoch), reads under `if step % N == 0:`, nor code that runs on the
    CPU (no CUDA anywhere in the file, Intel's extension, CPU autocast).

    ## Why is this bad?
    Each of these copies a value from the GPU to the host, so Python has to wait until every
    queued kernel has finished. Done on every step, it stops the CPU from queueing the next
    step's work while the GPU is busy, and the GPU sits idle between steps. Accumulate on the
    device and read the value every N steps (under an `if step % N == 0:`), or after the loop.

    ## Example
    ```python
    import torch

    def train(model, loader, optimizer, criterion):
        for inputs, targets in loader:
            loss = criterion(model(inputs.cuda()), targets.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            print("loss", loss.item())
    ```

    Use instead:
    ```python
    import torch

    def train(model, loader, optimizer, criterion):
        for step, (inputs, targets) in enumerate(loader):
            loss = criterion(model(inputs.cuda()), targets.cuda())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 100 == 0:
                print("loss", loss.item())
    ```

    ## Fix safety
    No fix: how often to read values back is a choice about logging, not a mechanical change.
    """

    code = "TL306"
    name = "host-sync-in-loop"
    triggers = ("backward",)
    # a sync method (.item() ...) or print, and a `.backward()` / `.manual_backward()` call
    patterns = (r"\b(?:item|cpu|numpy|tolist|print|builtins)\b", r"backward\b")
    message = "{what} in a training loop waits for the GPU on every step"
    default = False

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self._training: dict[int, bool] = {}
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        attribute = method_call(node, *_SYNC_METHODS)
        if attribute is not None:
            if self._inside_sync_chain(node):
                return
            if isinstance(attribute.value, cst.Name) and \
                    is_numpy_array(ctx, attribute.value, node):
                return
            what = f"`.{attribute.attr.value}()`"
        elif ctx.qualified_name(node.func) == "builtins.print" and self._prints_tensor(node):
            what = "`print(tensor)`"
        else:
            return
        loop = self._training_loop()
        if loop is None or id(loop) in self._reported or not file_uses_cuda(self.context):
            return
        # the first wait of a step drains the queue; later ones in the same step cost little
        self._reported.add(id(loop))
        self.report(node, what=what)

    def _inside_sync_chain(self, node: cst.Call) -> bool:
        """``x.cpu()`` inside ``x.cpu().numpy()``: report the chain once, at its outer call."""
        parent = self.context.parent(node)
        if not isinstance(parent, cst.Attribute) or parent.value is not node:
            return False
        outer = self.context.parent(parent)
        return method_call(outer, *_SYNC_METHODS) is not None if outer is not None else False

    def _prints_tensor(self, node: cst.Call) -> bool:
        ctx = self.context
        for arg in node.args:
            value = arg.value
            if arg.keyword is not None or arg.star:
                continue
            if is_tensor_expression(ctx, value) or is_loss_call(ctx, value):
                return True
            if isinstance(value, cst.Name):
                if is_known_tensor_name(ctx, value, node):
                    return True
                bound = ctx.binding(value.value, node)
                if bound is not None and bound.kind == "assign" and bound.value is not None \
                        and is_loss_call(ctx, bound.value):
                    return True
        return False

    def _training_loop(self) -> cst.For | cst.While | None:
        """The innermost loop around the current node, when it is a training loop: its own
        body (not a loop nested in it) calls ``.backward()``. A read in an epoch loop around
        the batch loop, or in a validation loop beside it, happens once per epoch."""
        ancestors = self.context.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return None
            if isinstance(anc, cst.If) and _is_periodic(anc.test) and \
                    ancestors[i + 1] is not anc.test:
                return None  # logging every N steps is the recommended pattern
            if isinstance(anc, (cst.For, cst.While)) and ancestors[i + 1] is anc.body:
                return anc if self._is_training_loop(anc) else None
        return None

    def _is_training_loop(self, loop: cst.For | cst.While) -> bool:
        key = id(loop)
        if key not in self._training:
            self._training[key] = any(
                method_call(n, "backward", "manual_backward") is not None
                for n in _own_body(loop)
            )
        return self._training[key]


def _own_body(loop: cst.For | cst.While):  # type: ignore[no-untyped-def]
    """The nodes of a loop's body, not entering nested loops or scopes."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (cst.For, cst.While, cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        stack.extend(children_of(node))


def _is_periodic(test: cst.BaseExpression) -> bool:
    return any(isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Modulo)
               for n in iter_scope(test))
