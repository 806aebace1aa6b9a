from __future__ import annotations

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere
from torchlint.analysis.nodes import iter_scope, parameters, positional_args, string_value
from torchlint.analysis.training_objects import (
    DATA_LOADERS,
    MOVING_LOADER_ARGS,
    assignment_index,
    call_argument,
    class_methods,
    model_moves,
    provably_cpu,
    returns_plain_loader,
    source_order,
    text,
)
from torchlint.engine.triage import calls_method, check, loops
from torchlint.rule import Rule

# libraries that place models and batches on the device themselves
_MANAGING_LIBRARIES = ("accelerate", "lightning", "pytorch_lightning", "lightning_fabric",
                       "ignite", "composer", "deepspeed")
# calls that wrap an iterable and yield its items (``enumerate`` pairs them with an index)
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "track"})


# tensor methods that keep the device: ``model(x.float())`` still gets a CPU tensor
_KEEPING_METHODS = frozenset({"float", "long", "half", "double", "int", "view", "reshape",
                              "unsqueeze", "squeeze", "permute", "flatten", "contiguous",
                              "transpose", "clone", "detach"})


def _through_keeping_methods(node: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
            node.func.attr.value in _KEEPING_METHODS):
        node = node.func.value
    return node


def _from_batch(value: cst.BaseExpression, batch: set[str]) -> bool:
    """``batch`` or ``batch[0]`` / ``batch["image"]`` of a batch name."""
    if isinstance(value, cst.Subscript):
        value = value.value
    return isinstance(value, cst.Name) and value.value in batch


