"""Device and data-movement facts shared by the TL3 rules (tensors, loaders, CUDA use)."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst
from torchlint.analysis.bindings import bindings_before
from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import dotted_name, target_names
from torchlint.analysis.nodes import get_arg, last_name_part, method_call, positional_args, string_value
from torchlint.analysis.torch_facts import TENSOR_FACTORIES, is_device_like
from torchlint.analysis.nodes import iter_nodes, iter_scope

DATALOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})

# torch functions that always return a tensor (beyond the factories)
_TENSOR_OPS = frozenset(
    f"torch.{name}"
    for name in (
        "from_numpy", "as_tensor", "asarray", "cat", "concat", "concatenate", "stack", "hstack",
        "vstack", "matmul", "mm", "bmm", "einsum", "exp", "log", "sigmoid", "tanh", "softmax",
        "log_softmax", "relu", "where", "clamp", "clip", "abs", "sqrt", "sum", "mean", "flatten",
        "reshape", "transpose", "permute", "squeeze", "unsqueeze", "cumsum", "normal",
        "bernoulli", "multinomial", "tril", "triu", "outer", "diag", "masked_fill", "gather",
        "index_select", "flip", "roll", "repeat_interleave", "clone", "empty_strided",
        "full_like", "tensor", "cdist", "argmax", "argmin", "bincount", "polar", "complex",
    )
) | TENSOR_FACTORIES
# tensor methods that return a tensor
_TENSOR_METHODS = frozenset({
    "float", "double", "half", "bfloat16", "long", "int", "bool", "byte", "view", "reshape",
    "permute", "transpose", "contiguous", "clone", "detach", "unsqueeze", "squeeze", "flatten",
    "t", "expand", "expand_as", "repeat", "type_as", "view_as", "reshape_as", "abs", "exp",
    "sum", "mean", "softmax", "sigmoid", "pin_memory", "requires_grad_",
})
# packages whose batch objects have an in-place ``.to()`` (BatchEncoding, PyG Data, DGL graphs)
_INPLACE_BATCH_PACKAGES = ("transformers", "torch_geometric", "dgl", "torch_sparse")
_LOADER_WRAPPERS = frozenset({"builtins.iter", "tqdm.tqdm", "tqdm.auto.tqdm",
                              "tqdm.notebook.tqdm", "tqdm"})
def is_tensor_expression(ctx: FileContext, node: cst.BaseExpression) -> bool:
    """A call known to produce a tensor: torch factory/op, F.* op, or a tensor method of one."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        if qual in _TENSOR_OPS:
            return True
        return qual.startswith("torch.nn.functional.") and qual.count(".") == 3 and \
            not qual.endswith(("multi_head_attention_forward", "_with_indices"))
    attribute = method_call(node, *_TENSOR_METHODS)
    if attribute is not None:
        return is_tensor_expression(ctx, attribute.value)
    return False


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


_CHAIN_METHODS = _TENSOR_METHODS | {"to", "cuda", "cpu"}


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
        return is_tensor_expression(ctx, value) or batch_item(ctx, value, at)
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


# ------------------------------------------------------------ CUDA use
def is_cuda_string(node: cst.BaseExpression | None) -> bool:
    text = string_value(node) if node is not None else None
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


def is_cuda_device(ctx: FileContext, node: cst.BaseExpression | None) -> bool:
    """A literal CUDA device: ``"cuda:0"`` or ``torch.device("cuda", ...)``."""
    if node is None:
        return False
    if is_cuda_string(node):
        return True
    if isinstance(node, cst.Call) and ctx.qualified_name(node.func) == "torch.device":
        first = get_arg(node, "type", 0)
        return first is not None and is_cuda_string(first.value)
    return False


def move_device(ctx: FileContext, call: cst.Call) -> cst.BaseExpression | None:
    """The device argument of ``x.to(device, ...)`` when it looks like a device."""
    arg = get_arg(call, "device")
    if arg is not None:
        return arg.value
    positional = positional_args(call)
    if positional and is_device_like(ctx, positional[0].value):
        return positional[0].value
    return None


# torch.cuda functions that do not create a CUDA context or fix the visible devices
_LAZY_CUDA_CALLS = frozenset({
    "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all", "device", "stream",
    "device_of", "nvtx", "set_sync_debug_mode", "get_sync_debug_mode",
    # memory queries and cache release do nothing until CUDA is up
    "empty_cache", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "memory_cached", "max_memory_cached", "memory_stats",
    "memory_stats_as_nested_dict", "memory_summary", "memory_snapshot",
    "reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
    "reset_accumulated_memory_stats", "get_arch_list", "is_built",
})


