from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import code, dotted_name
from torchlint.analysis.torch_releases import TORCHVISION_V2_TO_TENSOR, Releases, fix_available
from torchlint.diagnostic import Fix, ImportNeed, NodeEdit
from torchlint.fix.edits import import_cleanup, reference
from torchlint.rule import Rule
from torchlint.rules.migration.torchvision import from_import_site, from_import_with

V2 = "torchvision.transforms.v2"
TO_TENSOR = {f"{V2}.ToTensor", f"{V2}._deprecated.ToTensor"}
# the names the replacement uses, all from transforms.v2
_NEEDED = ("Compose", "ToImage", "ToDtype")


class V2ToTensor(Rule):
    """## What it does
    Flags `torchvision.transforms.v2.ToTensor()`.

    ## Why is this bad?
    In the v2 transforms API `ToTensor` is deprecated (it warns when built) and will be
    removed; v2 splits its two jobs into `ToImage()` (PIL image or array to an image
    tensor) and `ToDtype(torch.float32, scale=True)` (uint8 0–255 to float 0–1). The v1
    `torchvision.transforms.ToTensor` is not deprecated and is not flagged.

    ## Example
    ```python
    from torchvision.transforms import v2

    preprocess = v2.Compose([v2.RandomHorizontalFlip(), v2.ToTensor()])
    ```

    Use instead:
    ```python
    import torch
    from torchvision.transforms import v2

    preprocess = v2.Compose([v2.RandomHorizontalFlip(), v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])])
    ```

    ## Fix safety
    Unsafe: the replacement returns a `tv_tensors.Image` (a tensor subclass that later v2
    transforms treat as an image) where `ToTensor` returned a plain tensor, and converts a
    few inputs differently (float arrays, odd PIL modes). Needs torchvision 0.16 or newer.
    """

    code = "TL720"
    name = "v2-totensor"
    triggers = ("ToTensor",)
    # ToTensor is spelled at the call or in its import, and v2 in some import
    patterns = (r"\bToTensor\b", r"\bv2\b")
    message = "v2.ToTensor() is deprecated; use v2.ToImage() and v2.ToDtype(torch.float32, scale=True)"
    fix_safety = "unsafe"
    applies_to = Releases(TORCHVISION_V2_TO_TENSOR.deprecated, why="`transforms.v2` arrived in "
                          "torchvision 0.15 (built for torch 2.0) with `ToTensor` deprecated; "
                          "its replacement needs torchvision 0.16 (torch 2.1): no fix for an "
                          "older target.")
    fix_title = "Use v2.ToImage() and v2.ToDtype()"

    def visit_Call(self, node: cst.Call) -> None:
        if self.context.qualified_name(node.func) not in TO_TENSOR:
            return
        self.report(node, fix=self._fix(node))

    def _fix(self, node: cst.Call) -> Fix | None:
        target = self.context.options.target_torch
        if node.args or fix_available(TORCHVISION_V2_TO_TENSOR, target) is False:
            return None
        torch = reference(self.context, "torch.float32")
        if torch is None:
            return None
        dtype, torch_import = torch
        imports = (torch_import,) if torch_import else ()
        func = node.func
        ctx = self.context
        if isinstance(func, cst.Attribute):  # v2.ToTensor(), transforms.v2.ToTensor()
            prefix = f"{code(func.value)}."
            return Fix.unsafe(NodeEdit(node, _replacement(prefix, dtype)), imports=imports)
        if not isinstance(func, cst.Name):
            return None
        edits = []
        index = index_for(ctx)
        cleanup = import_cleanup(index, func.value, lambda call: not call.args, node)
        statement = from_import_site(ctx, func)
        names_free = all(ctx.is_free(n) or ctx.lookup(n) == f"{V2}.{n}" for n in _NEEDED)
        alias = ctx.alias_for(V2)
        if statement is not None and dotted_name(statement.module) == V2 and names_free:  # type: ignore[arg-type]
            # from torchvision.transforms.v2 import ToTensor: import the new names there too
            prefix = ""
            add = [n for n in _NEEDED if ctx.lookup(n) != f"{V2}.{n}"]
            new = from_import_with(statement, add, {func.value} if cleanup else ())
            if add and new is not None:
                edits.append(NodeEdit(statement, new))
            else:
                edits.extend(cleanup)
        elif alias is not None:
            prefix = f"{alias}."
            edits.extend(cleanup)
        elif ctx.is_free("v2") and not imports:  # (two new import lines would race)
            prefix = "v2."
            imports = (*imports, ImportNeed("from torchvision.transforms import v2"))
            edits.extend(cleanup)
        else:
            return None
        return Fix.unsafe(NodeEdit(node, _replacement(prefix, dtype)), *edits, imports=imports)


def _replacement(prefix: str, dtype: str) -> str:
    return (f"{prefix}Compose([{prefix}ToImage(), "
            f"{prefix}ToDtype({dtype}, scale=True)])")