class InputNotMovedToDevice(Rule):
    """## What it does
    Flags, in one function, a batch element passed to a model that was moved to a device
    (`model.to(device)`, `model.cuda()`) when the batch comes from a loop over a
    `torch.utils.data.DataLoader` of the file, or one a function of the file or of another
    file of the project returns (`train_loader = build_loader(cfg)`), and the element was
    never moved (`.to`,
    `.cuda`) nor rebound in the loop. Silent for a model provably on the CPU, loaders with a
    `collate_fn` or `pin_memory_device`, models whose class (in the file) moves its inputs
    in `forward`, and files using accelerate, Lightning or Fabric, which place batches
    themselves.

    ## Why is this bad?
    The model's weights are on the GPU and the batch is on the CPU: the first forward raises
    "Expected all tensors to be on the same device". The job fails only once it reaches the
    training loop, after it has waited in a queue and loaded its data.

    ## Example
    ```python
    import torch
    from torch.utils.data import DataLoader

    def train(model, dataset, optimizer):
        device = torch.device("cuda")
        model.to(device)
        for x, y in DataLoader(dataset, batch_size=32):
            y = y.to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    Use instead:
    ```python
    import torch
    from torch.utils.data import DataLoader

    def train(model, dataset, optimizer):
        device = torch.device("cuda")
        model.to(device)
        for x, y in DataLoader(dataset, batch_size=32):
            x, y = x.to(device), y.to(device)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    ```

    ## Fix safety
    No fix: where the batch should move (and whether with `non_blocking=True`) is the
    author's choice.
    """

    code = "TL310"
    name = "input-not-moved-to-device"
    message = ("'{arg}' comes from the DataLoader on the CPU but '{model}' was moved to "
               "'{device}': the first forward raises \"Expected all tensors to be on the same "
               "device\"")
    triggers = (".to(", ".cuda(")  # the loader may come from another file of the project
    patterns = (r"\.(to|cuda)\(",)
    requires = loops() & calls_method("to", "cuda") & check(
        "torchlint.rules.devices.screens:may_flag_tl310")

    def visit_For(self, node: cst.For) -> None:
        ctx = self.context
        if any(ctx.imports_from(lib) for lib in _MANAGING_LIBRARIES):
            return
        function = ctx.current_function
        scope: cst.FunctionDef | cst.Module = function if function is not None else ctx.module
        if not model_moves(ctx, scope) and (function is None or not model_moves(ctx, ctx.module)):
            return  # no model moved to a device before any loop: nothing to compare with
        batch = self._batch_names(node, scope)
        if not batch:
            return
        order = source_order(ctx, scope)
        start = order.get(id(node), -1)
        moves = [m for m in model_moves(ctx, scope) if order.get(id(m.node), start) < start
                 and not provably_cpu(ctx, m.device, scope)]
        if function is not None:
            # a script's model moved at module level and used by its functions as a global
            moves += [m for m in model_moves(ctx, ctx.module) if "." not in m.model
                      and not binds_anywhere(function, m.model)
                      and m.model not in {p.name.value for p in parameters(function)}
                      and not provably_cpu(ctx, m.device, ctx.module)]
        if not moves:
            return
        moved_models = {m.model: m for m in moves}
        batch |= self._unpacked_batch(node.body, batch)
        changed = self._changed_names(node.body, batch)
        for call in iter_scope(node.body):
            if not isinstance(call, cst.Call):
                continue
            move = moved_models.get(text(call.func))
            args = positional_args(call)
            if move is None or not args:
                continue
            arg = _through_keeping_methods(args[0].value)
            if isinstance(arg, cst.Name) and arg.value in batch and arg.value not in changed:
                if self._forward_moves():
                    continue
                self.report(arg, arg=arg.value, model=move.model, device=string_value(move.device) or ctx.code(move.device))

    def _batch_names(self, loop: cst.For, scope: cst.FunctionDef | cst.Module) -> set[str]:
        """The names a loop over a DataLoader of the file binds to the batch's elements."""
        iterable, target = loop.iter, loop.target
        while isinstance(iterable, cst.Call) and iterable.args and text(
                iterable.func).rsplit(".", 1)[-1] in _WRAPPERS:
            if text(iterable.func) == "enumerate":
                if not isinstance(target, cst.Tuple) or len(target.elements) != 2:
                    return set()
                target = target.elements[1].value
            iterable = iterable.args[0].value
        loader = self._loader_call(iterable) if isinstance(iterable, cst.Call) else \
            self._loader_named(iterable, scope)
        if loader is not None:
            if any(call_argument(loader, a) is not None for a in MOVING_LOADER_ARGS):
                return set()
        elif not self._returned_loader(iterable, scope):
            return set()
        return self._names(target)

    def _returned_loader(self, iterable: cst.BaseExpression,
                         scope: cst.FunctionDef | cst.Module) -> bool:
        """The loop walks a plain DataLoader a function of the file or of the project
        returns: ``build_loader(cfg)``, or a name of this function (or of the module)
        bound only to such a call or to its element (``train, val = build_loaders()``)."""
        ctx = self.context
        if isinstance(iterable, cst.Call):
            return returns_plain_loader(ctx, iterable)
        if not isinstance(iterable, cst.Name):
            return False
        function = scope if isinstance(scope, cst.FunctionDef) else None
        entries = [e for e in assignment_index(ctx).get(iterable.value, ())
                   if e.function is function]
        if len(entries) != 1:
            return False
        entry = entries[0]
        if entry.how == "assign" and isinstance(entry.value, cst.Call):
            return returns_plain_loader(ctx, entry.value)
        if entry.how == "unpack" and isinstance(entry.unpacked_from, cst.Call) and (
                entry.position is not None):
            return returns_plain_loader(ctx, entry.unpacked_from, entry.position)
        return False

    def _loader_call(self, call: cst.Call) -> cst.Call | None:
        return call if self.context.qualified_name(call.func) in DATA_LOADERS else None

    def _loader_named(self, iterable: cst.BaseExpression, scope: cst.FunctionDef | cst.Module
                      ) -> cst.Call | None:
        """The one ``DataLoader(...)`` call the name (or ``self.x``) is assigned in this
        function or at module level (an attribute: in any method)."""
        if not isinstance(iterable, (cst.Name, cst.Attribute)):
            return None
        name = text(iterable)
        function = scope if isinstance(scope, cst.FunctionDef) else None
        calls = [e.value for e in assignment_index(self.context).get(name, ())
                 if isinstance(e.value, cst.Call) and self.context.qualified_name(
                     e.value.func) in DATA_LOADERS and (
                     e.function is function or e.function is None or name.startswith("self."))]
        return calls[0] if len(calls) == 1 else None

    @staticmethod
    def _names(target: cst.BaseExpression) -> set[str]:
        if isinstance(target, cst.Name):
            return {target.value}
        if isinstance(target, (cst.Tuple, cst.List)):
            return {e.value.value for e in target.elements if isinstance(e.value, cst.Name)}
        return set()

    @staticmethod
    def _unpacked_batch(body: cst.BaseSuite, batch: set[str]) -> set[str]:
        """Names a statement of the loop body unpacks from the batch unchanged
        (``inputs, labels = batch``, ``inputs = batch[0]``)."""
        found: set[str] = set()
        for node in iter_scope(body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and _from_batch(
                    node.value, batch):
                found |= {n.value for n in iter_scope(node.targets[0].target)
                          if isinstance(n, cst.Name)}
        return found

    @staticmethod
    def _changed_names(body: cst.BaseSuite, batch: set[str]) -> set[str]:
        """Names rebound in the loop body (other than by unpacking the batch), or moved
        there (``x.to(...)``, ``x.cuda()``)."""
        changed: set[str] = set()
        for node in iter_scope(body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 and _from_batch(
                    node.value, batch):
                continue
            if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(
                    node, cst.Assign) else [node.target]
                for target in targets:
                    changed |= {n.value for n in iter_scope(target) if isinstance(n, cst.Name)}
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and (
                    node.func.attr.value in ("to", "cuda")) and isinstance(node.func.value,
                                                                           cst.Name):
                changed.add(node.func.value.value)
            elif isinstance(node, (cst.For, cst.With)):
                names = node.target if isinstance(node, cst.For) else None
                if names is not None:
                    changed |= {n.value for n in iter_scope(names) if isinstance(n, cst.Name)}
        return changed

    def _forward_moves(self) -> bool:
        """A module class of the file moves tensors in its ``forward`` (the model may be
        one of them: the rule cannot tell its inputs must arrive on the device)."""
        ctx = self.context
        for klass in ctx.definitions():
            if isinstance(klass, cst.ClassDef) and ctx.is_module_class(klass):
                forward = class_methods(klass).get("forward")
                if forward is not None and any(
                        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                        and n.func.attr.value in ("to", "cuda") for n in iter_scope(forward)):
                    return True
        return False