def initialises_cuda(ctx: FileContext, call: cst.Call) -> bool:
    """A call that starts the CUDA runtime: ``torch.cuda.device_count()``, ``x.cuda()``,
    ``x.to("cuda")``, ``torch.zeros(3, device="cuda")``."""
    qual = ctx.qualified_name(call.func)
    if qual is not None:
        if qual.startswith("torch.cuda.") and qual.count(".") == 2:
            leaf = qual.rsplit(".", 1)[1]
            if leaf[:1].islower() and not leaf.startswith("_") and leaf not in _LAZY_CUDA_CALLS:
                return True
        if qual.startswith("torch."):
            device = get_arg(call, "device")
            return device is not None and is_cuda_device(ctx, device.value)
        return False
    attribute = method_call(call, "cuda", "to")
    if attribute is None:
        return False
    if attribute.attr.value == "cuda":
        return not any(a.keyword is not None and a.keyword.value not in (
            "device", "non_blocking", "memory_format") for a in call.args)
    return is_cuda_device(ctx, move_device(ctx, call))


# numpy functions that always return an ndarray: no np.load (npz), reductions or scalars, and
# nothing that makes negative strides (np.flip) or read-only memory (np.frombuffer), which
# torch.from_numpy refuses or warns about
_NUMPY_ARRAY_FUNCTIONS = frozenset(
    f"numpy.{name}"
    for name in (
        "array", "asarray", "ascontiguousarray", "asfortranarray", "zeros", "ones", "empty",
        "full", "zeros_like", "ones_like", "empty_like", "full_like", "arange", "linspace",
        "logspace", "eye", "identity", "stack", "vstack", "hstack", "dstack", "concatenate",
        "column_stack", "fromfile", "loadtxt", "genfromtxt", "tile", "repeat", "expand_dims",
        "transpose", "pad", "tril", "triu", "outer", "diag", "copy", "argsort", "cumsum",
    )
)
# numpy.random functions that return an array only when given a shape
_NUMPY_RANDOM_SHAPED = frozenset({"rand", "randn"})
_NUMPY_RANDOM_SIZED = frozenset({"random", "uniform", "normal", "randint", "choice",
                                 "random_sample", "standard_normal", "binomial", "poisson",
                                 "beta", "gamma", "exponential", "permutation"})
_ARRAY_METHODS = frozenset({"astype", "reshape", "transpose", "copy", "squeeze", "flatten",
                            "ravel", "swapaxes"})


def is_numpy_array_expression(ctx: FileContext, node: cst.BaseExpression,
                              at: cst.CSTNode | None = None) -> bool:
    """A call that evidently returns a NumPy array (``np.zeros(3)``, ``np.array(x).astype(f)``).

    With ``at``, a method call on a name bound to an array before ``at`` counts too."""
    if not isinstance(node, cst.Call):
        return False
    qual = ctx.qualified_name(node.func)
    if qual is not None:
        if qual in _NUMPY_ARRAY_FUNCTIONS:
            return True
        if qual.startswith("numpy.random.") and qual.count(".") == 2:
            leaf = qual.rsplit(".", 1)[1]
            if leaf in _NUMPY_RANDOM_SHAPED:
                return bool(positional_args(node))
            if leaf == "permutation":
                return True
            if leaf in _NUMPY_RANDOM_SIZED:
                return get_arg(node, "size") is not None
        return False
    attribute = method_call(node, *_ARRAY_METHODS)
    if attribute is not None:
        if at is not None and isinstance(attribute.value, cst.Name):
            return is_numpy_array(ctx, attribute.value, at)
        return is_numpy_array_expression(ctx, attribute.value, at)
    return False


def is_numpy_array(ctx: FileContext, node: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """An expression that is a NumPy array: a numpy call, or a name bound to one before ``at``."""
    if isinstance(node, cst.Name):
        bound = ctx.binding(node.value, at)
        return bound is not None and bound.kind == "assign" and bound.value is not None and \
            is_numpy_array_expression(ctx, bound.value, bound.node)
    return is_numpy_array_expression(ctx, node, at)


def batch_root(node: cst.BaseExpression) -> cst.Name | None:
    """``batch`` for ``batch``, ``batch[0]``, ``batch["image"]``."""
    while isinstance(node, cst.Subscript):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def is_device_move(ctx: FileContext, call: cst.Call) -> bool:
    """``x.cuda(...)`` or ``x.to(<device>, ...)``."""
    attribute = method_call(call, "cuda", "to")
    if attribute is None:
        return False
    return attribute.attr.value == "cuda" or move_device(ctx, call) is not None


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
