"""FileContext: qualified names through imports, module classes, scope facts, bindings."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from torchlint.analysis.grad_mode import in_no_grad
from torchlint.engine.walk import run_rules
from torchlint.rule import Rule


def probe(source: str, node_type: str, question):
    """Walk ``source``; at every node of ``node_type`` record ``question(context, node)``."""
    answers = []

    class Probe(Rule):
        code = "TL999"
        name = "probe"
        message = ""

    def handler(self, node):
        answers.append(question(self.context, node))

    setattr(Probe, f"visit_{node_type}", handler)
    run_rules("probe.py", cst.parse_module(textwrap.dedent(source)), [Probe])
    return answers


def call_names(source: str) -> list[str | None]:
    return probe(source, "Call", lambda ctx, node: ctx.qualified_name(node.func))


@pytest.mark.parametrize(
    ("imports", "call", "expected"),
    [
        ("import torch.nn as nn", "nn.Linear(1, 2)", "torch.nn.Linear"),
        ("from torch import nn", "nn.Linear(1, 2)", "torch.nn.Linear"),
        ("from torch import nn as tnn", "tnn.Conv2d(1, 2, 3)", "torch.nn.Conv2d"),
        ("from torch.nn import functional as F", "F.dropout(x)", "torch.nn.functional.dropout"),
        ("import torch.nn.functional as F", "F.relu(x)", "torch.nn.functional.relu"),
        ("import torch", "torch.nn.functional.relu(x)", "torch.nn.functional.relu"),
        ("import torch.nn", "torch.nn.Linear(1, 2)", "torch.nn.Linear"),
        ("from torch.nn import Linear", "Linear(1, 2)", "torch.nn.Linear"),
        ("from torch.nn import Linear as Dense", "Dense(1, 2)", "torch.nn.Linear"),
        ("from torch.nn.modules.conv import Conv2d", "Conv2d(1, 1, 1)", "torch.nn.Conv2d"),
        ("import torch as T", "T.zeros(3)", "torch.zeros"),
        ("import mylib.nn as nn", "nn.Linear(1, 2)", "mylib.nn.Linear"),
        ("from . import nn", "nn.Linear(1, 2)", None),
        ("", "nn.Linear(1, 2)", None),
        ("", "len(x)", "builtins.len"),
    ],
)
def test_qualified_names(imports: str, call: str, expected: str | None) -> None:
    assert call_names(f"{imports}\n{call}\n") == [expected]


def test_a_name_rebound_to_something_else_resolves_to_nothing() -> None:
    source = """
        from torch import nn
        nn = make_fake_nn()
        nn.Linear(1, 2)
    """
    assert call_names(source)[-1] is None


def test_parameters_and_locals_shadow_imports() -> None:
    source = """
        import torch.nn.functional as F

        def f(F, x):
            return F.dropout(x)

        def g(x):
            return F.dropout(x)

        def h(x):
            F = other
            return F.dropout(x)
    """
    assert call_names(source) == [None, "torch.nn.functional.dropout", None]


def test_function_level_imports_resolve_inside_that_function_only() -> None:
    source = """
        def f(x):
            import torch.nn.functional as F
            return F.gelu(x)

        def g(x):
            return F.gelu(x)
    """
    assert call_names(source) == ["torch.nn.functional.gelu", None]


def test_alias_for_uses_the_files_own_spelling() -> None:
    answers = probe("from torch import nn as tnn\nx = 1\n", "Assign",
                    lambda ctx, node: (ctx.alias_for("torch.nn"), ctx.alias_for("torch.nn.Linear")))
    assert answers == [("tnn", "tnn.Linear")]
    answers = probe("import torch\nx = 1\n", "Assign",
                    lambda ctx, node: ctx.alias_for("torch.nn"))
    assert answers == ["torch.nn"]
    answers = probe("import numpy as np\nx = 1\n", "Assign",
                    lambda ctx, node: ctx.alias_for("torch.nn"))
    assert answers == [None]


def test_module_classes_through_aliases_and_local_bases() -> None:
    source = """
        import torch.nn as nn
        from torch.nn import Module as M
        import lightning as L
        import other

        class A(nn.Module): pass
        class B(A): pass
        class C(M): pass
        class D(L.LightningModule): pass
        class E(other.Module): pass
        class F: pass
    """
    answers = probe(source, "ClassDef", lambda ctx, node: (node.name.value,
                                                          ctx.is_module_class(node)))
    assert dict(answers) == {"A": True, "B": True, "C": True, "D": True, "E": False, "F": False}


def test_scope_facts() -> None:
    source = """
        import torch
        from torch import nn

        class Net(nn.Module):
            def forward(self, x):
                for i in range(3):
                    with torch.no_grad():
                        x = x.mark()
                    x = x.mark()
                return x.mark()

        @torch.inference_mode()
        def evaluate(model):
            return model.mark()

        def plain():
            with torch.inference_mode(False):
                y.mark()
    """

    def facts(ctx, node):
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "mark"):
            return None
        loop = ctx.current_loop()
        return (ctx.in_forward(), loop is not None, in_no_grad(ctx))

    answers = [a for a in probe(source, "Call", facts) if a is not None]
    assert answers == [
        (True, True, True),
        (True, True, False),
        (True, False, False),
        (False, False, True),
        (False, False, False),
    ]


def test_binding_follows_straight_line_code_only() -> None:
    source = """
        def f(x, flag):
            y = x.permute(0, 2, 1)
            a = y.probe()
            y = x.contiguous()
            b = y.probe()
            if flag:
                y = x.t()
            c = y.probe()
            for batch in loader:
                d = batch.probe()
            for k in range(3):
                e = y.probe()
                y = y + 1
            return x.probe()
    """

    def bound(ctx, node):
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "probe"):
            return None
        name = node.func.value.value
        binding = ctx.binding(name)
        if binding is None:
            return (name, None)
        value = binding.value
        return (name, binding.kind, cst.Module([]).code_for_node(value) if value else None)

    answers = [a for a in probe(source, "Call", bound) if a is not None]
    assert answers == [
        ("y", "assign", "x.permute(0, 2, 1)"),
        ("y", "assign", "x.contiguous()"),
        ("y", None),
        ("batch", "for", "loader"),
        ("y", None),
        ("x", "param", None),
    ]


def test_code_keeps_the_indentation_of_continuation_lines() -> None:
    source = """
        class Net:
            def build(self):
                layers = [
                    Linear(1, 2),
                    Linear(2, 3),
                ]
    """
    texts = probe(source, "List", lambda ctx, node: ctx.code(node))
    assert texts == ["[\n            Linear(1, 2),\n            Linear(2, 3),\n        ]"]


def test_binding_looks_into_with_bodies() -> None:
    source = """
        def step(model, x, y):
            with autocast():
                out = model(x)
                loss = crit(out, y)
            total = loss.probe()
            with open("f") as loss:
                pass
            again = loss.probe()
    """

    def bound(ctx, node):
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "probe"):
            return None
        binding = ctx.binding("loss")
        return binding and (binding.kind, cst.Module([]).code_for_node(binding.value))

    answers = [a for a in probe(source, "Call", bound) if a is not None]
    assert answers == [("assign", "crit(out, y)"), ("with", 'open("f")')]


def test_binding_follows_a_chain_back_from_an_earlier_statement() -> None:
    source = """
        def save(path):
            net = Net()
            model = net.to("cpu")
            model.probe()
    """

    def chain(ctx, node):
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "probe"):
            return None
        first = ctx.binding("model")
        second = ctx.binding("net", first.node)
        return cst.Module([]).code_for_node(second.value)

    assert [a for a in probe(source, "Call", chain) if a is not None] == ["Net()"]
