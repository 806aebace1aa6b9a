"""Data loaders and their batches (TL302, TL306-TL308): which names hold a tensor taken
from a loader, or any known tensor."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.bindings import bindings_before
from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    dotted_name,
    iter_nodes,
    iter_scope,
    last_name_part,
    method_call,
    positional_args,
    string_value,
    target_names,
)
from torchlint.analysis.tensor_facts import (
    TENSOR_METHODS,
    is_legacy_tensor_call,
    is_tensor_expression,
)
from torchlint.rules.devices.cuda import is_device_move

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

# packages whose batch objects have an in-place ``.to()`` (BatchEncoding, PyG Data, DGL graphs)
_INPLACE_BATCH_PACKAGES = ("transformers", "torch_geometric", "dgl", "torch_sparse")
_LOADER_WRAPPERS = frozenset({"builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm",
                              "tqdm.notebook.tqdm", "tqdm"})


def loader_iterable(ctx: FileContext, iterable: cst.BaseExpression,
                    target: cst.BaseExpression) -> cst.BaseExpression | None:
    """The part of a ``for`` target that holds batches when ``iterable`` is a data loader.

    ``for x, y in loader`` -> the tuple; ``for i, (x, y) in enumerate(loader)`` -> ``(x, y)``.
    """
    while isinstance(iterable, cst.Call) and iterable.args:
        qual = ctx.qualified_name(iterable.func)
        first = positional_args(iterable)
        if qual == "builtins.enumerate" and first and isinstance(target, cst.Tuple) and \
                len(target.elements) == 2:
            iterable, target = first[0].value, target.elements[1].value
        elif qual in _LOADER_WRAPPERS and first:
            iterable = first[0].value
        else:
            break
    if is_loader(ctx, iterable):
        return target
    return None


def unwrap_loader(ctx: FileContext, iterable: cst.BaseExpression) -> cst.BaseExpression:
    """``loader`` for ``enumerate(loader)``, ``tqdm(loader)``, ``iter(loader)``."""
    while isinstance(iterable, cst.Call):
        qual = ctx.qualified_name(iterable.func)
        first = positional_args(iterable)
        if not first or (qual != "builtins.enumerate" and qual not in _LOADER_WRAPPERS):
            break
        iterable = first[0].value
    return iterable


def is_loader(ctx: FileContext, node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Call):
        return ctx.qualified_name(node.func) in DATALOADERS
    name = last_name_part(node)
    if name is None or not isinstance(node, (cst.Name, cst.Attribute)):
        return False
    if ctx.qualified_name(node) is not None:  # an imported thing, not a variable
        return False
    return "loader" in name.lower()


def imports_inplace_batch_package(ctx: FileContext) -> bool:
    for stmt in ctx.module.body:
        for node in iter_scope(stmt):
            if isinstance(node, cst.Import):
                names = [dotted_name(a.name) for a in node.names]
            elif isinstance(node, cst.ImportFrom) and node.module is not None:
                names = [dotted_name(node.module)]
            else:
                continue
            if any(n and n.split(".")[0] in _INPLACE_BATCH_PACKAGES for n in names):
                return True
    return False


def in_target(name: str, target: cst.BaseExpression) -> tuple[bool, bool]:
    """(name is bound by ``target``, it was unpacked from a tuple/list)."""
    if isinstance(target, cst.Name):
        return target.value == name, False
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            value = element.value
            if isinstance(value, cst.StarredElement):
                value = value.value
            found, _ = in_target(name, value)
            if found:
                return True, True
    return False, False


def loader_batch(ctx: FileContext, name: str, at: cst.CSTNode) -> tuple[bool, bool]:
    """(``name`` is, at ``at``, the target of a ``for`` over a data loader, it was unpacked)."""
    bound = ctx.binding(name, at)
    if bound is None or bound.kind != "for" or not isinstance(bound.node, cst.For) or \
            bound.value is None:
        return False, False
    batch = loader_iterable(ctx, bound.value, bound.node.target)
    if batch is None:
        return False, False
    return in_target(name, batch)


def is_batch_tensor(ctx: FileContext, name: str, at: cst.CSTNode) -> bool:
    """``name`` holds a tensor taken from a data loader loop (``for x, y in loader``)."""
    found, unpacked = loader_batch(ctx, name, at)
    return found and (unpacked or not imports_inplace_batch_package(ctx))


def batch_item(ctx: FileContext, node: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``batch["image"]`` / ``batch[0]`` where ``batch`` is a whole data-loader batch."""
    if not isinstance(node, cst.Subscript) or not isinstance(node.value, cst.Name) or \
            len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
        return False
    key = node.slice[0].slice.value
    if string_value(key) is None and not isinstance(key, cst.Integer):
        return False
    found, unpacked = loader_batch(ctx, node.value.value, at)
    return found and not unpacked and not imports_inplace_batch_package(ctx)


