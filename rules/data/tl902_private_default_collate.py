from __future__ import annotations

import libcst as cst

from torchlint.analysis.imports import ModuleIndex, index_for
from torchlint.analysis.nodes import dotted_name, iter_nodes
from torchlint.analysis.torch_releases import PUBLIC_DEFAULT_COLLATE, Releases
from torchlint.diagnostic import Fix, NodeEdit
from torchlint.engine.triage import api
from torchlint.fix.edits import reference, removal_edit
from torchlint.rule import Rule

PRIVATE = "torch.utils.data._utils.collate"
PUBLIC = "torch.utils.data"
# the private functions that torch.utils.data exports, as the same objects, since torch 1.11
NAMES = ("default_collate", "default_convert")


class PrivateDefaultCollate(Rule):
    """## What it does
    Flags `default_collate` and `default_convert` taken from the private module
    `torch.utils.data._utils.collate`, as an attribute or in a from-import.

    ## Why is this bad?
    `_utils` is internal to torch and may be reorganised in any release without notice.
    Since torch 1.11 both functions are public as `torch.utils.data.default_collate` and
    `torch.utils.data.default_convert` (the very same objects), so nothing is gained by
    reaching into the private module.

    ## Example
    ```python
    from torch.utils.data._utils.collate import default_collate

    def collate(batch):
        return default_collate([item for item in batch if item is not None])
    ```

    Use instead:
    ```python
    from torch.utils.data import default_collate

    def collate(batch):
        return default_collate([item for item in batch if item is not None])
    ```

    ## Fix safety
    Safe: the public names are the same function objects. An assignment to the private
    attribute (patching what `DataLoader` uses internally) is left alone.
    """

    code = "TL902"
    name = "private-default-collate"
    triggers = ("_utils",)
    patterns = (r"\b_utils\b", r"\bcollate\b", r"\bdefault_co(?:llate|nvert)\b")
    requires = api(*(f"{PRIVATE}.{name}" for name in NAMES))
    message = "{name} is imported from torch's private _utils.collate; use torch.utils.data.{name}"
    fix_safety = "safe"
    applies_to = Releases(PUBLIC_DEFAULT_COLLATE.replacement_added, why="the public names exist "
                          "from 1.11; for an older target the private module is the only one.")
    fix_title = "Use the public torch.utils.data name"

    def visit_Attribute(self, node: cst.Attribute) -> None:
        ctx = self.context
        qual = ctx.qualified_name(node)
        if qual is None or not qual.startswith(PRIVATE + ".") or node.attr.value not in NAMES:
            return
        if qual != f"{PRIVATE}.{node.attr.value}" or self._skipped(node):
            return
        self.report(node, fix=self._attribute_fix(node), name=node.attr.value)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or dotted_name(node.module) != PRIVATE:
            return
        if isinstance(node.names, cst.ImportStar) or self._skipped(node):
            return
        for alias in node.names:
            if alias.evaluated_name in NAMES:
                self.report(alias.name, fix=self._import_fix(node, alias),
                            name=alias.evaluated_name)

    def _skipped(self, node: cst.CSTNode) -> bool:
        """An assignment patches the private name; an old torch fallback (``try: <public>
        except ImportError: <private>``) is deliberate."""
        ctx = self.context
        parent = ctx.parent(node)
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                isinstance(parent, (cst.AugAssign, cst.AnnAssign)) and parent.target is node):
            return True
        for ancestor in reversed(ctx.ancestors[:-1]):
            if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(ancestor, (cst.If, cst.IfExp, cst.Try)) and self._mentions_public(
                    ancestor):
                return True
        return False

    def _mentions_public(self, node: cst.CSTNode) -> bool:
        for child in iter_nodes(node):
            if isinstance(child, cst.ImportFrom) and not child.relative and child.module and (
                    dotted_name(child.module) in (PUBLIC, f"{PUBLIC}.dataloader")):
                return True
            if isinstance(child, cst.Attribute) and child.attr.value in NAMES and (
                    self.context.qualified_name(child.value) in (PUBLIC, f"{PUBLIC}.dataloader")):
                return True
        return False

    def _attribute_fix(self, node: cst.Attribute) -> Fix | None:
        spelled = reference(self.context, f"{PUBLIC}.{node.attr.value}")
        if spelled is None:
            return None
        spelling, need = spelled
        edits = [NodeEdit(node, spelling)]
        # ``from torch.utils.data._utils import collate`` / ``import ... as C``: the import
        # goes when every use of the name was one of these attributes
        root = node.value
        if isinstance(root, cst.Name):
            edits.extend(_unused_module_import(index_for(self.context), root))
        return Fix.safe(*edits, imports=(need,) if need else ())

    def _import_fix(self, node: cst.ImportFrom, alias: cst.ImportAlias) -> Fix | None:
        assert not isinstance(node.names, cst.ImportStar)
        if all(a.evaluated_name in NAMES for a in node.names):
            return Fix.safe(NodeEdit(node.module, PUBLIC))  # type: ignore[arg-type]
        # a mixed import: this name moves to an import of its own, on the line above
        index = index_for(self.context)
        line = index.parents.get(node)
        bound = alias.evaluated_alias
        name = alias.evaluated_name
        site = index.import_site(bound or name, node)
        if site is None or site.statement is not node or line is None:
            return None
        text = f"from {PUBLIC} import {name}" + (f" as {bound}" if bound else "")
        removal = removal_edit(index, site)
        # a comment on the moved name's line goes with it (one line above holds both)
        moved = [e.text for e in removal if e.kind == "insert_line_before"]
        if len(moved) > 1 or moved and "\n" in moved[0]:
            return None
        if moved:
            text = f"{text}  {moved[0]}"
        return Fix.safe(NodeEdit(line, text, kind="insert_line_before"),
                        *(e for e in removal if e.kind != "insert_line_before"))


def _unused_module_import(index: ModuleIndex, name: cst.Name) -> tuple[NodeEdit, ...]:
    """Edits removing the import of ``name`` when each use is ``name.default_collate`` or
    ``name.default_convert`` (all of which the fixes replace)."""
    site = index.import_site(name.value, name)
    if site is None or not site.uses:
        return ()
    for use in site.uses:
        parent = index.parents.get(use)
        if not (isinstance(parent, cst.Attribute) and parent.value is use
                and parent.attr.value in NAMES):
            return ()
    return removal_edit(index, site)
