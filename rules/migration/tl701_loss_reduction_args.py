from __future__ import annotations

import libcst as cst

from torchlint.analysis.torch_facts import LOSS_FUNCTIONS, is_loss_class
from torchlint.analysis.torch_releases import Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check, keyword
from torchlint.fix.edits import keeps_comments
from torchlint.rule import Rule

LEGACY = ("size_average", "reduce")
_LITERALS = {"True": True, "False": False, "None": None}


class LossReductionArgs(Rule):
    """## What it does
    Flags `size_average=` and `reduce=` passed to a `torch.nn` loss class or a
    `torch.nn.functional` loss.

    ## Why is this bad?
    Both arguments were deprecated long ago in favour of the single `reduction=` argument
    (`"mean"`, `"sum"` or `"none"`). They still work, print a warning, and silently override
    any `reduction=` given next to them, and their combined meaning is easy to get wrong
    (`reduce=False` ignores `size_average` entirely).

    ## Example
    ```python
    import torch.nn as nn

    criterion = nn.MSELoss(size_average=False)
    ```

    Use instead:
    ```python
    import torch.nn as nn

    criterion = nn.MSELoss(reduction="sum")
    ```

    ## Fix safety
    Safe when the values are literals: `reduce=False` becomes `reduction="none"`, otherwise
    `size_average=False` becomes `reduction="sum"`, otherwise `reduction="mean"`, which is
    exactly how PyTorch maps them. With a variable value there is no fix.
    """

    code = "TL701"
    name = "loss-reduction-args"
    triggers = ("size_average", "reduce")
    # a size_average=/reduce= keyword argument (not ==); a torch loss is always imported
    patterns = (r"\b(?:size_average|reduce)[\s\\]*=(?!=)", r"\btorch\b")
    requires = keyword(*LEGACY) & check("torchlint.rules.migration.screens:may_flag_tl701")
    message = "{arg}= is deprecated; use reduction={reduction}"
    fix_safety = "safe"
    applies_to = Releases(why="`size_average=`/`reduce=` warn in every release torchlint "
                          "knows, and `reduction=` exists in every one.")
    fix_title = "Use reduction="

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual is None or not (qual in LOSS_FUNCTIONS or is_loss_class(qual)):
            return
        legacy = [a for a in node.args if a.keyword is not None and a.keyword.value in LEGACY]
        if not legacy:
            return
        values: dict[str, object] = {"size_average": None, "reduce": None}
        literal = True
        for arg in legacy:
            if isinstance(arg.value, cst.Name) and arg.value.value in _LITERALS:
                values[arg.keyword.value] = _LITERALS[arg.value.value]  # type: ignore[union-attr]
            else:
                literal = False
        if values["reduce"] is False:
            reduction = "none"
        elif values["size_average"] is False:
            reduction = "sum"
        else:
            reduction = "mean"
        keep = literal and values["reduce"] is None and values["size_average"] is None
        shown = f'"{reduction}"' if literal else "..."
        fix = None
        if literal:
            text = self.context.code(self._rewrite(node, reduction, keep))
            fix = Fix.safe(NodeEdit(node, text)) if keeps_comments(node, text) else None
        self.report(legacy[0], fix=fix, arg=legacy[0].keyword.value,  # type: ignore[union-attr]
                    reduction=shown)

    @staticmethod
    def _rewrite(node: cst.Call, reduction: str, keep: bool) -> cst.Call:
        """Drop the legacy arguments; ``keep``: both are None, a given reduction= stands.

        A comment after a dropped argument moves to the argument before it."""
        value = cst.SimpleString(f'"{reduction}"')
        has_reduction = any(a.keyword is not None and a.keyword.value == "reduction"
                            for a in node.args)
        args: list[cst.Arg] = []
        placed = has_reduction
        for arg in node.args:
            name = arg.keyword.value if arg.keyword is not None else None
            if name == "reduction":
                args.append(arg if keep else arg.with_changes(value=value))
            elif name in LEGACY:
                if not placed:
                    args.append(arg.with_changes(keyword=cst.Name("reduction"), value=value))
                    placed = True
                elif args:
                    last = arg is node.args[-1]
                    args[-1] = args[-1].with_changes(
                        comma=_merged_comma(args[-1].comma, arg.comma, last))
            else:
                args.append(arg)
        return node.with_changes(args=args)


def _comment(comma: cst.Comma | cst.MaybeSentinel) -> cst.Comment | None:
    if isinstance(comma, cst.Comma) and isinstance(comma.whitespace_after,
                                                   cst.ParenthesizedWhitespace):
        return comma.whitespace_after.first_line.comment
    return None


def _merged_comma(kept: cst.Comma | cst.MaybeSentinel, dropped: cst.Comma | cst.MaybeSentinel,
                  last: bool) -> cst.Comma | cst.MaybeSentinel:
    """The comma after the argument before a dropped one: when the dropped one closed the
    call, its own ending (trailing comma, line break before ``)``); the comment of either."""
    comment = _comment(kept) or _comment(dropped)
    new = dropped if last else kept
    if comment is not None and isinstance(new, cst.Comma) and isinstance(
            new.whitespace_after, cst.ParenthesizedWhitespace):
        first = new.whitespace_after.first_line
        if first.comment is None:
            new = new.with_changes(whitespace_after=new.whitespace_after.with_changes(
                first_line=first.with_changes(comment=comment,
                                              whitespace=cst.SimpleWhitespace("  "))))
    return new
