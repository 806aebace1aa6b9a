"""The analysis layer asked directly: each question has one implementation, tested here
rather than only through the rules that ask it."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest
from test_context import probe

from torchlint.analysis.bindings import bindings_before, module_value
from torchlint.analysis.grad_mode import (
    GradOff,
    call_sites,
    called_only_with_grad_off,
    called_with_grad_off,
    grad_off,
)
from torchlint.analysis.imports import AMBIGUOUS, ModuleIndex, import_bindings
from torchlint.analysis.nodes import iter_calls, iter_compound_statements, iter_scope
from torchlint.analysis.options import MODEL_NAMES, Options
from torchlint.analysis.spelling import reads_as_graph_output
from torchlint.analysis.torch_facts import is_model_name


def _kinds_at_mark(source: str, name: str, **kwargs) -> list[list[str]]:
    """At each ``mark(...)`` call: the kinds of the bindings of ``name`` before it."""
    def question(ctx, node):
        if isinstance(node.func, cst.Name) and node.func.value == "mark":
            return [b.kind for b in bindings_before(ctx, name, **kwargs)]
        return None

    return [a for a in probe(source, "Call", question) if a is not None]


def test_bindings_before_reads_straight_line_code_latest_first() -> None:
    source = """
        def f(x, loader):
            x = g(x)
            x += 1
            a, x = h()
            mark()
            for x in loader:
                mark()
            if cond:
                x = 2
            mark()
    """
    assert _kinds_at_mark(source, "x") == [
        ["unpack", "augmented", "assign", "param"],
        ["for"],
        ["unknown"],
    ]


def test_bindings_before_enters_with_bodies_unless_told_not_to() -> None:
    source = """
        import torch

        def f(model, x):
            with torch.no_grad():
                y = model(x)
            mark()
    """
    assert _kinds_at_mark(source, "y") == [["assign"]]
    assert _kinds_at_mark(source, "y", into_with=False) == [["unknown"]]


def test_bindings_before_stops_at_a_loop_that_rebinds_the_name() -> None:
    source = """
        def f(xs):
            total = 0
            for x in xs:
                mark()
                total = total + x
    """
    assert _kinds_at_mark(source, "total") == [["unknown"]]


def test_module_value_is_the_only_module_level_assignment() -> None:
    source = """
        import torch.nn as nn
        if __name__ == "__main__":
            crit = nn.CrossEntropyLoss()
        twice = 1
        twice = 2

        def train(out, y):
            mark(crit, twice)

        def shadowed(crit):
            mark(crit)
    """

    def question(ctx, node):
        if isinstance(node.func, cst.Name) and node.func.value == "mark":
            return [module_value(ctx, a.value.value) is not None for a in node.args]
        return None

    assert [a for a in probe(source, "Call", question) if a] == [[True, False], [False]]


def test_grad_off_ranks_items() -> None:
    source = """
        import torch
        from torch import no_grad as ng

        with torch.no_grad(): mark()
        with ng(): mark()
        with torch.inference_mode(): mark()
        with torch.inference_mode(False): mark()
        with torch.set_grad_enabled(False): mark()
        with maybe_no_grad(cfg): mark()
        with open(f): mark()
    """

    def question(ctx, node):
        if isinstance(node, cst.With):
            return grad_off(ctx, node.items[0].item)
        return None

    assert [a for a in probe(source, "With", question) if a is not None] == [
        GradOff.SURELY, GradOff.SURELY, GradOff.SURELY, GradOff.MENTIONED, GradOff.SWITCHED,
        GradOff.MENTIONED, GradOff.NO]


def test_call_sites_know_the_grad_mode_of_every_call() -> None:
    source = """
        import torch

        def evaluate(model):
            return model(1)

        def helper():
            pass

        with torch.no_grad():
            evaluate(net)
            obj.helper()
        evaluate(net)

        @torch.no_grad()
        def predict():
            helper()
    """

    def question(ctx, node):
        if isinstance(node, cst.Module):
            sites = call_sites(ctx)
            return (sorted(sites.by_name["evaluate"]), called_only_with_grad_off(ctx, "evaluate"),
                    called_only_with_grad_off(ctx, "helper"),
                    called_with_grad_off(ctx, "helper"))
        return None

    (answer,) = [a for a in probe(source, "Module", question) if a is not None]
    assert answer == ([GradOff.NO, GradOff.SURELY], False, True, True)


@pytest.mark.parametrize(("name", "expected"), [
    ("model", True), ("net", True), ("netG", True), ("generator", True), ("ema_model", True),
    ("fake_discriminator", True), ("model_ema", True), ("net_g", True), ("resnet", True),
    ("mymodel", True), ("self_model", True),
    ("build_model", False), ("get_net", False), ("model_path", False), ("model_fn", False),
    ("Generator", False), ("loader", False), ("models", False), ("", False),
])
def test_is_model_name(name: str, expected: bool) -> None:
    assert is_model_name(name, MODEL_NAMES) is expected


@pytest.mark.parametrize(("name", "expected"), [
    ("loss", True), ("batch_class_loss", True), ("lossD", True), ("out", True),
    ("outputs", True), ("cls_logits", True), ("y_pred", True), ("predictions", True),
    ("sample_size", False), ("ratio", False), ("hidden_state", False), ("layout", False),
    ("dropout_mask", False), ("logging_output", True), ("n_tokens", False),
])
def test_reads_as_graph_output(name: str, expected: bool) -> None:
    assert reads_as_graph_output(name) is expected


def test_model_names_extend_from_the_settings() -> None:
    assert not is_model_name("policy", MODEL_NAMES)
    options = Options().extended(model_names=["Policy"])
    assert is_model_name("policy", options.model_names)
    assert is_model_name("target_policy", options.model_names)
    assert options.fingerprint != Options().fingerprint


def test_import_bindings_name_every_alias_and_skip_star_imports() -> None:
    module = cst.parse_module(textwrap.dedent("""
        import torch.nn as nn, os.path
        from torch import optim as o, cuda
        from .layers import Block
        from math import *
    """))
    found = []
    for line in module.body:
        for imported in import_bindings(line.body[0]):
            found.append((imported.bound, imported.qualified,
                          imported.alias.evaluated_alias or imported.alias.evaluated_name))
    assert found == [
        ("nn", "torch.nn", "nn"), ("os", "os", "os.path"),
        ("o", "torch.optim", "o"), ("cuda", "torch.cuda", "cuda"),
        ("Block", AMBIGUOUS, "Block"),
    ]
    index = ModuleIndex(module)  # the star import used to crash it
    assert set(index.imports) == {"nn", "os", "o", "cuda", "Block"}


def test_iter_scope_stays_in_its_scope_and_may_enter_lambdas() -> None:
    function = cst.parse_module(textwrap.dedent("""
        def f():
            a()
            g = lambda: b()
            def inner():
                c()
    """)).body[0]
    def called(nodes):
        return sorted(c.func.value for c in nodes if isinstance(c, cst.Call))
    assert called(iter_scope(function.body)) == ["a"]
    assert called(iter_scope(function.body, enter_lambdas=True)) == ["a", "b"]
    assert sorted(c.func.value for c in iter_calls(function)) == ["a", "b", "c"]


def test_compound_statements_reach_every_function_without_entering_expressions() -> None:
    module = cst.parse_module(textwrap.dedent("""\
        def a(): pass
        class C:
            def b(self):
                def c(): pass
        if x:
            def d(): pass
        elif y:
            def e(): pass
        else:
            def f(): pass
        try:
            def g(): pass
        except E:
            def h(): pass
        finally:
            def i(): pass
        with z:
            for q in r:
                def j(): pass
        k = lambda: [n for n in range(3)]
        """))
    found = list(iter_compound_statements(module))
    assert [n.name.value for n in found if isinstance(n, cst.FunctionDef)] == list("abcdefghij")
    assert not any(isinstance(n, (cst.Lambda, cst.ListComp, cst.SimpleStatementLine))
                   for n in found)


def test_unpacked_shape_is_the_nearest_unpacking_after_the_binding() -> None:
    from torchlint.analysis.shapes import unpacked_shape

    source = """
        def f(x, y):
            mark()
            b, c, _h, w = x.shape
            n, (d) = y.size()
            mark()
            x = g(x)
            mark()
    """

    def question(ctx, node):
        if not (isinstance(node.func, cst.Name) and node.func.value == "mark"):
            return None
        found = []
        for name in ("x", "y"):
            bound = ctx.binding(name, node)
            unpack = unpacked_shape(ctx, name, node,
                                    None if bound is None or bound.kind == "param" else bound.node)
            found.append(unpack.names if unpack is not None else None)
        return found

    assert [a for a in probe(source, "Call", question) if a is not None] == [
        [None, None],
        [("b", "c", "_h", "w"), ("n", "d")],
        [None, ("n", "d")],  # x is bound anew after its unpacking
    ]
