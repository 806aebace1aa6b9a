"""Plain lists and dicts of layers stored on ``self`` (TL101, TL102): how the class builds
and uses them, and the shared rule that reports and wraps them."""

from __future__ import annotations

import libcst as cst

from torchlint.analysis.context import FileContext
from torchlint.analysis.nodes import (
    assigned_value,
    iter_scope,
    last_name_part,
    parameters,
    self_attribute,
    single_target,
    target_names,
)
from torchlint.analysis.spelling import PLACING_HELPER
from torchlint.analysis.torch_facts import is_layer_call

_REBINDING_TYPES = frozenset({cst.For, cst.With, cst.AugAssign, cst.Del, cst.CompFor,
                              cst.NamedExpr, cst.Assign, cst.AnnAssign})
# statements and clauses that bind names (exact classes: checked on every node of a scope)
_BINDING_TYPES = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.With,
                            cst.FunctionDef, cst.ClassDef, cst.NamedExpr, cst.Del, cst.CompFor,
                            cst.Import, cst.ImportFrom})

# Attribute names an nn.ModuleDict key may not take: add_module refuses names that
# already exist as attributes of the container.
MODULE_DICT_RESERVED = frozenset({
    "T_destination", "add_module", "apply", "bfloat16", "buffers", "call_super_init", "children",
    "clear", "compile", "cpu", "cuda", "double", "dump_patches", "eval", "extra_repr", "float",
    "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule", "half", "ipu",
    "items", "keys", "load_state_dict", "modules", "mtia", "named_buffers", "named_children",
    "named_modules", "named_parameters", "parameters", "pop", "register_backward_hook",
    "register_buffer", "register_forward_hook", "register_forward_pre_hook",
    "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
    "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook",
    "requires_grad_", "set_extra_state", "set_submodule", "share_memory", "state_dict", "to",
    "to_empty", "train", "training", "type", "update", "values", "xpu", "zero_grad",
})


def scope_nodes(ctx: FileContext, function: cst.FunctionDef) -> list[cst.CSTNode]:
    """``list(iter_scope(function.body))``, computed once a file."""
    return ctx.cached(("scope_nodes", id(function)), lambda: list(iter_scope(function.body)))


def layer_locals(ctx: FileContext, function: cst.FunctionDef) -> frozenset[str]:
    """Local names that every binding in ``function`` sets to a layer call (found once a
    function: TL101 and TL102 both ask)."""
    return ctx.cached(("layer_locals", id(function)), lambda: _layer_locals(ctx, function))


def _layer_locals(ctx: FileContext, function: cst.FunctionDef) -> frozenset[str]:
    param_names = {p.name.value for p in parameters(function, stars=False)}
    good: set[str] = set()
    bad: set[str] = set(param_names)
    from torchlint.analysis.bindings import bound_names

    for node in scope_nodes(ctx, function):
        target = single_target(node)
        if type(target) is cst.Name:
            if is_layer_call(ctx, assigned_value(node)):
                good.add(target.value)
            else:
                bad.add(target.value)
            continue
        kind = type(node)
        if kind in _BINDING_TYPES:
            if kind is cst.CompFor:
                bad.update(target_names(node.target))
            else:
                bad.update(bound_names(node))
    return frozenset(good - bad)


def is_layerish(ctx: FileContext, expr: cst.CSTNode | None, layer_names: frozenset[str]) -> bool:
    """A layer construction call, or a local name always bound to one."""
    if expr is None:
        return False
    if isinstance(expr, cst.Name):
        return expr.value in layer_names
    return is_layer_call(ctx, expr)


def is_clearly_not_module(expr: cst.BaseExpression) -> bool:
    """Literals and containers: values nn.ModuleList/ModuleDict would refuse."""
    return isinstance(expr, (cst.BaseNumber, cst.BaseString, cst.List, cst.Tuple, cst.Dict,
                             cst.Set, cst.ListComp, cst.DictComp, cst.SetComp, cst.BinaryOperation,
                             cst.Comparison, cst.UnaryOperation, cst.BooleanOperation)) or (
        isinstance(expr, cst.Name) and expr.value in ("True", "False"))


