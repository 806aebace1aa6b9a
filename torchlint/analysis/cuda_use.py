"""Whether code runs on a GPU: CUDA device strings, mentions of CUDA, and whether a file
puts its work on a GPU at all (asked by the device rules and by fixes that must name the
device a file uses)."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import iter_nodes, string_value


def is_cuda_string(node: cst.BaseExpression | None) -> bool:
    text = string_value(node) if node is not None else None
    return text is not None and (text == "cuda" or text.startswith("cuda:"))


# names whose use says a script runs on the CPU on purpose
_CPU_ONLY = frozenset({"intel_extension_for_pytorch", "intel_extension_for_pytorch.optimize",
                       "torch.cpu.amp.autocast"})


def mentions_cuda(node: cst.CSTNode) -> bool:
    """``x.cuda()``, ``torch.cuda...``, ``"cuda"``/``"cuda:0"``."""
    if isinstance(node, cst.Attribute):
        return node.attr.value == "cuda"
    if isinstance(node, cst.SimpleString):
        return is_cuda_string(node)
    return False


def file_uses_cuda(ctx: FileContext) -> bool:
    """The file (a notebook: any cell) puts tensors or modules on a GPU, and does not run on
    the CPU on purpose (Intel's extension, CPU autocast): only then do host reads, loading
    in the training process and wall-clock timings make a GPU wait."""

    def compute() -> bool:
        cuda = False
        for node in iter_nodes(ctx.module):
            kind = type(node)
            if kind is cst.Attribute or kind is cst.SimpleString:
                cuda = cuda or mentions_cuda(node)
            if (kind is cst.Attribute or kind is cst.Name) and ctx.qualified_name(
                    node) in _CPU_ONLY:
                return False
        return cuda

    return ctx.cached("file_uses_cuda", compute)
