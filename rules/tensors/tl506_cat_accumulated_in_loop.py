from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from torchlint.analysis.bindings import binds_anywhere
from torchlint.analysis.context import FileContext
from torchlint.analysis.imports import index_for
from torchlint.analysis.nodes import (
    code,
    get_arg,
    method_call,
    semantic_children,
    target_names,
)
from torchlint.rule import Rule

_CAT = frozenset({"torch.cat", "torch.concat", "torch.concatenate"})
_STACK = frozenset({"torch.stack"})
_LOOPS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class CatAccumulatedInLoop(Rule):
    """## What it does
    Flags, inside a `for`/`while` body, a tensor rebuilt from everything gathered so far
    on every iteration: `A = torch.cat([A, e], ...)` (either order, list or tuple), or
    `A = torch.cat(L, ...)` / `A = torch.stack(L, ...)` where `L.append(...)` is called in
    the same loop body (and `L` is not rebound there), provided `A` is read nowhere else
    in the loop. Not flagged: `A` also read in the loop (autoregressive decoding feeds the
    growing sequence back to the model, which needs it), a single concatenation after
    the loop.

    Opt-in: a performance issue, not a bug (on real code 9 of 13 findings were loops over
    a handful of items, levels, heads or chunks, where the copies cost nothing; one file
    cannot tell those loops from long ones).

    ## Why is this bad?
    Each concatenation allocates a new tensor and copies everything gathered so far, so a
    loop of `n` iterations copies O(n²) elements and churns the allocator (on a GPU this
    also fragments the cache). When the result is only used after the loop, appending
    the pieces to a Python list and calling `torch.cat` once costs O(n).

    ## Example
    ```python
    import torch

    def embed_all(model, loader):
        embeddings = torch.empty(0, 128)
        for batch in loader:
            embeddings = torch.cat([embeddings, model(batch)])
        return embeddings
    ```

    Use instead:
    ```python
    import torch

    def embed_all(model, loader):
        pieces = []
        for batch in loader:
            pieces.append(model(batch))
        return torch.cat(pieces)
    ```

    ## Fix safety
    No fix: the list and the final concatenation need the code after the loop, which
    the rule does not rewrite.
    """

    code = "TL506"
    name = "cat-accumulated-in-loop"
    default = False
    triggers = ("cat", "stack")
    patterns = (r"\b(?:cat|concat|concatenate|stack)\b", r"\b(?:for|while)\b")
    message = ("'{name}' is rebuilt by torch.{function} on every iteration, copying all "
               "gathered so far; append to a list and concatenate once after the loop")

    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual not in _CAT and qual not in _STACK:
            return
        assign = self.context.parent(node)
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return
        target = assign.targets[0].target
        loop = self.context.current_loop()
        tensors = get_arg(node, "tensors", 0)
        if loop is None or tensors is None or not _is_dotted(target) or _per_iteration(
                loop, target):
            return
        name = code(target)
        pieces = tensors.value
        allowed: set[int] = {id(target)}
        if qual in _CAT and isinstance(pieces, (cst.List, cst.Tuple)):
            elements = pieces.elements
            if len(elements) != 2 or any(isinstance(e, cst.StarredElement) for e in elements):
                return
            same = [e.value for e in elements if code(e.value) == name]
            if len(same) != 1:
                return
            allowed.add(id(same[0]))
        elif not _is_dotted(pieces) or not _grown_in(loop, code(pieces)):
            return
        if _read_in(self.context, loop, name, allowed):
            return
        self.report(node, name=name, function=qual.rsplit(".", 1)[1])  # type: ignore[union-attr]


def _is_dotted(expr: cst.BaseExpression) -> bool:
    """A name or an attribute chain on one (``acc``, ``self.outputs``)."""
    while type(expr) is cst.Attribute:
        expr = expr.value
    return type(expr) is cst.Name


def _per_iteration(loop: cst.For | cst.While, target: cst.BaseExpression) -> bool:
    """``target`` is an attribute of an object the loop rebinds each iteration
    (``region.prompt`` in ``for region in regions``): nothing accumulates across them."""
    if type(target) is not cst.Attribute:
        return False
    root = target
    while type(root) is cst.Attribute:
        root = root.value
    assert isinstance(root, cst.Name)
    if isinstance(loop, cst.For) and root.value in target_names(loop.target):
        return True
    return binds_anywhere(loop.body, root.value)


def _own_nodes(loop: cst.For | cst.While) -> Iterator[cst.CSTNode]:
    """The nodes of ``loop``'s body that run once per iteration of this very loop: not
    inside a nested loop's body, nor inside a nested function or class."""
    stack: list[cst.CSTNode] = [loop.body]
    while stack:
        current = stack.pop()
        yield current
        if isinstance(current, _LOOPS + _SCOPES):
            continue
        stack.extend(semantic_children(current))


def _grown_in(loop: cst.For | cst.While, list_name: str) -> bool:
    """``list_name.append(...)`` runs in each iteration of ``loop`` and the loop never
    rebinds ``list_name`` (a list built afresh each iteration does not grow)."""
    appended = False
    for node in _own_nodes(loop):
        if method_call(node, "append") and code(node.func.value) == list_name:  # type: ignore[attr-defined]
            appended = True
    for node in _all_nodes(loop.body):
        if isinstance(node, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            bound = node.target
            if code(bound) == list_name:
                return False
        elif isinstance(node, cst.For) and code(node.target) == list_name:
            return False
    return appended


def _all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(semantic_children(current))


def _read_in(ctx: FileContext, loop: cst.For | cst.While, name: str, allowed: set[int]
             ) -> bool:
    """``name`` (a name or attribute chain) is read in ``loop`` (its body, and the test of
    a ``while``) anywhere but at the nodes in ``allowed``."""
    parents = index_for(ctx).parents
    last = name.rsplit(".", 1)[-1]
    kind = cst.Attribute if "." in name else cst.Name
    roots: list[cst.CSTNode] = [loop.body]
    if isinstance(loop, cst.While):
        roots.append(loop.test)
    for root in roots:
        for node in _all_nodes(root):
            if type(node) is not kind or id(node) in allowed or (
                    node.value if kind is cst.Name else node.attr.value) != last:  # type: ignore[attr-defined]
                continue
            parent = parents.get(node)
            if isinstance(parent, cst.Attribute) and parent.attr is node or isinstance(
                    parent, cst.Arg) and parent.keyword is node:
                continue  # `x.name`, `f(name=...)`: only spelled like it
            if isinstance(parent, cst.AssignTarget) and parent.target is node:
                continue  # rebound, not read
            if code(node) == name:
                return True
    return False