def string_key(expr: cst.BaseExpression) -> bool:
    """A key nn.ModuleDict accepts for sure: a string literal without dots, not reserved."""
    if isinstance(expr, cst.SimpleString):
        try:
            value = expr.evaluated_value
        except Exception:
            return False
        return isinstance(value, str) and bool(value) and "." not in value and (
            value not in MODULE_DICT_RESERVED)
    if isinstance(expr, cst.FormattedString):
        return all("." not in part.value for part in expr.parts
                   if isinstance(part, cst.FormattedStringText)) and any(
            isinstance(part, cst.FormattedStringText) and part.value for part in expr.parts)
    return False


# --------------------------------------------------- unregistered containers
LIST_ONLY_METHODS = frozenset({"remove", "reverse", "sort", "index", "count", "copy", "clear"})
DICT_ONLY_METHODS = frozenset({"get", "setdefault", "copy", "popitem", "fromkeys"})


class Finding:
    """A plain list/dict of layers stored on ``self``: where to report, how to fix."""

    def __init__(self, kind: str, target: cst.BaseExpression, value: cst.BaseExpression,
                 fix: str | None) -> None:
        self.kind = kind  # "list" | "dict"
        self.target = target
        self.value = value
        # "wrap": nn.ModuleX(<value>); "empty": nn.ModuleX(); "call": replace the func of
        # list(...)/dict(...) by nn.ModuleX; None: no fix
        self.fix = fix


class _Growth:
    def __init__(self) -> None:
        self.layers = 0
        self.unknown = 0
        self.bad = 0
        self.keys_ok = True
        self.after: list[int] = []

    def item(self, ctx: FileContext, expr: cst.BaseExpression | None,
             layer_names: frozenset[str]) -> None:
        if expr is None:
            self.unknown += 1
        elif is_layerish(ctx, expr, layer_names):
            self.layers += 1
        elif is_clearly_not_module(expr):
            self.bad += 1
        else:
            self.unknown += 1

    def sequence(self, ctx: FileContext, expr: cst.BaseExpression,
                 layer_names: frozenset[str]) -> None:
        if isinstance(expr, (cst.List, cst.Tuple)):
            for element in expr.elements:
                if isinstance(element, cst.StarredElement):
                    self.unknown += 1
                else:
                    self.item(ctx, element.value, layer_names)
        elif isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            self.item(ctx, expr.elt, layer_names)
        else:
            self.unknown += 1


def _subject_matches(expr: cst.BaseExpression, subject: str | tuple[str]) -> bool:
    if isinstance(subject, tuple):
        return self_attribute(expr) == subject[0]
    return isinstance(expr, cst.Name) and expr.value == subject


def _growth(ctx: FileContext, nodes: list[cst.CSTNode], start: int,
            subject: str | tuple[str], kind: str, layer_names: frozenset[str]) -> _Growth:
    """How the list/dict named by ``subject`` is filled in ``nodes[start:]``."""
    growth = _Growth()
    for index in range(start, len(nodes)):
        node = nodes[index]
        node_kind = type(node)  # exact types: asked of every node after the container's
        if node_kind is cst.Call and type(node.func) is cst.Attribute and (  # type: ignore[attr-defined]
            _subject_matches(node.func.value, subject)  # type: ignore[attr-defined]
        ):
            method = node.func.attr.value
            args = [a for a in node.args]
            before = (growth.layers, growth.unknown, growth.bad)
            if kind == "list" and method == "append" and len(args) == 1:
                growth.item(ctx, args[0].value, layer_names)
            elif kind == "list" and method == "insert" and len(args) == 2:
                growth.item(ctx, args[1].value, layer_names)
            elif kind == "list" and method == "extend" and len(args) == 1:
                growth.sequence(ctx, args[0].value, layer_names)
            elif kind == "dict" and method == "update" and args and all(
                a.keyword is not None for a in args
            ):
                for a in args:  # .update(name=layer, ...): ModuleDict.update takes no keywords
                    growth.item(ctx, a.value, layer_names)
                growth.keys_ok = False
            elif kind == "dict" and method == "update" and len(args) == 1 and isinstance(
                args[0].value, cst.Dict
            ):
                for element in args[0].value.elements:
                    if isinstance(element, cst.DictElement):
                        growth.item(ctx, element.value, layer_names)
                        growth.keys_ok &= string_key(element.key)
                    else:
                        growth.unknown += 1
            if (growth.layers, growth.unknown, growth.bad) != before:
                growth.after.append(index)
        elif kind == "list" and node_kind is cst.AugAssign and isinstance(
            node.operator, cst.AddAssign  # type: ignore[attr-defined]
        ) and _subject_matches(node.target, subject):  # type: ignore[attr-defined]
            growth.sequence(ctx, node.value, layer_names)
            growth.after.append(index)
        elif kind == "dict" and node_kind is cst.Assign:
            for target in node.targets:
                sub = target.target
                if isinstance(sub, cst.Subscript) and _subject_matches(sub.value, subject):
                    growth.item(ctx, node.value, layer_names)
                    index_node = sub.slice[0].slice if len(sub.slice) == 1 else None
                    growth.keys_ok &= isinstance(index_node, cst.Index) and string_key(
                        index_node.value)
                    growth.after.append(index)
    return growth


