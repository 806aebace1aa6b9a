from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from torchlint.analysis.nodes import (
    dotted_name,
    iter_nodes,
    iter_scope,
    self_attribute,
    single_target,
)
from torchlint.engine.triage import api, biased_call, check
from torchlint.rule import Rule
from torchlint.rules.modules.conv_bn import (
    batchnorm_dimension,
    bias_unless,
    conv_bias_fix,
    conv_dimension,
    mirrors_other_code,
    sequence_item,
)


@dataclass
class _ClassFacts:
    node: cst.ClassDef
    built: dict[str, cst.Call] = field(default_factory=dict)  # attr -> construction in __init__
    assignments: dict[str, int] = field(default_factory=dict)  # attr -> times assigned
    uses: dict[str, int] = field(default_factory=dict)  # attr -> times called/passed
    bias_read: set[str] = field(default_factory=set)
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (conv attr, bn attr)
    # fixes of the convs in ``built``, made while the context stands at their statement
    fixes: dict[str, object] = field(default_factory=dict)


class ConvBiasBeforeBatchNorm(Rule):
    """## What it does
    Flags a convolution that keeps its bias although a batch norm of the same
    dimension comes right after it.

    "Right after" means next to it in `nn.Sequential(...)`, a list or an `OrderedDict` of
    named layers (the conv may be a name bound to it just before and read nowhere else,
    or else only in the `else` block of the `if` that adds the norm, as in torchvision's
    VGG);
    appended right after it (`layers = [conv]` or `layers.append(conv)`, then
    `layers.append(bn)`, also when that append is the first thing under `if normalize:`);
    added right after it to an `nn.Sequential` with `add_module` (a name bound to
    `nn.Sequential()`, or `self` in a subclass of it); or applied to its output in
    `forward` (`self.bn(self.conv(x))`) in a module class, including classes deriving from
    module classes of other files of the project.

    Not flagged: a conv whose `bias=` is not a literal `True` (`bias=not normalize`), a
    conv also used without the batch norm, and code that says it is adapted from another
    code base (a header, module or class docstring with "adapted/ported/modified from"
    and an address): its layers mirror that code's released checkpoints.

    ## Why is this bad?
    Batch norm subtracts the per-channel mean of its input, so a constant added per
    channel by the convolution is removed again: the conv bias has no effect on the
    output and its gradient is zero on average. It still costs memory, an add per
    element and optimizer state, and it shows up as a useless parameter. BatchNorm's own
    shift (`beta`) already plays that role. Pass `bias=False` to the convolution.

    ## Example
    ```python
    import torch.nn as nn

    stem = nn.Sequential(
        nn.Conv2d(3, 32, kernel_size=3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
    )
    ```

    Use instead:
    ```python
    import torch.nn as nn

    stem = nn.Sequential(
        nn.Conv2d(3, 32, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(32),
        nn.ReLU(inplace=True),
    )
    ```

    ## Fix safety
    Unsafe: `bias=False` is added (or replaces `bias=True`); when the batch norm is added
    only under a condition, `bias=not <condition>` keeps the bias where the norm is
    absent. The model computes the same function, but `conv.bias` disappears from
    `parameters()` and `state_dict()`: existing checkpoints no longer load with
    `strict=True`, and code reading `conv.bias` breaks.
    """

    code = "TL106"
    name = "conv-bias-before-batchnorm"
    triggers = ("BatchNorm",)
    # torch.nn layers (`nn` in the import or the call): a BatchNorm1d/2d/3d (or Lazy...) and a
    # Conv1d/2d/3d or ConvTranspose1d/2d/3d (or Lazy...), spelled as names ending the word
    patterns = (r"\bnn\b", r"BatchNorm[123]d\b", r"Conv(?:Transpose)?[123]d\b")
    # a batch norm, and a conv that may keep its bias (conv_bias_fix: no starred argument,
    # the bias absent or a literal True)
    requires = api(*(f"torch.nn.{lazy}BatchNorm{d}d" for lazy in ("", "Lazy") for d in "123")) & (
        biased_call(*(f"torch.nn.{lazy}{conv}{d}d" for lazy in ("", "Lazy")
                      for conv in ("Conv", "ConvTranspose") for d in "123"))) & check(
        "torchlint.rules.modules.screens:may_flag_tl106")
    message = "{conv} is followed by {bn}, which cancels its bias; pass bias=False"
    fix_safety = "unsafe"
    fix_title = "Pass bias=False"

    def __init__(self, context) -> None:  # type: ignore[no-untyped-def]
        super().__init__(context)
        self._classes: list[_ClassFacts | None] = []
        self._reported: set[int] = set()

    # ------------------------------------------------- Sequential / list literals
    def visit_Call(self, node: cst.Call) -> None:
        qual = self.context.qualified_name(node.func)
        if qual == "torch.nn.Sequential":
            items = [arg.value if not arg.star and arg.keyword is None else None
                     for arg in node.args]
            self._adjacent(items)
        self._forward_nested(node)

    def visit_List(self, node: cst.List) -> None:
        items = [None if isinstance(e, cst.StarredElement) else sequence_item(e.value)
                 for e in node.elements]
        self._adjacent(items)

    def _adjacent(self, items: list[cst.BaseExpression | None]) -> None:
        for conv, bn in zip(items, items[1:]):
            if conv is not None and bn is not None:
                self._check(conv, bn)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        statements = _small_statements(node.body)
        self._added_in_sequence(node.body, statements)
        self._forward_sequence(statements)

    def visit_Module(self, node: cst.Module) -> None:
        self._added_in_sequence(node.body, _small_statements(node.body))

    def _added_in_sequence(self, body: Sequence[cst.BaseStatement],
                           statements: list[cst.BaseSmallStatement | None]) -> None:
        """``layers = [conv]`` (or ``layers.append(conv)``) directly followed by
        ``layers.append(bn)``, or by ``if normalize: layers.append(bn)``."""
        for index in range(len(body) - 1):
            last = _last_added(statements[index])
            if last is None:
                continue
            owner, conv = last
            if owner.startswith(_ADD_MODULE) and not self._sequential(
                    owner[len(_ADD_MODULE):], body[index]):
                continue  # add_module on a plain module: its forward decides the order
            following = body[index + 1]
            first = _first_added(statements[index + 1])
            if first is not None and first[0] == owner:
                self._check(conv, first[1], at=body[index + 1])
            elif isinstance(following, cst.If):
                block = following.body
                lead = block.body[0] if isinstance(block, cst.SimpleStatementSuite) else (
                    _small_statements(block.body)[0])
                first = _first_added(lead)
                if first is not None and first[0] == owner:
                    self._check(conv, first[1], condition=following.test, at=following)

    def _sequential(self, owner: str, at: cst.CSTNode) -> bool:
        """``owner`` is an ``nn.Sequential``: a name bound to ``nn.Sequential(...)``, or
        ``self`` in a class deriving from it. Its layers run in the order they are added."""
        ctx = self.context
        if owner == "self":
            cls = ctx.enclosing_class()
            return cls is not None and any(
                ctx.qualified_name(base.value) == "torch.nn.Sequential" for base in cls.bases)
        bound = ctx.binding(owner, at) if "." not in owner else None
        return bound is not None and bound.kind == "assign" and isinstance(
            bound.value, cst.Call) and ctx.qualified_name(bound.value.func) == "torch.nn.Sequential"

    def _check(self, conv: cst.BaseExpression, bn: cst.BaseExpression,
               fix: object = None, condition: cst.BaseExpression | None = None,
               at: cst.CSTNode | None = None) -> bool:
        branch = self._branch(conv) if condition is None and at is None else None
        if branch is not None:
            condition = branch  # ``if batch_norm: layers += [conv2d, bn, relu]`` / else
        conv, bn = self._layer(conv, at, alone=branch is None), self._layer(bn, at)
        dim = conv_dimension(self.context, conv)
        if dim is None or batchnorm_dimension(self.context, bn) != dim:
            return False
        assert isinstance(conv, cst.Call)
        bias = "False" if condition is None else bias_unless(self.context, condition)
        if fix is None:
            fix = conv_bias_fix(self.context, conv, bias or "False")
        if fix is False or id(conv) in self._reported:
            return False
        classes = [a for a in self.context.ancestors if isinstance(a, cst.ClassDef)]
        if mirrors_other_code(self.context, classes):
            return False  # a port of another code base: its checkpoints carry the bias
        self._reported.add(id(conv))
        values = {"conv": _leaf(self.context, conv), "bn": _leaf(self.context, bn)}
        if condition is None:
            self.report(conv, fix=fix or None, **values)
            return True
        when = self.context.code(condition)
        if "\n" in when or len(when) > 40:
            when = "the condition holds"
        advice = f"pass bias={bias}" if bias is not None else "drop the bias where it is used"
        self.report(conv, fix=(fix or None) if bias is not None else None,
                    message=f"{values['conv']} is followed by {values['bn']} when `{when}`, "
                            f"which cancels its bias; {advice}")
        return True

    def _branch(self, conv: cst.BaseExpression) -> cst.BaseExpression | None:
        """The test of the ``if`` whose body holds this sequence when ``conv`` (a name) is
        read there once and, besides, only in its ``else`` block (torchvision's VGG:
        ``if batch_norm: layers += [conv2d, nn.BatchNorm2d(v), ...]``, ``else: layers +=
        [conv2d, ...]``): the conv is followed by the norm when the test holds."""
        if not isinstance(conv, cst.Name):
            return None
        ctx = self.context
        ancestors = ctx.ancestors
        for i in range(len(ancestors) - 2, -1, -1):
            anc = ancestors[i]
            if isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(anc, cst.If):
                if ancestors[i + 1] is not anc.body or not isinstance(anc.orelse, cst.Else):
                    return None
                scope = ctx.current_function or ctx.module
                total = ctx.cached(("tl106_reads", id(scope)), lambda: _reads(scope))
                here = _reads(anc.body).get(conv.value, 0)
                elsewhere = _reads(anc.orelse).get(conv.value, 0)
                if here == 1 and elsewhere >= 1 and total.get(conv.value, 0) == 1 + elsewhere:
                    return anc.test
                return None
        return None

    def _layer(self, item: cst.BaseExpression, at: cst.CSTNode | None,
               alone: bool = False) -> cst.BaseExpression:
        """The layer a name in a sequence was bound to just before (``conv = nn.Conv2d(...)``
        then ``[conv, nn.BatchNorm2d(c)]``); ``alone``: only when the sequence is the one
        place the name is read (else the layer is also used without what follows it)."""
        if not isinstance(item, cst.Name):
            return item
        bound = self.context.binding(item.value, at)
        if bound is None or bound.kind != "assign" or not isinstance(bound.value, cst.Call):
            return item
        if alone:
            scope = self.context.current_function or self.context.module
            reads = self.context.cached(("tl106_reads", id(scope)), lambda: _reads(scope))
            if reads.get(item.value, 0) != 1:
                return item
        return bound.value

    # ----------------------------------------------------- attributes + forward
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(_ClassFacts(node) if self.context.is_module_class(node) else None)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        facts = self._classes.pop()
        if facts is None:
            return
        valid = []
        for conv_attr, bn_attr in facts.pairs:
            conv, bn = facts.built.get(conv_attr), facts.built.get(bn_attr)
            if conv is None or bn is None or conv_attr in facts.bias_read:
                continue
            if facts.assignments.get(conv_attr) != 1 or facts.assignments.get(bn_attr) != 1:
                continue
            dim = conv_dimension(self.context, conv)
            if dim is None or batchnorm_dimension(self.context, bn) != dim:
                continue
            valid.append((conv_attr, conv, bn))
        pair_count: dict[str, int] = {}
        for conv_attr, _, _ in valid:
            pair_count[conv_attr] = pair_count.get(conv_attr, 0) + 1
        for conv_attr, conv, bn in valid:
            if facts.uses.get(conv_attr, 0) != pair_count[conv_attr]:
                continue  # self.conv is also used without the batch norm after it
            self._check(conv, bn, facts.fixes.get(conv_attr))

    def _facts(self) -> _ClassFacts | None:
        if not self._classes or self._classes[-1] is None:
            return None
        facts = self._classes[-1]
        function = self.context.current_function
        if function is None or self.context.enclosing_class(function) is not facts.node:
            return None
        return facts

    def visit_Assign(self, node: cst.Assign) -> None:
        facts = self._facts()
        attr = self_attribute(single_target(node))
        if facts is None or attr is None:
            if self._classes and self._classes[-1] is not None:
                for target in node.targets:
                    name = self_attribute(target.target)
                    if name is not None:
                        self._classes[-1].assignments[name] = 2
            return
        facts.assignments[attr] = facts.assignments.get(attr, 0) + 1
        if self.context.in_method("__init__") and isinstance(node.value, cst.Call):
            if conv_dimension(self.context, node.value) or batchnorm_dimension(
                self.context, node.value
            ):
                facts.built[attr] = node.value
                if conv_dimension(self.context, node.value):
                    facts.fixes[attr] = conv_bias_fix(self.context, node.value)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if not self._classes or self._classes[-1] is None:
            return
        facts = self._classes[-1]
        attr = self_attribute(node)
        if attr is None:
            return
        parent = self.context.parent(node)
        if isinstance(parent, cst.Attribute) and parent.value is node:
            if parent.attr.value == "bias":
                facts.bias_read.add(attr)
            return
        if isinstance(parent, (cst.AssignTarget, cst.AnnAssign, cst.AugAssign)):
            return
        facts.uses[attr] = facts.uses.get(attr, 0) + 1

    def _forward_nested(self, node: cst.Call) -> None:
        """self.bn(self.conv(x))"""
        facts = self._facts()
        if facts is None or not self.context.in_forward():
            return
        outer = self_attribute(node.func)
        if outer is None or len(node.args) != 1 or node.args[0].keyword or node.args[0].star:
            return
        inner = node.args[0].value
        if isinstance(inner, cst.Call):
            conv_attr = self_attribute(inner.func)
            if conv_attr is not None:
                facts.pairs.append((conv_attr, outer))

    def _forward_sequence(self, statements: list[cst.BaseSmallStatement | None]) -> None:
        """x = self.conv(x) directly followed by x = self.bn(x)"""
        facts = self._facts()
        if facts is None or not self.context.in_forward():
            return
        for first, second in zip(statements, statements[1:]):
            a, b = _self_call_assign(first), _self_call_assign(second)
            if a is None or b is None:
                continue
            produced, conv_attr, _ = a
            _, bn_attr, argument = b
            if isinstance(argument, cst.Name) and argument.value == produced:
                facts.pairs.append((conv_attr, bn_attr))


