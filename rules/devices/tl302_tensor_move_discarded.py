from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import (
    code,
    iter_nodes,
    iter_scope,
    method_call,
    receiver,
    string_value,
)
from torchlint.analysis.torch_facts import TENSOR_FACTORIES
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls_method, check
from torchlint.notebook import MARKER_PREFIX
from torchlint.rule import Rule
from torchlint.rules.devices.batches import batch_item, is_known_tensor_name


class TensorMoveDiscarded(Rule):
    """## What it does
    Flags `x.cuda()`, `x.cpu()` or `x.to(...)` written as a statement on its own when `x` is
    known to be a tensor, so the moved copy is thrown away. It does not flag a `.to(...)`
    whose every argument is the `dtype=`/`device=` the tensor's factory was given just before
    (`bias.to(q.dtype)` after `bias = torch.zeros(..., dtype=q.dtype)`): that call returns the
    tensor itself, so nothing is lost. Nor the last statement of a notebook cell, whose
    value Jupyter displays. Tensors include those of the legacy constructors
    (`torch.Tensor(3, 4)`, `torch.cuda.LongTensor(n)`).

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
    Unsafe when the tensor is later passed to a module built in the same function that is
    never moved (`D = Discriminator(); x.cuda(); D(x)`): today `D` gets a CPU tensor, after
    the fix a CUDA one, and the call fails.
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
    requires = calls_method("cuda", "cpu", "to") & check("torchlint.rules.devices.screens:may_flag_tl302")
    message = ("`{name}.{method}()` returns a new tensor that is discarded; "
               "assign it: `{name} = {name}.{method}(...)`")
    fix_safety = "sometimes"
    fix_title = "Assign the moved tensor"

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        attribute = method_call(call, "cuda", "cpu", "to")
        if attribute is None or self._displayed(node):
            return
        assert isinstance(call, cst.Call)
        target = attribute.value
        if isinstance(target, cst.Name):
            if not is_known_tensor_name(self.context, target, node):
                return
            if self._already_there(target, call, node):
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
            edit = NodeEdit(node, f"{target.value} = ", kind="insert_before")
            # a module built here and never moved would then get a tensor on another device
            fix = Fix.unsafe(edit) if self._feeds_unmoved_module(target.value, node) else (
                Fix.safe(edit))
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

    def _displayed(self, node: cst.Expr) -> bool:
        """The last statement of a notebook cell: Jupyter shows its value, nothing is lost
        (``m.to(device)`` at the end of a tutorial's cell displays the moved tensor)."""
        ctx = self.context
        if not ctx.path.endswith(".ipynb") or len(ctx.ancestors) < 3:
            return False
        line, module = ctx.ancestors[-2], ctx.ancestors[-3]
        if not isinstance(module, cst.Module) or not isinstance(line, cst.SimpleStatementLine):
            return False
        if line.body[-1] is not node:
            return False
        body = list(module.body)
        position = next((i for i, s in enumerate(body) if s is line), None)
        if position is None:
            return False
        if position + 1 == len(body):
            return True
        following = body[position + 1]
        return any(empty.comment is not None and empty.comment.value.startswith(MARKER_PREFIX)
                   for empty in getattr(following, "leading_lines", ()))

    def _already_there(self, name: cst.Name, call: cst.Call, at: cst.CSTNode) -> bool:
        """``bias.to(q.dtype)`` right after ``bias = torch.zeros(..., dtype=q.dtype)``: every
        argument of the move is what the factory was given, so it returns the tensor itself."""
        bound = self.context.binding(name.value, at)
        if bound is None or bound.kind != "assign" or not isinstance(bound.value, cst.Call):
            return False
        if self.context.qualified_name(bound.value.func) not in TENSOR_FACTORIES:
            return False
        given = {code(arg.value) for arg in bound.value.args
                 if arg.keyword is not None and arg.keyword.value in ("dtype", "device")}
        if attribute_name(call) != "to" or not call.args:
            return False
        return all(not arg.star and (arg.keyword is None or arg.keyword.value in (
            "dtype", "device")) and code(arg.value) in given for arg in call.args)

    def _feeds_unmoved_module(self, name: str, stmt: cst.CSTNode) -> bool:
        """Later in the scope, ``name`` is passed to ``m(...)`` where ``m`` was built in this
        scope (``m = Model(...)``) and is never moved to a device."""
        scope = self.context.current_function or self.context.module
        nodes = list(iter_scope(scope))
        start = next((i for i, n in enumerate(nodes) if n is stmt), None)
        if start is None:
            return False
        built = {t.value for n in nodes if isinstance(n, cst.Assign) and isinstance(
            n.value, cst.Call) for t in (x.target for x in n.targets) if isinstance(t, cst.Name)}
        moved = {r.value for n in nodes if isinstance(n, cst.Call) for r in [
            receiver(n)] if method_call(n, "to", "cuda") is not None and isinstance(
            r, cst.Name)}
        for node in nodes[start + 1:]:
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and (
                    node.func.value in built - moved) and any(
                    isinstance(arg.value, cst.Name) and arg.value.value == name
                    for arg in node.args):
                return True
        return False

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


def attribute_name(call: cst.Call) -> str | None:
    attribute = method_call(call)
    return attribute.attr.value if attribute is not None else None
