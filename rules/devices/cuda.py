"""CUDA use (TL303, TL305-TL308): device strings, moves to a device, calls that start the
CUDA runtime, and whether a file runs on a GPU at all."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.cuda_use import is_cuda_string
from torchlint.analysis.nodes import (
    get_arg,
    method_call,
    positional_args,
)
from torchlint.analysis.torch_facts import is_device_like


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


def is_device_move(ctx: FileContext, call: cst.Call) -> bool:
    """``x.cuda(...)`` or ``x.to(<device>, ...)``."""
    attribute = method_call(call, "cuda", "to")
    if attribute is None:
        return False
    return attribute.attr.value == "cuda" or move_device(ctx, call) is not None
