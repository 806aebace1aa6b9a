"""Fixes of the API-migration rules that must also tidy the imports they leave unused."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.rules.migration.tl701_loss_reduction_args import LossReductionArgs
from torchlint.rules.migration.tl702_clip_grad_not_inplace_name import ClipGradNotInplaceName
from torchlint.rules.migration.tl703_cuda_amp_deprecated import CudaAmpDeprecated
from torchlint.rules.migration.tl704_autograd_variable import AutogradVariable
from torchlint.rules.migration.tl705_legacy_tensor_type import LegacyTensorType
from torchlint.rules.serialization.tl601_load_without_weights_only import LoadWithoutWeightsOnly
from torchlint.rules.serialization.tl602_load_without_map_location import LoadWithoutMapLocation
from torchlint.source import SourceFile


def fixed(rule: type, text: str) -> str:
    source = SourceFile("example.py", textwrap.dedent(text))
    outcome = fix_source(source, FileSettings.for_rules([rule], {rule.code}), unsafe=True)
    again = lint_source(outcome.source, FileSettings.for_rules([rule], {rule.code}))
    assert all(d.fix is None for d in again.diagnostics)
    return outcome.source.text


def test_variable_every_use_fixed_removes_import() -> None:
    assert fixed(AutogradVariable, """\
        import torch
        from torch.autograd import Variable

        a = Variable(torch.ones(2))
        b = Variable(torch.zeros(2), requires_grad=True)
        c = [Variable(t) for t in (a, b)]
        """) == textwrap.dedent("""\
        import torch

        a = torch.ones(2)
        b = torch.zeros(2).requires_grad_()
        c = [t.detach() for t in (a, b)]
        """)


def test_variable_aliased_import() -> None:
    assert fixed(AutogradVariable, """\
        from torch.autograd import Variable as V

        def f(x):
            return V(x) + 1
        """) == textwrap.dedent("""\

        def f(x):
            return x.detach() + 1
        """)


def test_variable_kept_while_another_use_remains() -> None:
    out = fixed(AutogradVariable, """\
        from torch.autograd import Variable

        def f(x, y):
            if isinstance(y, Variable):
                return Variable(x)
            return Variable(y, volatile=True)
        """)
    assert "from torch.autograd import Variable\n" in out
    assert "return x.detach()\n" in out


def test_variable_nested_uses() -> None:
    out = fixed(AutogradVariable, """\
        from torch.autograd import Variable

        y = Variable(Variable(x))
        """)
    assert out == "\ny = x.detach()\n"  # Variable(x) is x.detach(), once


def test_variable_alone_in_block_becomes_pass() -> None:
    out = fixed(AutogradVariable, """\
        try:
            from torch.autograd import Variable
        except ImportError:
            Variable = None
        y = Variable(x)
        """)
    assert "from torch.autograd import Variable" in out  # rebound in the except: kept
    out = fixed(AutogradVariable, """\
        def f(x):
            if x:
                from torch.autograd import Variable
            return Variable(x)
        """)
    assert out == "def f(x):\n    if x:\n        pass\n    return x.detach()\n"


def test_variable_import_inside_function() -> None:
    assert fixed(AutogradVariable, """\
        def f(x):
            from torch.autograd import Variable
            return Variable(x)

        def g(x):
            import os
            from torch.autograd import grad, Variable
            return Variable(x), grad
        """) == textwrap.dedent("""\
        def f(x):
            return x.detach()

        def g(x):
            import os
            from torch.autograd import grad
            return x.detach(), grad
        """)


def test_amp_two_names_one_left_in_use() -> None:
    out = fixed(CudaAmpDeprecated, """\
        import torch
        from torch.cuda.amp import autocast, GradScaler, custom_fwd

        scaler = GradScaler()
        with autocast(enabled=True):
            pass
        fwd = custom_fwd
        """)
    assert out == textwrap.dedent("""\
        import torch
        from torch.cuda.amp import custom_fwd

        scaler = torch.amp.GradScaler("cuda")
        with torch.amp.autocast("cuda", enabled=True):
            pass
        fwd = custom_fwd
        """)


def test_amp_adds_import_torch_and_drops_parenthesised_import() -> None:
    out = fixed(CudaAmpDeprecated, """\
        from torch.cuda.amp import (
            autocast,
            GradScaler,
        )

        s1 = GradScaler()
        s2 = GradScaler(init_scale=1024)
        with autocast():
            pass
        """)
    assert "torch.cuda.amp" not in out
    assert out.startswith("import torch\n")
    assert 's2 = torch.amp.GradScaler("cuda", init_scale=1024)' in out


def test_amp_name_used_without_call_keeps_import() -> None:
    out = fixed(CudaAmpDeprecated, """\
        from torch.cuda.amp import autocast

        ctx = autocast
        with autocast():
            pass
        """)
    assert "from torch.cuda.amp import autocast\n" in out
    assert 'with torch.amp.autocast("cuda"):' in out


def test_clip_grad_import_renamed() -> None:
    assert fixed(ClipGradNotInplaceName, """\
        from torch.nn.utils import clip_grad_norm

        def step(model):
            clip_grad_norm(model.parameters(), 1.0)
            clip_grad_norm(model.parameters(), 2.0)
        """) == textwrap.dedent("""\
        from torch.nn.utils import clip_grad_norm_

        def step(model):
            clip_grad_norm_(model.parameters(), 1.0)
            clip_grad_norm_(model.parameters(), 2.0)
        """)


@pytest.mark.parametrize(("call", "expected"), [
    ("torch.cuda.LongTensor([1, 2])", 'torch.tensor([1, 2], dtype=torch.int64, device="cuda")'),
    ("torch.HalfTensor((1.0,))", "torch.tensor((1.0,), dtype=torch.float16)"),
    ("torch.ByteTensor([0])", "torch.tensor([0], dtype=torch.uint8)"),
])
def test_legacy_types(call: str, expected: str) -> None:
    assert fixed(LegacyTensorType, f"import torch\nx = {call}\n") == f"import torch\nx = {expected}\n"


def test_legacy_type_import_removed() -> None:
    assert fixed(LegacyTensorType, """\
        from torch import FloatTensor, LongTensor

        x = FloatTensor([1.0])
        y = LongTensor(3)
        """) == textwrap.dedent("""\
        from torch import LongTensor
        import torch

        x = torch.tensor([1.0], dtype=torch.float32)
        y = LongTensor(3)
        """)


def test_load_fixes_compose_in_signature_order() -> None:
    rules = [LoadWithoutWeightsOnly, LoadWithoutMapLocation]
    source = SourceFile("example.py", textwrap.dedent("""\
        import torch

        state = torch.load(path)
        ckpt = torch.load(
            path,  # the file
        )
        """))
    outcome = fix_source(source, FileSettings.for_rules(rules, {"TL601", "TL602"}), unsafe=True)
    assert outcome.source.text == textwrap.dedent("""\
        import torch

        state = torch.load(path, map_location="cpu", weights_only=True)
        ckpt = torch.load(
            path,  # the file
            map_location="cpu",
            weights_only=True,
        )
        """)
    assert not lint_source(outcome.source, FileSettings.for_rules(rules, {"TL601", "TL602"})).diagnostics


def test_loss_dropped_argument_keeps_its_comment() -> None:
    assert fixed(LossReductionArgs, """\
        import torch.nn as nn

        loss = nn.CrossEntropyLoss(
            ignore_index=-1,
            size_average=False,  # sum over the batch
            reduce=True,
        )
        token = nn.NLLLoss(
            reduction="mean",
            reduce=False,  # one value per token
            size_average=False,
        )
        """) == textwrap.dedent("""\
        import torch.nn as nn

        loss = nn.CrossEntropyLoss(
            ignore_index=-1,
            reduction="sum",  # sum over the batch
        )
        token = nn.NLLLoss(
            reduction="none",  # one value per token
        )
        """)


@pytest.mark.parametrize(("args", "reduction"), [
    ("size_average=False, reduce=True", "sum"),
    ("size_average=True, reduce=False", "none"),
    ("size_average=False, reduce=False", "none"),
    ("size_average=True", "mean"),
    ("reduce=True", "mean"),
    ("size_average=None, reduce=True, reduction='sum'", "mean"),
    ("size_average=None, reduce=False", "none"),
])
def test_loss_legacy_semantics(args: str, reduction: str) -> None:
    text = fixed(LossReductionArgs, f"import torch.nn as nn\nloss = nn.MSELoss({args})\n")
    assert text == f'import torch.nn as nn\nloss = nn.MSELoss(reduction="{reduction}")\n'
