"""A fast walk over the semantic nodes of a libcst tree.

libcst's own ``visit`` rebuilds every node it passes (about 60 % of the parse
time on real files) and walks every whitespace token. Rules never look at
whitespace, so this reads the dataclass fields that hold syntax only, in
source order; the engine's walk over them dispatches ``visit_<Type>`` /
``leave_<Type>`` methods exactly as ``libcst.BatchableCSTVisitor`` declares them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import libcst as cst

_NOISE_FIELDS = frozenset(
    {
        "lpar", "rpar", "leading_lines", "lines_after_decorators", "header", "footer",
        "comma", "semicolon", "newline", "equal", "dot", "colon", "arrow", "operator",
        "whitespace", "trailing_whitespace", "lbracket", "rbracket", "lbrace", "rbrace",
        "first_line", "empty_lines", "indent", "asynchronous", "default_indent",
        "default_newline", "encoding", "has_trailing_newline", "star", "walrus",
    }
)

# Dataclass field order differs from source order for these; rules see source order.
_SOURCE_ORDER: dict[type, tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "name", "type_parameters", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "name", "type_parameters", "bases", "keywords", "body"),
    cst.IfExp: ("body", "test", "orelse"),
}

_fields_cache: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    fields = _fields_cache.get(cls)
    if fields is None:
        if cls in _SOURCE_ORDER:
            fields = _SOURCE_ORDER[cls]
        else:
            fields = tuple(
                f.name
                for f in dataclasses.fields(cls)
                if f.name not in _NOISE_FIELDS and not f.name.startswith("whitespace")
            )
        _fields_cache[cls] = fields
    return fields


_node_types: dict[type, bool] = {}


def _is_node_type(cls: type) -> bool:
    """``issubclass(cls, CSTNode)``, memoised: an ABC isinstance check costs ~1 us a call."""
    known = _node_types.get(cls)
    if known is None:
        known = _node_types[cls] = isinstance(cls, type) and issubclass(cls, cst.CSTNode)
    return known


# While one tree is analysed, each node's children are computed once: rules walk parts of
# the tree again (a function body, a loop) many times. The entry keeps the node alive, so
# its id cannot be reused by another node while the memo exists.
_memo: dict[int, tuple[cst.CSTNode, list[cst.CSTNode]]] | None = None


@contextmanager
def memoised_children() -> Iterator[None]:
    """Remember children lists until the block ends (one file's analysis)."""
    global _memo
    previous = _memo
    _memo = {}
    try:
        yield
    finally:
        _memo = previous


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The semantic children of ``node``; the list is shared: never modify it."""
    memo = _memo
    if memo is None:
        return _compute_children(node)
    entry = memo.get(id(node))
    if entry is not None and entry[0] is node:
        return entry[1]
    children = _compute_children(node)
    memo[id(node)] = (node, children)
    return children


def _compute_children(node: cst.CSTNode) -> list[cst.CSTNode]:
    children: list[cst.CSTNode] = []
    is_node = _node_types
    for name in _fields_cache.get(type(node)) or _child_fields(type(node)):
        value = getattr(node, name, None)
        kind = type(value)
        if kind is list or kind is tuple:
            for item in value:  # type: ignore[union-attr]
                item_kind = type(item)
                flag = is_node.get(item_kind)
                if flag is None:
                    flag = _is_node_type(item_kind)
                if flag:
                    children.append(item)
        else:
            flag = is_node.get(kind)
            if flag is None:
                flag = _is_node_type(kind)
                if not flag and isinstance(value, (list, tuple)):  # a list/tuple subclass
                    children.extend(i for i in value if isinstance(i, cst.CSTNode))
                    continue
            if flag:
                children.append(value)  # type: ignore[arg-type]
    return children


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The semantic children of ``node`` as a list shared with the walk: never modify it."""
    return _children(node)


def semantic_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Children of ``node`` that carry syntax (no whitespace, comments or punctuation)."""
    return iter(_children(node))


def iter_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and all its semantic descendants, pre-order."""
    stack = [node]
    pop = stack.pop
    extend = stack.extend
    while stack:
        current = pop()
        yield current
        children = _children(current)
        if children:
            extend(reversed(children))


# Nodes that open a scope of their own: a scope walk does not enter them.
SCOPE_TYPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})


def iter_scope(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, pre-order, not entering nested functions/classes/lambdas."""
    yield node
    stack: list[cst.CSTNode] = list(reversed(_children(node)))
    while stack:
        current = stack.pop()
        yield current
        if type(current) not in SCOPE_TYPES:
            stack.extend(reversed(_children(current)))


Handler = Callable[[cst.CSTNode], object]

# Node classes without semantic children that bind nothing and open no scope: a walk
# may skip them when no rule handles them.
LEAVES = frozenset({cst.Name, cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString,
                    cst.Ellipsis, cst.Pass, cst.Break, cst.Continue})