# the owner of layers added with ``owner.add_module(name, layer)``, told from a list's
_ADD_MODULE = "add_module:"


def _reads(scope: cst.CSTNode) -> dict[str, int]:
    """How many times each name is read in ``scope`` (not counting where it is bound)."""
    counts: dict[str, int] = {}
    bound: set[int] = set()
    for node in iter_scope(scope):
        if isinstance(node, cst.AssignTarget):
            bound.update(id(n) for n in iter_nodes(node.target) if isinstance(n, cst.Name))
        elif isinstance(node, cst.Attribute):
            bound.add(id(node.attr))  # ``x.conv`` reads x, not a name conv
        elif isinstance(node, cst.Name) and id(node) not in bound:
            counts[node.value] = counts.get(node.value, 0) + 1
    return counts


def _leaf(ctx, call: cst.BaseExpression) -> str:  # type: ignore[no-untyped-def]
    qual = ctx.qualified_name(call.func) if isinstance(call, cst.Call) else None
    return qual.rsplit(".", 1)[1] if qual else "the convolution"


def _small_statements(body: Sequence[cst.CSTNode]) -> list[cst.BaseSmallStatement | None]:
    """The one small statement of each line of ``body`` (None for compound statements)."""
    return [s.body[0] if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 else None
            for s in body]


