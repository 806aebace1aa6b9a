"""The semantic children of libcst nodes, and fast walks over them.

libcst's own ``visit`` rebuilds every node it passes (about 60 % of the parse
time on real files) and walks every whitespace token. Rules never look at
whitespace, so this reads the dataclass fields that hold syntax only, in
source order. The engine's walk (:mod:`torchlint.engine.walk`) and every rule
that looks at a part of the tree again use these children.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

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


# Facts of single nodes that rules ask again and again (the names a function body binds)
# are remembered while one tree is analysed (see ``node_memo``). Children lists are not:
# computing them again costs less than remembering every node's (measured on the corpus).
_node_memos: dict[str, dict[int, tuple[cst.CSTNode, Any]]] | None = None


@contextmanager
def memoised_node_facts() -> Iterator[None]:
    """Remember ``node_memo`` facts until the block ends (one file's analysis)."""
    global _node_memos
    previous = _node_memos
    _node_memos = {}
    try:
        yield
    finally:
        _node_memos = previous


def node_memo(fact: str) -> dict[int, tuple[cst.CSTNode, Any]] | None:
    """The memo of ``fact`` (a fact of one node, with no other input), kept while one tree is
    analysed: ``id(node) -> (node, value)``; the entry keeps the node alive, so its id
    cannot be reused by another node while the memo exists, but check ``entry[0] is node``.
    None outside ``memoised_node_facts``: compute without remembering."""
    memos = _node_memos
    if memos is None:
        return None
    memo = memos.get(fact)
    if memo is None:
        memo = memos[fact] = {}
    return memo


def children_of(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The semantic children of ``node``, in source order (a new list each call)."""
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



def semantic_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Children of ``node`` that carry syntax (no whitespace, comments or punctuation)."""
    return iter(children_of(node))


def iter_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and all its semantic descendants, pre-order."""
    stack = [node]
    pop = stack.pop
    extend = stack.extend
    while stack:
        current = pop()
        yield current
        children = children_of(current)
        if children:
            extend(reversed(children))


def node_types(*bases: type) -> frozenset[type]:
    """The node classes that are one of ``bases`` or derive from one, for a test by exact
    type (``type(node) in TYPES``): an isinstance against libcst's classes goes through
    ABCMeta, about 1 us a check, and scans that visit every node make millions."""
    found: set[type] = set()
    todo = list(bases)
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return frozenset(found)


_COMPOUND_STATEMENTS = node_types(cst.BaseCompoundStatement)
_BLOCK_PARTS = node_types(cst.BaseCompoundStatement, cst.BaseSuite, cst.ExceptHandler,
                          cst.ExceptStarHandler, cst.Else, cst.Finally, cst.MatchCase)


def iter_compound_statements(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """``node`` and the compound statements (functions, classes, ``if``, loops, ``with``,
    ``try``, ``match``) nested in it, pre-order, without entering expressions or simple
    statements: the cheap way to find every function or class of a module."""
    stack = [node]
    while stack:
        current = stack.pop()
        if type(current) in _COMPOUND_STATEMENTS or current is node:
            yield current
        stack.extend(reversed([c for c in children_of(current) if type(c) in _BLOCK_PARTS]))


# Nodes that open a scope of their own: a scope walk does not enter them.
SCOPE_TYPES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_NAMED_SCOPE_TYPES = frozenset({cst.FunctionDef, cst.ClassDef})


def iter_scope(node: cst.CSTNode, *, enter_lambdas: bool = False) -> Iterator[cst.CSTNode]:
    """``node`` and its descendants, pre-order, not entering nested functions and classes
    (nor lambdas, unless ``enter_lambdas``: a lambda's body runs where it is called)."""
    closed = _NAMED_SCOPE_TYPES if enter_lambdas else SCOPE_TYPES
    yield node
    stack: list[cst.CSTNode] = list(reversed(children_of(node)))
    while stack:
        current = stack.pop()
        yield current
        if type(current) not in closed:
            stack.extend(reversed(children_of(current)))


# ------------------------------------------------------------------ calls
def get_arg(call: cst.Call, keyword: str | None, position: int | None = None) -> cst.Arg | None:
    """The argument passed as ``keyword=`` or at ``position`` (stops at ``*args``)."""
    positional = 0
    for arg in call.args:
        if arg.keyword is not None:
            if keyword is not None and arg.keyword.value == keyword:
                return arg
            continue
        if arg.star:
            if position is not None and positional <= position:
                return None
            continue
        if position is not None and positional == position:
            return arg
        positional += 1
    return None


def has_star_args(call: cst.Call) -> bool:
    return any(arg.star for arg in call.args)


def has_keyword(call: cst.Call, keyword: str) -> bool:
    return get_arg(call, keyword) is not None or any(arg.star == "**" for arg in call.args)


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [arg for arg in call.args if arg.keyword is None and not arg.star]


def method_call(node: cst.CSTNode, *names: str) -> cst.Attribute | None:
    """For ``<obj>.name(...)`` with name in ``names``, the ``Attribute``; else None."""
    if type(node) is cst.Call and type(node.func) is cst.Attribute:
        if not names or node.func.attr.value in names:
            return node.func
    return None


def receiver(node: cst.CSTNode) -> cst.BaseExpression | None:
    """``obj`` in ``obj.method(...)``."""
    attribute = method_call(node)
    return attribute.value if attribute is not None else None


def is_literal_false(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def is_literal_true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def string_value(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = node.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    return None


def last_name_part(node: cst.BaseExpression) -> str | None:
    kind = type(node)
    if kind is cst.Name:
        return node.value  # type: ignore[attr-defined,no-any-return]
    if kind is cst.Attribute:
        return node.attr.value  # type: ignore[attr-defined,no-any-return]
    return None


def self_attribute(node: cst.BaseExpression | None) -> str | None:
    """``X`` for ``self.X``."""
    if type(node) is cst.Attribute and type(node.value) is cst.Name and (
        node.value.value == "self"
    ):
        return node.attr.value
    return None


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=()).code_for_node(node)


def dotted_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None


def target_names(target: cst.BaseExpression) -> Iterator[str]:
    kind = type(target)
    if kind is cst.Name:
        yield target.value  # type: ignore[attr-defined]
    elif kind is cst.Tuple or kind is cst.List:
        for element in target.elements:  # type: ignore[attr-defined]
            yield from target_names(element.value)
    elif kind is cst.StarredElement:
        yield from target_names(target.value)  # type: ignore[attr-defined]


def parameters(function: cst.FunctionDef | cst.Lambda, *, stars: bool = True
               ) -> list[cst.Param]:
    """The parameters of ``function``; ``*args``/``**kwargs`` too unless ``stars`` is False."""
    p = function.params
    found = [*p.posonly_params, *p.params, *p.kwonly_params]
    if stars:
        found += [s for s in (p.star_arg, p.star_kwarg) if isinstance(s, cst.Param)]
    return found


def iter_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every call in ``node`` (nested scopes included), pre-order."""
    for child in iter_nodes(node):
        if isinstance(child, cst.Call):
            yield child


def single_target(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    """The one target of ``a = v`` / ``a: T = v``; None for chained or tuple targets."""
    kind = type(stmt)
    if kind is cst.Assign and len(stmt.targets) == 1:
        return stmt.targets[0].target
    if kind is cst.AnnAssign and stmt.value is not None:
        return stmt.target
    return None


def assigned_value(stmt: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
        return stmt.value
    return None


def own_callee(func: cst.BaseExpression) -> str | None:
    """``f`` for a call of ``f(...)``, ``self.f(...)`` or ``cls.f(...)``: the name of a
    function or method the file itself may define."""
    kind = type(func)
    if kind is cst.Name:
        return func.value  # type: ignore[attr-defined,no-any-return]
    if kind is cst.Attribute and type(func.value) is cst.Name and (  # type: ignore[attr-defined]
            func.value.value in ("self", "cls")):  # type: ignore[attr-defined]
        return func.attr.value  # type: ignore[attr-defined,no-any-return]
    return None