def _is_empty(ctx: FileContext, value: cst.BaseExpression, kind: str) -> bool:
    if kind == "list" and isinstance(value, cst.List):
        return not value.elements
    if kind == "dict" and isinstance(value, cst.Dict):
        return not value.elements
    if isinstance(value, cst.Call) and not value.args:
        return ctx.qualified_name(value.func) == f"builtins.{kind}"
    return False


def _direct(ctx: FileContext, value: cst.BaseExpression, kind: str,
            layer_names: frozenset[str]) -> tuple[bool, bool, str] | None:
    """(is a container of layers, fixable, fix kind) for a literal/comprehension/list(...)."""
    if kind == "list" and isinstance(value, cst.List):
        growth = _Growth()
        growth.sequence(ctx, value, layer_names)
        if growth.layers and not growth.bad:
            return True, not growth.unknown, "wrap"
        return None
    if kind == "list" and isinstance(value, cst.ListComp):
        if is_layerish(ctx, value.elt, layer_names):
            return True, True, "wrap"
        return None
    if kind == "list" and isinstance(value, cst.Call) and len(value.args) == 1 and (
        value.args[0].keyword is None and not value.args[0].star
    ) and ctx.qualified_name(value.func) == "builtins.list":
        inner = value.args[0].value
        if isinstance(inner, (cst.GeneratorExp, cst.ListComp)) and is_layerish(
            ctx, inner.elt, layer_names
        ):
            return True, True, "call"
        return None
    if kind == "dict" and isinstance(value, cst.Dict):
        growth = _Growth()
        for element in value.elements:
            if isinstance(element, cst.DictElement):
                growth.item(ctx, element.value, layer_names)
                growth.keys_ok &= string_key(element.key)
            else:
                growth.unknown += 1
        if growth.layers and not growth.bad:
            return True, not growth.unknown and growth.keys_ok, "wrap"
        return None
    if kind == "dict" and isinstance(value, cst.Call) and value.args and all(
        arg.keyword is not None for arg in value.args
    ) and ctx.qualified_name(value.func) == "builtins.dict":
        # dict(encoder=nn.Linear(...), ...): wrapped whole, nn.ModuleDict takes no keywords
        growth = _Growth()
        for arg in value.args:
            growth.item(ctx, arg.value, layer_names)
            growth.keys_ok &= _keyword_key(arg)
        if growth.layers and not growth.bad:
            return True, not growth.unknown and growth.keys_ok, "wrap"
        return None
    if kind == "dict" and isinstance(value, cst.DictComp):
        if is_layerish(ctx, value.value, layer_names):
            return True, string_key(value.key), "wrap"
        return None
    return None