def _last_added(stmt: cst.CSTNode | None) -> tuple[str, cst.BaseExpression] | None:
    """('layers', the layer added last) for ``layers.append(x)``, ``layers.extend([.., x])``,
    ``layers += [.., x]`` and ``layers = [.., x]``."""
    found = _added(stmt)
    if found is None or not found[1] or found[1][-1] is None:
        return None
    return found[0], found[1][-1]  # type: ignore[return-value]


def _first_added(stmt: cst.CSTNode | None) -> tuple[str, cst.BaseExpression] | None:
    """('layers', the layer added first) for ``layers.append(x)``, ``layers += [x, ..]``,
    ``layers.extend([x, ..])`` (not a new list: that replaces what came before)."""
    if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
        return None
    found = _added(stmt)
    if found is None or not found[1] or found[1][0] is None:
        return None
    return found[0], found[1][0]  # type: ignore[return-value]


def _added(stmt: cst.CSTNode | None
           ) -> tuple[str, list[cst.BaseExpression | None]] | None:
    owner: str | None = None
    items: cst.BaseExpression | None = None
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_module" and (
                len(call.args) == 2) and all(not a.star and a.keyword is None for a in call.args):
            owner = dotted_name(call.func.value)
            return (_ADD_MODULE + owner, [call.args[1].value]) if owner is not None else None
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
                "append", "extend") and len(call.args) == 1 and not call.args[0].star and (
                call.args[0].keyword is None):
            owner = dotted_name(call.func.value)
            value = call.args[0].value
            if call.func.attr.value == "append":
                return (owner, [sequence_item(value)]) if owner is not None else None
            items = value
    elif isinstance(stmt, cst.AugAssign) and isinstance(stmt.operator, cst.AddAssign):
        owner, items = dotted_name(stmt.target), stmt.value
    elif single_target(stmt) is not None:
        owner, items = dotted_name(single_target(stmt)), stmt.value  # type: ignore[union-attr]
    if owner is None or not isinstance(items, (cst.List, cst.Tuple)):
        return None
    return owner, [None if isinstance(e, cst.StarredElement) else sequence_item(e.value)
                   for e in items.elements]  # type: ignore[misc]


def _self_call_assign(stmt: cst.CSTNode | None
                      ) -> tuple[str, str, cst.BaseExpression] | None:
    """('x', 'conv', <arg>) for ``x = self.conv(<arg>)``."""
    target = single_target(stmt) if stmt is not None else None
    value = stmt.value if isinstance(stmt, (cst.Assign, cst.AnnAssign)) else None
    if not isinstance(target, cst.Name) or not isinstance(value, cst.Call):
        return None
    attr = self_attribute(value.func)
    if attr is None or len(value.args) != 1 or value.args[0].keyword or value.args[0].star:
        return None
    return target.value, attr, value.args[0].value
