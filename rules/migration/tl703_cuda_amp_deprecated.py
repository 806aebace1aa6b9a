from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import iter_nodes
from torchlint.analysis.torch_releases import (
    CUDA_AMP_AUTOCAST,
    CUDA_AMP_GRAD_SCALER,
    Releases,
    fix_available,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import calls, check
from torchlint.fix.edits import import_cleanup, torch_spelling, with_first_argument
from torchlint.rule import Rule
from torchlint.rules.migration.screens import CUDA_AMP_DEPRECATED as DEPRECATED
from torchlint.rules.migration.screens import NEW_AMP_API as _NEW_API

# torch.cuda.amp.autocast(enabled, dtype, cache_enabled) takes these positionally;
# torch.amp.autocast(device_type, dtype, enabled, cache_enabled) orders them differently.
_AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")


class CudaAmpDeprecated(Rule):
    """## What it does
    Flags each call of `torch.cuda.amp.autocast(...)` and `torch.cuda.amp.GradScaler(...)`,
    however the names were imported.

    ## Why is this bad?
    The `torch.cuda.amp` entry points are deprecated since torch 2.4 and emit a
    `FutureWarning` on every use; the device-generic `torch.amp.autocast("cuda", ...)` and
    `torch.amp.GradScaler("cuda", ...)` replace them with the same behaviour, and the same
    code then works for other devices by changing one string. For a project whose oldest
    supported torch is older than 2.4 nothing is deprecated yet, and the rule is silent.

    ## Example
    ```python
    import torch
    from torch.cuda.amp import autocast, GradScaler

    scaler = GradScaler()
    with autocast(dtype=torch.float16):
        pass
    ```

    Use instead:
    ```python
    import torch

    scaler = torch.amp.GradScaler("cuda")
    with torch.amp.autocast("cuda", dtype=torch.float16):
        pass
    ```

    ## Fix safety
    The new call receives `"cuda"` as its device and every other argument unchanged
    (positional arguments of `autocast` are passed by keyword, since the new signature
    orders them differently). Imported names that no call uses any more are removed.
    Safe. The fix is offered only when the code's target torch release (`target-torch`, or
    the declared torch requirement; a current torch when neither says) has the new API:
    `torch.amp.autocast` exists from 1.12, `torch.amp.GradScaler` from 2.3.
    """

    code = "TL703"
    name = "cuda-amp-deprecated"
    triggers = ("amp",)
    # every part of torch.cuda.amp.{autocast,GradScaler} is spelled in an import or the call;
    # "cuda" and "amp" stand together unless cuda is aliased or amp imported from torch.cuda
    patterns = (r"\bamp\b", r"\b(?:autocast|GradScaler)\b", r"\btorch\b",
                r"cuda[\s\\]*\.[\s\\]*amp\b|\bcuda[\s\\]+(?:as|import)\b")
    requires = calls(*DEPRECATED) & check("torchlint.rules.migration.screens:may_flag_tl703")
    message = "torch.cuda.amp.{name} is deprecated; use torch.amp.{name}(\"cuda\", ...)"
    fix_safety = "safe"
    applies_to = Releases(CUDA_AMP_AUTOCAST.deprecated, why="`torch.cuda.amp` is deprecated "
                          "from 2.4; the rule does not fire for an older target.")
    fix_title = "Use torch.amp"


    def visit_Call(self, node: cst.Call) -> None:
        name = DEPRECATED.get(self.context.qualified_name(node.func) or "")
        if name is None or self._compatibility_fallback():
            return
        self.report(node, fix=self._fix(node, name), name=name)

    def _compatibility_fallback(self) -> bool:
        """The call is the old-PyTorch branch of a version switch whose other branch already
        uses ``torch.amp`` (``torch.amp.X(...) if new else torch.cuda.amp.X()``, or a
        ``try``/``except`` around the new API)."""
        ctx = self.context
        for ancestor in reversed(ctx.ancestors[:-1]):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(ancestor, (cst.IfExp, cst.If, cst.Try)) and any(
                isinstance(child, (cst.Attribute, cst.Name))
                and (ctx.qualified_name(child) or "").startswith(_NEW_API)
                for child in iter_nodes(ancestor)
            ):
                return True
        return False

    def _fix(self, node: cst.Call, name: str) -> Fix | None:
        new_call = self._rewrite(node, name)
        spelled = torch_spelling(self.context, node.func, f"torch.amp.{name}")
        if new_call is None or spelled is None:
            return None
        spelling, need = spelled
        new_call = new_call.with_changes(func=cst.parse_expression(spelling))
        edits = [NodeEdit(node, self.context.code(new_call))]
        imported = node.func
        if isinstance(imported, cst.Attribute) and isinstance(imported.value, cst.Name):
            imported = imported.value  # from torch.cuda import amp; amp.autocast()
        if isinstance(imported, cst.Name):
            index = index_for(self.context)

            def fixable(call: cst.Call) -> bool:
                if isinstance(call.func, cst.Attribute):
                    if call.func.attr.value not in ("autocast", "GradScaler"):
                        return False
                    return self._rewrite(call, call.func.attr.value) is not None
                return self._rewrite(call, name) is not None

            cleanup = import_cleanup(index, imported.value, fixable, node)
            if cleanup:
                edits.extend(cleanup)
        change = CUDA_AMP_AUTOCAST if name == "autocast" else CUDA_AMP_GRAD_SCALER
        if not fix_available(change, self.context.options.target_torch):
            return None  # never emit an API newer than the target
        return Fix.safe(*edits, imports=(need,) if need else ())

    @staticmethod
    def _rewrite(node: cst.Call, name: str) -> cst.Call | None:
        args = list(node.args)
        if name == "autocast":
            position = 0
            for index, arg in enumerate(args):
                if arg.star:
                    return None
                if arg.keyword is None:
                    if position >= len(_AUTOCAST_POSITIONS):
                        return None
                    args[index] = arg.with_changes(
                        keyword=cst.Name(_AUTOCAST_POSITIONS[position]),
                        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                              whitespace_after=cst.SimpleWhitespace("")))
                    position += 1
        elif any(arg.star == "*" for arg in args):
            return None
        return with_first_argument(node.with_changes(args=args), cst.SimpleString('"cuda"'))
