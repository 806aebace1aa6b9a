from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import (
    code,
    get_arg,
    has_keyword,
    is_literal_true,
    method_call,
    positional_args,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.fix.edits import with_keywords
from torchlint.rule import Rule
from torchlint.rules.devices.batches import DATALOADERS, batch_loop, batch_root, unwrap_loader
from torchlint.rules.devices.cuda import is_device_move

# position of non_blocking when passed positionally: x.cuda(device, non_blocking),
# x.to(device, dtype, non_blocking)
_NON_BLOCKING_POSITION = {"cuda": 1, "to": 2}


class TransferWithoutNonBlocking(Rule):
    """## What it does
    Flags `.to(device)` / `.cuda()` of a batch from a `DataLoader(..., pin_memory=True)`
    without `non_blocking=True`.

    ## Why is this bad?
    Pinned (page-locked) memory exists so that host-to-device copies can run asynchronously,
    overlapping with work already queued on the GPU. A blocking copy makes Python wait for
    each transfer to finish, so asking the loader to pin its batches buys little.

    ## Example
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device):
        loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
        for images, labels in loader:
            images = images.to(device)
            labels = labels.cuda()
            model(images)
    ```

    Use instead:
    ```python
    from torch.utils.data import DataLoader

    def train(model, dataset, device):
        loader = DataLoader(dataset, batch_size=64, num_workers=4, pin_memory=True)
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.cuda(non_blocking=True)
            model(images)
    ```

    ## Fix safety
    Safe: the copy is ordered on the current CUDA stream, so every later GPU operation on the
    tensor sees the finished data; only host code that inspects the device tensor's memory
    by other means could observe the difference.
    """

    code = "TL308"
    name = "transfer-without-non-blocking"
    # a torch DataLoader ("pin_memory" missed pin_memory passed by position, the 8th argument)
    triggers = ("DataLoader",)
    # torch import; DataLoader; a literal True; a for loop; a `.to(`/`.cuda(` call; and
    # pin_memory by keyword, or a True passed by position (after a comma)
    patterns = (r"\btorch\b", r"\bDataLoader\b", r"\bTrue\b", r"\bfor\b",
                r"\.[\s\\]*(?:cuda|to)[\s\\]*[(#)]"
                r"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*(?:cuda|to)[\s\\]*[(#)]",
                r"\bpin_memory\b|,[\s\\(]*True\b|#[^\n]*\n[\s\\(]*True\b")
    message = "batch from a pinned DataLoader moved with `.{method}()` without non_blocking=True"
    default = False
    fix_safety = "safe"
    fix_title = "Pass non_blocking=True"

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.context
        if not is_device_move(ctx, node):
            return
        attribute = method_call(node)
        assert attribute is not None
        method = attribute.attr.value
        if has_keyword(node, "non_blocking") or any(a.star for a in node.args) or \
                len(positional_args(node)) > _NON_BLOCKING_POSITION[method]:
            return
        root = batch_root(attribute.value)
        if root is None:
            return
        loop = batch_loop(ctx, root.value, node)
        if loop is None:
            return
        if not self._is_pinned(unwrap_loader(ctx, loop.iter), loop):
            return
        self.report(node, fix=self._fix(node), method=method)

    def _is_pinned(self, loader: cst.BaseExpression, loop: cst.For) -> bool:
        ctx = self.context
        if isinstance(loader, cst.Name):
            bound = ctx.binding(loader.value, loop)
            if bound is None or bound.kind != "assign" or bound.value is None:
                return False
            loader = bound.value
        if not isinstance(loader, cst.Call) or ctx.qualified_name(loader.func) not in DATALOADERS:
            return False
        pin = get_arg(loader, "pin_memory", 7)
        return pin is not None and is_literal_true(pin.value)

    @staticmethod
    def _fix(node: cst.Call) -> Fix | None:
        if node.args:
            last = node.args[-1].value
            return Fix.safe(NodeEdit(last, ", non_blocking=True", kind="insert_after"))
        new = with_keywords(node, ("non_blocking", cst.Name("True")))
        text = code(new)
        if "\n" in text:
            return None
        return Fix.safe(NodeEdit(node, text))
