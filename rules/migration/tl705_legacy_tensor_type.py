from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import index_for
from torchlint.analysis.torch_releases import Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import check
from torchlint.fix.edits import import_cleanup, keeps_comments, torch_spelling, with_keywords
from torchlint.rule import Rule

DTYPES = {
    "FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
    "BFloat16Tensor": "bfloat16", "LongTensor": "int64", "IntTensor": "int32",
    "ShortTensor": "int16", "CharTensor": "int8", "ByteTensor": "uint8", "BoolTensor": "bool",
}
LEGACY = {f"torch.{name}": (name, False) for name in DTYPES} | {
    f"torch.cuda.{name}": (name, True) for name in DTYPES}


class LegacyTensorType(Rule):
    """## What it does
    Flags tensors built with the legacy type constructors: `torch.FloatTensor(...)`,
    `torch.LongTensor(...)`, `torch.cuda.FloatTensor(...)` and their siblings.

    ## Why is this bad?
    The constructors are deprecated and ambiguous: `torch.FloatTensor(3)` makes an
    uninitialised tensor of size 3 while `torch.FloatTensor([3])` holds the value 3, and
    they cannot take `device=` or `requires_grad=`. `torch.tensor(data, dtype=...)` for data
    and `torch.empty(size, dtype=...)` for shapes say what they mean.

    ## Example
    ```python
    import torch

    labels = torch.LongTensor([0, 2, 1])
    ```

    Use instead:
    ```python
    import torch

    labels = torch.tensor([0, 2, 1], dtype=torch.int64)
    ```

    ## Fix safety
    Safe only when the single argument is a list or tuple literal: it becomes
    `torch.tensor([...], dtype=...)` with the matching dtype, plus `device="cuda"` for the
    `torch.cuda` types. Sizes, arrays and other tensors are reported without a fix.
    Using the types in `isinstance()` or annotations is not a construction and is not
    flagged. Aliases are followed, in this file and in the project module they are imported
    from; a conditional alias (`Tensor = torch.cuda.FloatTensor if cuda else
    torch.FloatTensor`) is reported when every branch is a legacy type, without a fix.
    """

    code = "TL705"
    name = "legacy-tensor-type"
    triggers = ("Tensor",)
    # the legacy type name is called, imported under an alias, or assigned to a name (an
    # alias, perhaps conditional); or a name ending in Tensor is called (an alias of one
    # from another module of the project); torch is imported
    patterns = (r"\b(?:Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool)Tensor"
                r"(?:[\s\\)]*\(|[\s\\]+(?:as|if|else)\b|[\s\\)]*$)|\w*Tensor[\s\\)]*\(",
                r"\btorch\b")
    requires = check("torchlint.rules.migration.screens:may_flag_tl705")
    message = "{legacy}(...) is a legacy constructor; use torch.tensor(..., dtype=torch.{dtype})"
    fix_safety = "safe"
    applies_to = Releases(why="The constructors are legacy in every release; the "
                          "`torch.cuda` ones also warn from 2.14. `torch.tensor(..., dtype=, "
                          "device=)` exists in every release torchlint knows.")
    fix_title = "Use torch.tensor(..., dtype=...)"


    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        found = LEGACY.get(qual or "")
        if found is None:
            self._conditional(node)
            return
        name, cuda = found
        self.report(node, fix=self._fix(node, name, cuda), dtype=DTYPES[name],
                    legacy=f"torch.cuda.{name}" if cuda else f"torch.{name}")

    def _conditional(self, node: cst.Call) -> None:
        """A name that stands for legacy types whichever branch was taken (an alias of them
        is named for them, ``Tensor``/``FloatTensor``; other calls are not looked up)."""
        if not isinstance(node.func, (cst.Name, cst.Attribute)):
            return
        if not _names_a_tensor_type(node.func):
            return
        possible = self.context.possible_qualified_names(node.func)
        if not possible or not all(q in LEGACY for q in possible):
            return
        names = {LEGACY[q][0] for q in possible}
        dtype = DTYPES[next(iter(names))] if len(names) == 1 else "..."
        self.report(node, dtype=dtype, legacy=" / ".join(possible))

    def _fix(self, node: cst.Call, name: str, cuda: bool) -> Fix | None:
        if not _fixable(node):
            return None
        tensor = torch_spelling(self.context, node.func, "torch.tensor")
        dtype = torch_spelling(self.context, node.func, f"torch.{DTYPES[name]}")
        if tensor is None or dtype is None:
            return None
        keywords: list[tuple[str, cst.BaseExpression]] = [
            ("dtype", cst.parse_expression(dtype[0]))]
        if cuda:
            keywords.append(("device", cst.SimpleString('"cuda"')))
        new = with_keywords(node.with_changes(func=cst.parse_expression(tensor[0])), *keywords)
        text = self.context.code(new)
        if not keeps_comments(node, text):
            return None
        edits = [NodeEdit(node, text)]
        imported = node.func
        if isinstance(imported, cst.Attribute) and isinstance(imported.value, cst.Name) and cuda:
            imported = imported.value  # from torch import cuda; cuda.FloatTensor([...])
        if isinstance(imported, cst.Name):
            index = index_for(self.context)
            cleanup = import_cleanup(index, imported.value, _fixable, node)
            if cleanup:
                edits.extend(cleanup)
        needs = {n for n in (tensor[1], dtype[1]) if n is not None}
        return Fix.safe(*edits, imports=tuple(sorted(needs, key=lambda n: n.line)))


def _fixable(call: cst.Call) -> bool:
    return (len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star
            and isinstance(call.args[0].value, (cst.List, cst.Tuple)))


def _names_a_tensor_type(func: cst.BaseExpression) -> bool:
    last = func.value if isinstance(func, cst.Name) else func.attr.value  # type: ignore[attr-defined]
    return last.endswith("Tensor")