def _bindings(ctx: FileContext, name: str, at: cst.CSTNode) -> Iterator[cst.CSTNode | None]:
    """The statements that bound ``name`` before ``at``, last first, in straight-line code of
    the enclosing blocks (``with`` bodies not included): ``Assign``/``AnnAssign`` nodes and
    the ``For`` whose target it is. Yields None (and stops) at a binding that cannot be
    followed."""
    for found in bindings_before(ctx, name, at, into_with=False):
        if found.kind in ("assign", "unpack", "for"):
            yield found.node
            if found.kind == "for":
                return
        else:
            yield None
            return


_CHAIN_METHODS = TENSOR_METHODS | {"to", "cuda", "cpu"}


def _chain_root(node: cst.BaseExpression) -> cst.BaseExpression:
    """``x`` for ``x.float().view(2, 3)``: the receiver under a chain of tensor methods."""
    while True:
        attribute = method_call(node, *_CHAIN_METHODS)
        if attribute is None:
            return node
        node = attribute.value


def _element_for(name: str, target: cst.Tuple | cst.List,
                 value: cst.BaseExpression) -> cst.BaseExpression | None:
    elements = target.elements
    if not isinstance(value, (cst.Tuple, cst.List)):
        return value if isinstance(value, cst.Name) else None
    if any(isinstance(e, cst.StarredElement) for e in elements):
        return None
    position = next((k for k, e in enumerate(elements)
                     if isinstance(e.value, cst.Name) and e.value.value == name), None)
    if position is None:
        return None
    if len(value.elements) != len(elements) or any(
            isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    return value.elements[position].value


def is_known_tensor_name(ctx: FileContext, name: cst.Name, at: cst.CSTNode) -> bool:
    """``name`` is bound (straight-line, before ``at``) to a tensor or a loader's batch:
    a torch op, ``for x, y in loader``, ``x, y = batch``, ``x = batch["image"]``, and
    ``x = x.float().view(...)`` of one of those."""
    for bound in _bindings(ctx, name.value, at):
        if bound is None:
            return False
        if isinstance(bound, cst.For):
            batch = loader_iterable(ctx, bound.iter, bound.target)
            if batch is None:
                return False
            found, unpacked = in_target(name.value, batch)
            return found and (unpacked or not imports_inplace_batch_package(ctx))
        if isinstance(bound, cst.Assign):
            target = bound.targets[0].target
            if isinstance(target, cst.Name):
                value: cst.BaseExpression | None = bound.value
            elif isinstance(target, (cst.Tuple, cst.List)):
                value = _element_for(name.value, target, bound.value)
                if isinstance(value, cst.Name):  # x, y = batch
                    return value.value != name.value and loader_batch(ctx, value.value, at)[0]
            else:
                return False
        elif isinstance(bound, cst.AnnAssign):
            value = bound.value
        else:
            return False
        if value is None:
            return False
        root = _chain_root(value)
        if isinstance(root, cst.Name) and root.value == name.value and root is not value:
            continue  # x = x.float(): what was x before?
        return is_tensor_expression(ctx, value) or is_legacy_tensor_call(ctx, value) or (
            batch_item(ctx, value, at))
    return False


def batch_loop(ctx: FileContext, name: str, at: cst.CSTNode) -> cst.For | None:
    """The ``for`` over a data loader that ``name`` takes its batch from, before ``at``:
    ``for x, y in loader``, or ``for batch in loader: x, y = batch`` / ``x = batch["image"]``
    / ``x = batch[0]``."""
    for bound in _bindings(ctx, name, at):
        if isinstance(bound, cst.For):
            batch = loader_iterable(ctx, bound.iter, bound.target)
            return bound if batch is not None and in_target(name, batch)[0] else None
        if not isinstance(bound, cst.Assign):
            return None
        target = bound.targets[0].target
        value: cst.BaseExpression | None = bound.value
        if isinstance(target, (cst.Tuple, cst.List)):
            value = _element_for(name, target, bound.value)
        elif not isinstance(target, cst.Name):
            return None
        if isinstance(value, cst.Subscript):
            value = value.value
        if not isinstance(value, cst.Name) or value.value == name:
            return None
        source = ctx.binding(value.value, at)
        if source is None or source.kind != "for" or not isinstance(source.node, cst.For):
            return None
        batch = loader_iterable(ctx, source.node.iter, source.node.target)
        return source.node if batch is not None and in_target(value.value, batch)[0] else None
    return None


def batch_root(node: cst.BaseExpression) -> cst.Name | None:
    """``batch`` for ``batch``, ``batch[0]``, ``batch["image"]``."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def moves_loader_batches_to_device(ctx: FileContext) -> bool:
    """Somewhere in the file, a batch from a data loader loop goes through ``.to(device)``."""
    for node in iter_nodes(ctx.module):
        if not isinstance(node, cst.For):
            continue
        batch = loader_iterable(ctx, node.iter, node.target)
        names = set(target_names(batch)) if batch is not None else set()
        if not names:
            continue
        for inner in iter_scope(node.body):
            if isinstance(inner, cst.Call) and is_device_move(ctx, inner):
                root = batch_root(method_call(inner).value)  # type: ignore[union-attr]
                if root is not None and root.value in names:
                    return True
    return False
