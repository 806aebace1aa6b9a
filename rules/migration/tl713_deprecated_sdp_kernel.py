from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.torch_releases import SDP_KERNEL, Deprecation, by_name
from torchlint.diagnostic import Fix, ImportNeed, NodeEdit
from torchlint.engine.triage import api
from torchlint.fix.edits import keeps_comments
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    bool_literal,
    join_args,
    make_fix,
    releases,
    unused_import_edits,
)

DEPRECATED = by_name(SDP_KERNEL)
# sdp_kernel's flags and the backend each one enables, in the order sdp_kernel lists them
BACKENDS = (("enable_flash", "FLASH_ATTENTION"), ("enable_mem_efficient", "EFFICIENT_ATTENTION"),
            ("enable_math", "MATH"), ("enable_cudnn", "CUDNN_ATTENTION"))
NEW_NAMES = {"sdpa_kernel": "torch.nn.attention.sdpa_kernel",
             "SDPBackend": "torch.nn.attention.SDPBackend"}


class DeprecatedSdpKernel(DeprecatedCallRule):
    """## What it does
    Flags calls of `torch.backends.cuda.sdp_kernel(...)`.

    ## Why is this bad?
    The context manager is deprecated (a `FutureWarning` on every use) and announced for
    removal; `torch.nn.attention.sdpa_kernel` replaces it, taking the list of allowed
    scaled-dot-product-attention backends instead of one flag per backend. The old one is
    itself only a wrapper around the new one now.

    ## Example
    ```python
    import torch
    import torch.nn.functional as F

    def attend(q, k, v):
        with torch.backends.cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
            return F.scaled_dot_product_attention(q, k, v)
    ```

    Use instead:
    ```python
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def attend(q, k, v):
        with sdpa_kernel([SDPBackend.MATH, SDPBackend.CUDNN_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v)
    ```

    ## Fix safety
    Safe when every argument is one of the keywords `enable_flash`, `enable_mem_efficient`,
    `enable_math`, `enable_cudnn` with a literal `True`/`False` and at least one backend
    stays enabled: the call becomes `sdpa_kernel([...])` listing the backend of each flag
    that is true or absent (absent means enabled), exactly the list `sdp_kernel` builds
    itself, and `from torch.nn.attention import SDPBackend, sdpa_kernel` is added. An import
    left unused is removed. No fix for other arguments, or when the names `sdpa_kernel` or
    `SDPBackend` mean something else in the file. No fix emits an API newer than the code's target torch release (with no
    target known, a current torch is assumed).
    """

    code = "TL713"
    name = "deprecated-sdp-kernel"
    triggers = ("sdp_kernel",)
    # the old name is spelled at the call or in its import, and torch is imported
    patterns = (r"\bsdp_kernel\b", r"\btorch\b")
    requires = api(*DEPRECATED)
    message = ("torch.backends.cuda.sdp_kernel is deprecated; use "
               "torch.nn.attention.sdpa_kernel with a list of SDPBackend members")
    fix_safety = "safe"
    fix_title = "Use torch.nn.attention.sdpa_kernel"

    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="`sdp_kernel` warns from the release that added `sdpa_kernel`; the rule does not fire for an older target.")

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        backends = enabled_backends(node)
        if not backends:
            return None
        missing = []
        for name, qualname in NEW_NAMES.items():
            bound = self.context.lookup(name)
            if bound == qualname:
                continue
            if bound is not None or not self.context.is_free(name) or name in index_for(
                    self.context).names and bound is None:
                return None
            missing.append(name)
        listed = ", ".join(f"SDPBackend.{backend}" for backend in backends)
        text = self.context.code(node.with_changes(
            func=cst.Name("sdpa_kernel"),
            args=join_args([cst.Arg(cst.parse_expression(f"[{listed}]"))], node)))
        if not keeps_comments(node, text):
            return None
        edits = [NodeEdit(node, text)]
        edits.extend(unused_import_edits(
            self.context, node.func, "sdpa_kernel", lambda call: bool(enabled_backends(call)),
            node))
        need = ImportNeed(f"from torch.nn.attention import {', '.join(sorted(missing))}") \
            if missing else None
        return make_fix(self.context, SDP_KERNEL.change, edits, (need,))


def enabled_backends(node: cst.Call) -> list[str]:
    """The SDPBackend members the call enables, when every argument is a literal flag (an
    empty list: no exact rewrite)."""
    flags = dict(BACKENDS)
    given: dict[str, bool] = {}
    for arg in node.args:
        if arg.keyword is None or arg.star or arg.keyword.value not in flags:
            return []
        value = bool_literal(arg.value)
        if value is None or arg.keyword.value in given:
            return []
        given[arg.keyword.value] = value
    return [backend for flag, backend in BACKENDS if given.get(flag, True)]
