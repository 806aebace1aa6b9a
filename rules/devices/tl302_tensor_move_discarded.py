from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import iter_nodes, method_call, string_value
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.rule import Rule
from torchlint.rules.devices.batches import batch_item, is_known_tensor_name


class TensorMoveDiscarded(Rule):
    """## What it does
    Flags `x.cuda()`, `x.cpu()` or `x.to(...)` written as a statement on its own when `x` is
    known to be a tensor, so the moved copy is thrown away.

    ## Why is this bad?
    Unlike `nn.Module.to()`, which moves parameters in place, the tensor methods return a
    new tensor and leave the original where it was. The statement does a transfer (or a
    conversion) and then drops the result; the next line still works with the CPU tensor,
    and usually fails later with a "tensors on different devices" error, far from the cause.

    ## Example
    ```python
    import torch

    def step(model, loader, device):
        for images, labels in loader:
            images.to(device)
            labels.cuda()
            model(images)
    ```

    Use instead:
    ```python
    import torch

    def step(model, loader, device):
        for images, labels in loader:
            images = images.to(device)
            labels = labels.cuda()
            model(images)
    ```

    ## Fix safety
    Safe: the statement becomes an assignment of the moved tensor back to the same name,
    which is what the line was meant to do. When the name is moved again on its next use
    (`images.to(device)` right before `images = Variable(images.to(device))`), the
    statement is only dead code and the fix removes it instead, so that fixing both lines
    never leaves the same move twice. Other references to the old tensor are untouched.
    For an item of a whole batch the move is stored back into the batch: safe for a string
    key (`batch["image"] = batch["image"].cuda()`, a dict), unsafe for an integer index
    (`batch[0] = ...` fails when the collate function returns a tuple).
    """

    code = "TL302"
    name = "tensor-move-discarded"
    # the method names (".to" missed `x.` + backslash-newline + `to(d)`); no torch needed:
    # `for x, y in train_loader` makes x a batch tensor by the loader's name alone
    triggers = ("to", "cuda", "cpu")
    # an expression statement `name.to(` / `name[key].cuda(` (statement start: line start,
    # `;` or `:`); or a subscript whose key holds `]` (`[...'a]']`); or a comment inside
    patterns = (r"(?:^|[;:])[\s(]*\w+[\s\\)]*(?:\[[^\]]*\][\s\\)]*)?\.[\s\\]*"
                r"(?:cuda|cpu|to)[\s\\]*[(#)]"
                r"|\][^\]]*[\"')][\s\\)]*\][\s\\)]*\.[\s\\]*(?:cuda|cpu|to)[\s\\]*[(#)]"
                r"|#[^\n]*\n[\s\w()]*\][\s\\)]*\.[\s\\]*(?:cuda|cpu|to)[\s\\]*[(#)]"
                r"|#[^\n]*\n[\s\\)\]]*\.?[\s\\]*(?:cuda|cpu|to)[\s\\]*[(#)]",)
    message = ("`{name}.{method}()` returns a new tensor that is discarded; "
               "assign it: `{name} = {name}.{method}(...)`")
    fix_safety = "sometimes"
    fix_title = "Assign the moved tensor"

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        attribute = method_call(call, "cuda", "cpu", "to")
        if attribute is None:
            return
        assert isinstance(call, cst.Call)
        target = attribute.value
        if isinstance(target, cst.Name):
            if not is_known_tensor_name(self.context, target, node):
                return
            line = self._moved_again(target.value, attribute.attr.value)
            if line is not None:
                # `x.to(d)` right before `x = ....x.to(d)...`: the statement is only dead code;
                # assigning it would leave the same move twice
                statement = self.context.ancestors[-2]
                assert isinstance(statement, cst.SimpleStatementLine)
                # the line goes; a comment at its end stays, on a line of its own
                trailing = statement.trailing_whitespace
                removal = (NodeEdit(node, ""), NodeEdit(trailing.whitespace, "")) if (
                    trailing.comment) else (NodeEdit(statement, kind="delete_line"),)
                self.report(call, fix=Fix.safe(*removal),
                            message=f"`{target.value}.{attribute.attr.value}()` returns a new "
                            f"tensor that is discarded, and `{target.value}` is moved again "
                            "on the next use: remove this line")
                return
            fix = Fix.safe(NodeEdit(node, f"{target.value} = ", kind="insert_before"))
        elif batch_item(self.context, target, node):
            # batch["image"] of a dict batch can take the moved tensor back; batch[0] only
            # when the collate function made a list, not a tuple
            assert isinstance(target, cst.Subscript)
            spelled = self.context.code(target)
            edit = NodeEdit(node, f"{spelled} = ", kind="insert_before")
            key = target.slice[0].slice
            keyed = isinstance(key, cst.Index) and string_value(key.value) is not None
            fix = Fix.safe(edit) if keyed else Fix.unsafe(edit)
        else:
            return
        name = self.context.code(target)
        self.report(call, fix=fix, name=name, method=attribute.attr.value)

    def _moved_again(self, name: str, method: str) -> int | None:
        """Is the next statement of this block that reads ``name`` an assignment to it whose
        value moves ``name`` the same way (``name = Variable(name.to(device))``)? Only for a
        statement alone on its line. Returns an index when it is, else None."""
        ancestors = self.context.ancestors
        if len(ancestors) < 3:
            return None
        line, block = ancestors[-2], ancestors[-3]
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1 or not (
                isinstance(block, (cst.IndentedBlock, cst.Module))):
            return None
        body = list(block.body)
        position = next((i for i, s in enumerate(body) if s is line), None)
        if position is None:
            return None
        for index in range(position + 1, len(body)):
            later = body[index]
            names = [n for n in iter_nodes(later) if isinstance(n, cst.Name) and n.value == name]
            if not names:
                continue
            if not (isinstance(later, cst.SimpleStatementLine) and len(later.body) == 1):
                return None
            assign = later.body[0]
            if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and isinstance(
                    assign.targets[0].target, cst.Name) and assign.targets[0].target.value == name):
                return None
            moves = [n for n in iter_nodes(assign.value)
                     if (found := method_call(n, method)) is not None
                     and isinstance(found.value, cst.Name) and found.value.value == name]
            reads = [n for n in iter_nodes(assign.value) if isinstance(n, cst.Name)
                     and n.value == name]
            return index if moves and len(reads) == 1 else None
        return None
