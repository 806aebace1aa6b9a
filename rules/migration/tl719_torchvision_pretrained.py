from __future__ import annotations

import libcst as cst

from torchlint.analysis.nodes import get_arg, string_value
from torchlint.analysis.torch_releases import TORCHVISION_PRETRAINED, Releases
from torchlint.analysis.torchvision_weights import (
    BY_ARGUMENT,
    PRETRAINED,
    PRETRAINED_BACKBONE,
)
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, keyword
from torchlint.rule import Rule
from torchlint.rules.migration.torchvision import builder_of, enum_spelling

# legacy argument -> (its replacement, the table of what a literal True stands for)
LEGACY = {
    "pretrained": ("weights", PRETRAINED),
    "pretrained_backbone": ("weights_backbone", PRETRAINED_BACKBONE),
}


class TorchvisionPretrained(Rule):
    """## What it does
    Flags `pretrained=` and `pretrained_backbone=` passed to a torchvision model builder
    (`torchvision.models.resnet50`, `detection.fasterrcnn_resnet50_fpn`, the `segmentation`,
    `video`, `optical_flow` and `quantization` builders).

    ## Why is this bad?
    torchvision 0.13 replaced the boolean with `weights=` enums and keeps the old argument
    only through a shim that warns on every call. The boolean also hides which weights you
    get: several models now have better weights than the ones `pretrained=True` loads, and
    `weights=...DEFAULT` would silently switch to them. Naming the enum member makes the
    choice explicit and reproducible.

    ## Example
    ```python
    import torchvision

    backbone = torchvision.models.resnet50(pretrained=True)
    ```

    Use instead:
    ```python
    import torchvision

    backbone = torchvision.models.resnet50(weights=torchvision.models.ResNet50_Weights.IMAGENET1K_V1)
    ```

    ## Fix safety
    Safe for a literal `True` or `False` and a builder whose legacy mapping is known:
    `True` becomes `weights=` the very member torchvision's shim picks (often `IMAGENET1K_V1`,
    never `DEFAULT`), `False` becomes `weights=None`; `pretrained_backbone` becomes
    `weights_backbone` likewise. The enum is written through the builder's own module
    (`models.ResNet50_Weights`) or added to the import the builder came from. No fix for
    other values, for the `quantization` builders (the weights depend on `quantize=`), for
    models that have no weights for `pretrained=True`, or when the call already passes the
    new argument.
    """

    code = "TL719"
    name = "torchvision-pretrained"
    triggers = ("pretrained",)
    # the keyword is spelled at the call; torchvision is imported by name
    patterns = (r"\bpretrained(?:_backbone)?\b", r"\btorchvision\b")
    requires = keyword(*LEGACY) & check("torchlint.rules.migration.screens:may_flag_tl719")
    message = "{param}= is deprecated since torchvision 0.13; use {replacement}"
    fix_safety = "safe"
    # weights= arrived in the release that deprecated pretrained=: the fix is always there
    applies_to = Releases(TORCHVISION_PRETRAINED.deprecated, why="torchvision 0.13 (built for "
                          "torch 1.12) deprecated `pretrained=`; the rule does not fire for an "
                          "older target.")
    fix_title = "Pass the weights enum"

    def visit_Call(self, node: cst.Call) -> None:
        legacy = [arg for arg in node.args
                  if arg.keyword is not None and arg.keyword.value in LEGACY]
        if not legacy:
            return
        builder = builder_of(self.context, node.func)
        if builder is None:
            return
        for arg in legacy:
            assert arg.keyword is not None
            param = arg.keyword.value
            new, table = LEGACY[param]
            if builder not in table:
                continue  # not a legacy argument of this builder
            member = self._member(node, arg, builder, table)
            shown = f"{new}={member[0]}.{member[1]}" if member else (
                f"{new}=None" if _literal(arg.value) is False else f"{new}= (a weights enum)")
            self.report(arg.keyword, fix=self._fix(node, arg, builder, member),
                        param=param, replacement=shown)

    @staticmethod
    def _member(node: cst.Call, arg: cst.Arg, builder: str,
                table: dict[str, tuple[str, str]] | dict[str, tuple[str | None, str | None]]
                ) -> tuple[str, str] | None:
        """The (enum, member) that this literal ``True`` stands for, if it is decided."""
        if _literal(arg.value) is not True:
            return None
        enum, member = table[builder]
        if enum is not None and member is not None:
            return enum, member
        argument, values = BY_ARGUMENT.get(builder, ("", {}))
        if argument == "backbone_name":
            name = get_arg(node, "backbone_name")
            value = string_value(name.value) if name is not None else None
            return values.get(value) if value is not None else None
        return None

    def _fix(self, node: cst.Call, arg: cst.Arg, builder: str,
             member: tuple[str, str] | None) -> Fix | None:
        value = _literal(arg.value)
        assert arg.keyword is not None
        new = LEGACY[arg.keyword.value][0]
        if value is None or BY_ARGUMENT.get(builder, ("",))[0] == "quantize":
            return None
        if any(a.star or a.keyword is None for a in node.args) or get_arg(node, new) is not None:
            return None  # a positional argument or **kwargs may already be the new one
        if value is False:
            return Fix.safe(NodeEdit(arg.keyword, new), NodeEdit(arg.value, "None"))
        if member is None:
            return None
        spelled = enum_spelling(self.context, node.func, member[0])
        if spelled is None:
            return None
        return Fix.safe(NodeEdit(arg.keyword, new),
                        NodeEdit(arg.value, f"{spelled.text}.{member[1]}"),
                        *spelled.edits, imports=spelled.imports)


def _literal(value: cst.BaseExpression) -> bool | None:
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None