def _self_assigns(nodes: list[cst.CSTNode]) -> tuple[list[tuple[str, int]], set[str]]:
    """``(attribute, index)`` of each ``self.X = ...`` among a function's ``nodes``, and the
    names assigned there: ``self.X = name`` can only store a local container (a parameter,
    the common ``self.dim = dim``, never is one)."""
    self_assigns: list[tuple[str, int]] = []
    assigned: set[str] = set()
    for index, node in enumerate(nodes):
        target = single_target(node)
        if type(target) is cst.Name:
            assigned.add(target.value)  # type: ignore[union-attr]
        attr = self_attribute(target)
        if attr is not None:
            self_assigns.append((attr, index))
    return self_assigns, assigned


def unregistered_containers(ctx: FileContext, cls: cst.ClassDef, function: cst.FunctionDef,
                            kind: str) -> list[Finding]:
    """Plain lists (kind "list") or dicts ("dict") of layers stored on ``self`` in ``function``."""
    nodes = scope_nodes(ctx, function)
    self_assigns, assigned = ctx.cached(("self_assigns", id(function)),
                                        lambda: _self_assigns(nodes))

    def may_hold(value: cst.BaseExpression | None) -> bool:
        if isinstance(value, cst.Name):
            return value.value in assigned
        return may_hold_container(ctx, value, kind)

    if not any(may_hold(assigned_value(nodes[index])) for _, index in self_assigns):
        return []  # the common case: nothing list- or dict-like is stored on self here
    # a layer registered by add_module/setattr is in the module already
    layer_names = layer_locals(ctx, function) - registered_names(ctx, function)

    def class_uses() -> tuple[set[str], dict[str, set[str]]]:
        # how the class uses its attributes: a scan of the whole class, so only once a
        # container of layers has been found
        return ctx.cached(("class_uses", id(cls)), lambda: _class_uses(ctx, cls))

    findings: list[Finding] = []
    for attr, index in self_assigns:
        if any(a == attr and i > index for a, i in self_assigns):
            continue
        node = nodes[index]
        target = single_target(node)
        value = assigned_value(node)
        assert target is not None and value is not None
        found: tuple[bool, str] | None = None  # (fixable as far as the value goes, fix kind)
        direct = _direct(ctx, value, kind, layer_names)
        if direct is not None:
            found = direct[1], direct[2]
        elif _is_empty(ctx, value, kind):
            growth = _growth(ctx, nodes, index + 1, (attr,), kind, layer_names)
            if growth.layers and not growth.bad:
                found = not growth.unknown and growth.keys_ok, "empty"
        elif isinstance(value, cst.Name) and value.value in assigned:
            local = _local_container(ctx, nodes, index, value.value, kind, layer_names)
            if local is not None:
                found = local, "wrap"
        if found is None:
            continue
        wrapped, odd_by_kind = class_uses()
        if attr in wrapped:
            continue
        fixable = found[0] and attr not in odd_by_kind[kind]
        findings.append(Finding(kind, target, value, found[1] if fixable else None))
    return findings


def may_hold_container(ctx: FileContext, value: cst.BaseExpression | None, kind: str) -> bool:
    """Could ``self.X = value`` store a plain container (the only values the rules inspect)?"""
    literal, comprehension = (cst.List, cst.ListComp) if kind == "list" else (
        cst.Dict, cst.DictComp)
    if isinstance(value, literal):
        # a literal with a plain value in it (``[64, 128]``) is no container of layers
        return not any(is_clearly_not_module(e.value) for e in value.elements
                       if isinstance(e, (cst.Element, cst.DictElement)))
    if isinstance(value, (comprehension, cst.Name)):
        return True
    return isinstance(value, cst.Call) and ctx.qualified_name(value.func) == f"builtins.{kind}"


