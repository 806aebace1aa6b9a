from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.torch_releases import (
    AMP_APIS,
    CPU_AUTOCAST,
    CPU_GRAD_SCALER,
    CUDA_CUSTOM_FWD,
    Deprecation,
    by_name,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api
from torchlint.fix.edits import keeps_comments
from torchlint.rules.migration.deprecations import (
    DeprecatedCallRule,
    Rewrite,
    as_keyword,
    bind,
    deprecated_callee,
    join_args,
    make_fix,
    message_values,
    new_keyword,
    releases,
    spell,
    unused_import_edits,
)

DEPRECATED = by_name(*AMP_APIS)
DECORATORS = frozenset({"custom_fwd", "custom_bwd"})
# torch.cpu.amp.autocast(enabled, dtype, cache_enabled) takes these positionally;
# torch.amp.autocast(device_type, dtype, enabled, cache_enabled) orders them differently
AUTOCAST_POSITIONS = ("enabled", "dtype", "cache_enabled")


class DeprecatedAmpApi(DeprecatedCallRule):
    """## What it does
    Flags `torch.cpu.amp.autocast(...)`, `torch.cpu.amp.GradScaler(...)` and the decorators
    `torch.cuda.amp.custom_fwd` / `custom_bwd` (bare or called), however they were
    imported. (`torch.cuda.amp.autocast` and `GradScaler` are TL703.)

    ## Why is this bad?
    The device-specific `torch.cpu.amp` and `torch.cuda.amp` entry points are deprecated
    and emit a `FutureWarning` on every use. The device-generic `torch.amp` versions take
    the device as an argument and behave the same, so one code path serves every device.

    ## Example
    ```python
    import torch

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.cuda.amp.custom_fwd
        def forward(ctx, x):
            return x * x

    with torch.cpu.amp.autocast():
        pass
    ```

    Use instead:
    ```python
    import torch

    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cuda")
        def forward(ctx, x):
            return x * x

    with torch.amp.autocast("cpu"):
        pass
    ```

    ## Fix safety
    Safe: `torch.cpu.amp.autocast(...)` becomes `torch.amp.autocast("cpu", ...)` (its
    positional arguments passed by keyword, since the new signature orders them
    differently), `torch.cpu.amp.GradScaler(...)` becomes `torch.amp.GradScaler("cpu",
    ...)`, and the decorators become `@torch.amp.custom_fwd(device_type="cuda"[,
    cast_inputs=...])` and `@torch.amp.custom_bwd(device_type="cuda")`, which is what the
    old ones call. An import left unused is removed. No fix emits an API newer than the code's target torch release (with no
    target known, a current torch is assumed).
    """

    code = "TL717"
    name = "deprecated-amp-api"
    triggers = ("amp",)
    # an old name is spelled at the use or in its import, and torch is imported
    patterns = (r"\b(?:autocast|GradScaler|custom_fwd|custom_bwd)\b", r"\bamp\b",
                r"\btorch\b")
    requires = api(*DEPRECATED)
    message = "{api} is deprecated; use {replacement}"
    fix_safety = "safe"
    fix_title = "Use torch.amp"
    apis = DEPRECATED
    applies_to = releases(*DEPRECATED.values(),
                          why="These APIs warn from that release; the rule does not fire for an older target, and a fix whose `torch.amp` API the target lacks is never offered.")

    def visit_Decorator(self, node: cst.Decorator) -> None:
        decorator = node.decorator
        deprecation = deprecated_callee(self.context, decorator, DEPRECATED)
        if deprecation is None:
            return  # a called decorator is a call, seen by visit_Call
        self.report(decorator, fix=self._fix_bare(decorator, deprecation),
                    **message_values(deprecation))

    def fix(self, node: cst.Call, deprecation: Deprecation) -> Fix | None:
        return self.rewrite_fix(node, deprecation, self._fixable_bare)

    def rewrite(self, node: cst.Call, deprecation: Deprecation) -> Rewrite | None:
        args = new_args(node, deprecation)
        return None if args is None else Rewrite(_new_name(deprecation), args)

    def _fixable_bare(self, use: cst.BaseExpression) -> bool:
        parent = index_for(self.context).parents.get(use)
        return isinstance(parent, cst.Decorator) and deprecated_callee(
            self.context, use, DEPRECATED) is not None

    def _fix_bare(self, decorator: cst.BaseExpression, deprecation: Deprecation
                  ) -> Fix | None:
        spelled = spell(self.context, decorator, _new_name(deprecation))
        if spelled is None:
            return None
        spelling, need = spelled
        text = f'{spelling}(device_type="cuda")'
        if not keeps_comments(decorator, text):
            return None
        edits = [NodeEdit(decorator, text)]
        edits.extend(unused_import_edits(self.context, decorator, spelling, self.rewritable,
                                         decorator, self._fixable_bare))
        return make_fix(self.context, deprecation.change, edits, (need,))


def _new_name(deprecation: Deprecation) -> str:
    return "torch.amp." + deprecation.api.rsplit(".", 1)[1]


def new_args(node: cst.Call, deprecation: Deprecation) -> list[cst.Arg] | None:
    """The arguments of the ``torch.amp`` call that does the same."""
    if deprecation is CPU_AUTOCAST:
        args = bind(node, AUTOCAST_POSITIONS)
        if args is None:
            return None
        keywords = [arg if arg.keyword is not None else as_keyword(arg, name)
                    for name, arg in ((_name_of(args, a), a) for a in node.args)]
        return join_args([cst.Arg(cst.SimpleString('"cpu"')), *keywords], node)
    if deprecation is CPU_GRAD_SCALER:
        if any(arg.star == "*" for arg in node.args):
            return None
        return join_args([cst.Arg(cst.SimpleString('"cpu"')), *node.args], node)
    keywords_allowed = ("cast_inputs",) if deprecation is CUDA_CUSTOM_FWD else ()
    args = bind(node, ("fwd",), keywords_allowed)
    if args is None:
        return None
    function = [a for a in node.args if a.keyword is None]
    rest = [a for a in node.args if a.keyword is not None]
    return join_args([*function, new_keyword("device_type", '"cuda"'), *rest], node)


def _name_of(args: dict[str, cst.Arg], arg: cst.Arg) -> str:
    return next(name for name, value in args.items() if value is arg)