def _local_container(ctx: FileContext, nodes: list[cst.CSTNode], use: int, name: str, kind: str,
                     layer_names: frozenset[str]) -> bool | None:
    """For ``self.X = name``: None unless ``name`` is surely a plain container of layers
    (then: whether wrapping it is a safe fix)."""
    from torchlint.analysis.bindings import bound_names

    binding: int | None = None
    for index, node in enumerate(nodes):
        target = single_target(node)
        node_kind = type(node)
        if type(target) is cst.Name and target.value == name:
            if binding is not None:
                return None
            binding = index
        elif node_kind in _REBINDING_TYPES:
            names = target_names(node.target) if node_kind is cst.CompFor else bound_names(node)
            if name in names and not (node_kind is cst.AugAssign and kind == "list"):
                return None
        elif node_kind is cst.Call and _passes(node, name):
            # handed to some call (nn.Sequential(*name), helper(name)...): leave it alone
            return None
    if binding is None or binding > use:
        return None
    value = assigned_value(nodes[binding])
    assert value is not None
    direct = _direct(ctx, value, kind, layer_names)
    growth = _growth(ctx, nodes, binding + 1, name, kind, layer_names)
    if any(index > use for index in growth.after) or growth.bad:
        return None
    if direct is not None:
        return direct[1] and not growth.unknown and growth.keys_ok
    if _is_empty(ctx, value, kind) and growth.layers:
        return not growth.unknown and growth.keys_ok
    return None


def _keyword_key(arg: cst.Arg) -> bool:
    return arg.keyword is not None and arg.keyword.value not in MODULE_DICT_RESERVED


_REGISTERING = frozenset({"add_module", "register_module"})




def _registers(ctx: FileContext, call: cst.Call) -> bool:
    """``self.add_module(name, m)``, ``self.register_module(...)``, ``setattr(self, n, m)``,
    or a project helper that places a module inside another (``set_module_by_path``)."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in _REGISTERING:
        return True
    name = last_name_part(call.func)
    if name is not None and name != "setattr" and PLACING_HELPER.search(name) and len(call.args) >= 2:
        return True
    return ctx.qualified_name(call.func) == "builtins.setattr" and bool(call.args) and (
        isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "self")


def registered_names(ctx: FileContext, function: cst.FunctionDef) -> frozenset[str]:
    """Local names handed to add_module/register_module/setattr(self, ...) in ``function``."""
    names: set[str] = set()
    for node in scope_nodes(ctx, function):
        if type(node) is cst.Call and _registers(ctx, node):
            names.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name))
    return frozenset(names)


def _passes(call: cst.Call, name: str) -> bool:
    return any(isinstance(arg.value, cst.Name) and arg.value.value == name for arg in call.args)


def _class_uses(ctx: FileContext, cls: cst.ClassDef) -> tuple[set[str], dict[str, set[str]]]:
    """Attributes handed to a call anywhere in the class (``nn.Sequential(*self.X)``,
    ``nn.ModuleList(self.X)``), and by container kind ("list", "dict") the attributes used
    with a method the nn container of that kind lacks."""
    from torchlint.analysis.nodes import iter_nodes

    wrapped: set[str] = set()
    odd: dict[str, set[str]] = {"list": set(), "dict": set()}
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.For) and any(
            isinstance(n, cst.Call) and _registers(ctx, n) for n in iter_nodes(node.body)
        ):
            # for i, m in enumerate(self.X): self.add_module(f"m{i}", m)
            wrapped.update(self_attribute(n) for n in iter_nodes(node.iter)
                           if isinstance(n, cst.Attribute) and self_attribute(n) is not None)
        if isinstance(node, cst.Call):
            registers = _registers(ctx, node)
            layer = is_layer_call(ctx, node)
            qual = ctx.qualified_name(node.func)
            # a helper of the project (make_sequential(self.X)) may well wrap it
            helper = (isinstance(node.func, cst.Name) or qual is not None) and not (
                qual or "").startswith(("builtins.", "torch."))
            for arg in node.args:
                attr = self_attribute(arg.value)
                if attr is not None and (layer or arg.star or registers or helper):
                    wrapped.add(attr)
                if layer or registers:  # Sequential(OrderedDict(zip(n, self.X))), self.X[-1]
                    wrapped.update(a for a in (self_attribute(n) for n in iter_nodes(arg.value)
                                               if isinstance(n, cst.Attribute)) if a)
            if isinstance(node.func, cst.Attribute):
                method = node.func.attr.value
                for kind, missing in (("list", LIST_ONLY_METHODS), ("dict", DICT_ONLY_METHODS)):
                    if method in missing:
                        attr = self_attribute(node.func.value)
                        if attr is not None:
                            odd[kind].add(attr)
    return wrapped, odd


