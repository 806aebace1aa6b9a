"""The deprecated-API rules TL706-TL717 and TL721: where they report, which torch targets
they speak to, when their fixes hold back, and how they tidy imports."""

from __future__ import annotations

import textwrap

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.diagnostic import Diagnostic
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _settings(code: str, target: tuple[int, int] | None = None) -> FileSettings:
    return FileSettings.for_rules([all_rules()[code]], {code},
                                  options=Options(target_torch=target))


def lint(code: str, text: str, target: tuple[int, int] | None = None) -> list[Diagnostic]:
    source = SourceFile("example.py", textwrap.dedent(text))
    return lint_source(source, _settings(code, target)).diagnostics


def fixed(code: str, text: str, target: tuple[int, int] | None = None, *,
          unsafe: bool = True) -> str:
    source = SourceFile("example.py", textwrap.dedent(text))
    outcome = fix_source(source, _settings(code, target), unsafe=unsafe)
    again = lint_source(outcome.source, _settings(code, target))
    assert all(d.fix is None or not (unsafe or d.fix.is_safe) for d in again.diagnostics)
    return outcome.source.text


def positions(diagnostics: list[Diagnostic]) -> list[tuple[int, int]]:
    return [(d.line, d.column) for d in diagnostics]


# ----------------------------------------------------------------- where findings are


def test_removed_function_reports_the_imported_name_not_its_calls() -> None:
    found = lint("TL706", """\
        import torch
        from torch import nn, solve as old_solve

        x = old_solve(b, A)
        y = torch.solve(b, A)
        """)
    assert positions(found) == [(2, 23), (5, 5)]
    assert found[0].message.startswith("torch.solve was removed in torch 1.12")


def test_removed_function_reports_module_level_alias_calls() -> None:
    found = lint("TL706", """\
        import torch

        eig = torch.eig
        values = eig(A)
        """)
    assert positions(found) == [(4, 10)]


@pytest.mark.parametrize(("code", "text"), [
    ("TL721", "import torch.nn.functional as F\nACT = F.tanh\ny = ACT(x)\n"),
    ("TL714", "import torch.nn.functional as F\nup = F.upsample\ny = up(x, scale_factor=2)\n"),
    ("TL708", "import torch\nnorm = torch.norm\nn = norm(x)\n"),
])
def test_a_call_through_an_assigned_variable_is_not_reported(code: str, text: str) -> None:
    assert lint(code, text) == []
    # the API called directly is
    direct = text.split("\n")[1].split(" = ", 1)[1]
    assert len(lint(code, text.split("\n")[0] + f"\ny = {direct}(x)\n")) == 1


@pytest.mark.parametrize("guard", [
    "if hasattr(torch, 'linalg'):\n    pass\nelse:\n    {call}\n",
    "if not hasattr(torch.linalg, 'eigh'):\n    {call}\n",
    "try:\n    {call}\nexcept (ValueError, AttributeError):\n    pass\n",
    "try:\n    pass\nexcept RuntimeError:\n    {call}\n",
    "try:\n    {call}\nexcept:\n    pass\n",
    "try:\n    {call}\nexcept torch.linalg.LinAlgError:\n    pass\nexcept Exception:\n    pass\n",
])
def test_removed_function_silent_in_compatibility_code(guard: str) -> None:
    text = "import torch\n" + guard.format(call="torch.symeig(A)")
    assert lint("TL706", text) == []


@pytest.mark.parametrize("guard", [
    "if hasattr(np, 'linalg'):\n    {call}\n",
    "try:\n    {call}\nexcept ValueError:\n    pass\n",
    "try:\n    pass\nexcept AttributeError:\n    pass\nelse:\n    {call}\n",
    "try:\n    pass\nexcept AttributeError:\n    pass\nfinally:\n    {call}\n",
    "if hasattr(torch, 'linalg'):\n    pass\n{call}\n",
])
def test_removed_function_reported_outside_compatibility_code(guard: str) -> None:
    text = "import numpy as np\nimport torch\n" + guard.format(call="torch.symeig(A)")
    assert len(lint("TL706", text)) == 1


def test_bare_decorator_reported_at_the_decorator_expression() -> None:
    found = lint("TL717", """\
        import torch

        class F(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_bwd
            def backward(ctx, g):
                return g
        """)
    assert positions(found) == [(5, 6)]


def test_calls_reported_at_the_call() -> None:
    found = lint("TL708", "import torch\nn = 1 + torch.norm(x, 2)\n")
    assert positions(found) == [(2, 9)]


# ----------------------------------------------------------------- torch targets


@pytest.mark.parametrize(("code", "text", "silent_for", "reported_for"), [
    ("TL706", "import torch\ntorch.solve(b, A)\n", (1, 8), (1, 9)),
    ("TL707", "import torch\ntorch.lu(A)\n", (1, 12), (1, 13)),
    ("TL708", "import torch\ntorch.norm(x)\n", (1, 6), (1, 7)),
    ("TL709", "import torch\ntorch.nn.utils.weight_norm(m)\n", (2, 0), (2, 1)),
    ("TL710", "import torch\ntorch.nn.utils.spectral_norm(m)\n", (1, 8), (1, 9)),
    ("TL711", "import torch\ntorch.testing.assert_allclose(a, b)\n", (1, 11), (1, 12)),
    ("TL712", "import functorch\nfunctorch.vmap(f)\n", (1, 13), (2, 0)),
    ("TL713", "import torch\ntorch.backends.cuda.sdp_kernel()\n", (2, 2), (2, 3)),
    ("TL716", "import torch\ntorch.set_default_tensor_type(t)\n", (2, 0), (2, 1)),
    ("TL717", "import torch\ntorch.cpu.amp.autocast()\n", (2, 3), (2, 4)),
])
def test_rules_speak_from_the_release_that_deprecated_the_api(
        code: str, text: str, silent_for: tuple[int, int],
        reported_for: tuple[int, int]) -> None:
    assert lint(code, text, silent_for) == []
    assert len(lint(code, text, reported_for)) == 1
    assert len(lint(code, text)) == 1  # an unknown target is the newest


@pytest.mark.parametrize(("code", "text", "without_fix", "with_fix"), [
    # torch.norm is deprecated from 1.7, vector_norm arrives in 1.9
    ("TL708", "import torch\nn = torch.norm(x, 2)\n", (1, 8), (1, 9)),
    # linalg.cholesky(A, upper=True) is offered from 1.11
    ("TL707", "import torch\nU = torch.cholesky(A, upper=True)\n", (1, 10), (1, 11)),
    # torch.qr: linalg.qr is there from 1.8
    ("TL707", "import torch\nQ, R = torch.qr(A)\n", None, (1, 9)),
    # torch.cpu.amp.autocast: torch.amp.autocast from 1.12, deprecated only from 2.4
    ("TL717", "import torch\nwith torch.cpu.amp.autocast():\n    pass\n", None, (2, 4)),
    # set_default_device arrives in 2.0: the CUDA form needs it
    ("TL716", "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n", None,
     (2, 1)),
])
def test_fix_never_emits_an_api_newer_than_the_target(
        code: str, text: str, without_fix: tuple[int, int] | None,
        with_fix: tuple[int, int]) -> None:
    if without_fix is not None:
        (finding,) = lint(code, text, without_fix)
        assert finding.fix is None
    (finding,) = lint(code, text, with_fix)
    assert finding.fix is not None


@pytest.mark.parametrize(("code", "before"), [
    ("TL706", (1, 9)), ("TL707", (1, 7)), ("TL708", (1, 7)), ("TL709", (2, 1)),
    ("TL710", (1, 9)), ("TL711", (1, 12)), ("TL712", (2, 0)), ("TL713", (2, 3)),
    ("TL716", (2, 1)), ("TL717", (2, 4)),
])
def test_the_engine_skips_a_rule_for_a_target_older_than_its_apis(
        code: str, before: tuple[int, int]) -> None:
    releases = all_rules()[code].applies_to
    assert releases.since == before and releases.until is None
    assert not releases.includes((before[0], before[1] - 1) if before[1] else (1, 13))
    assert releases.includes(before) and releases.includes(None)
    assert "## Torch releases" in all_rules()[code].doc()


@pytest.mark.parametrize(("code", "text", "needs"), [
    ("TL708", "import torch\nn = torch.norm(x, 2)\n", (1, 9)),
    ("TL712", "import functorch\ng = functorch.vmap(f)\n", (2, 0)),
    ("TL713", "import torch\nwith torch.backends.cuda.sdp_kernel(enable_math=True):\n"
              "    pass\n", (2, 3)),
    ("TL717", "import torch\nwith torch.cpu.amp.autocast():\n    pass\n", (1, 12)),
    ("TL717", "import torch\n@torch.cuda.amp.custom_fwd\ndef f(x):\n    return x\n",
     (2, 4)),
])
def test_with_no_target_a_current_torch_is_assumed_for_the_fix(
        code: str, text: str, needs: tuple[int, int]) -> None:
    (unknown,) = lint(code, text)
    assert unknown.fix is not None and unknown.fix.is_safe
    (new_enough,) = lint(code, text, max(needs, all_rules()[code].applies_to.since or needs))
    assert new_enough.fix is not None and new_enough.fix.is_safe


@pytest.mark.parametrize(("code", "text"), [
    ("TL714", "import torch.nn.functional as F\ny = F.upsample(x, scale_factor=2)\n"),
    ("TL721", "import torch.nn.functional as F\ny = F.sigmoid(x)\n"),
    ("TL716", "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n"),
])
def test_with_no_target_a_fix_as_old_as_every_release_stays_safe(code: str, text: str) -> None:
    (finding,) = lint(code, text)
    assert finding.fix is not None and finding.fix.is_safe


# ----------------------------------------------------------------- fixes and imports


def test_functorch_module_import_removed_when_every_use_is_fixed() -> None:
    assert fixed("TL712", """\
        import torch
        import functorch

        def f(x):
            return functorch.vmap(torch.sin)(x), functorch.grad(torch.sin)(x[0])
        """) == textwrap.dedent("""\
        import torch

        def f(x):
            return torch.func.vmap(torch.sin)(x), torch.func.grad(torch.sin)(x[0])
        """)


def test_functorch_module_import_kept_for_other_uses() -> None:
    assert fixed("TL712", """\
        import torch
        import functorch

        model, params = functorch.make_functional(net)
        out = functorch.vmap(torch.sin)(x)
        """) == textwrap.dedent("""\
        import torch
        import functorch

        model, params = functorch.make_functional(net)
        out = torch.func.vmap(torch.sin)(x)
        """)


def test_functorch_without_torch_import_adds_it() -> None:
    assert fixed("TL712", """\
        import functorch

        jac = functorch.jacrev(f)(x)
        """) == textwrap.dedent("""\
        import torch

        jac = torch.func.jacrev(f)(x)
        """)


def test_functorch_from_import_with_a_name_of_another_api_keeps_it() -> None:
    assert fixed("TL712", """\
        import torch
        from functorch import make_functional, vmap

        out = vmap(f)(x)
        model = make_functional(net)
        """) == textwrap.dedent("""\
        import torch
        from functorch import make_functional

        out = torch.func.vmap(f)(x)
        model = make_functional(net)
        """)


def test_sdp_kernel_fix_reuses_names_already_imported() -> None:
    assert fixed("TL713", """\
        import torch
        from torch.nn.attention import sdpa_kernel

        with torch.backends.cuda.sdp_kernel(enable_math=False, enable_cudnn=False):
            pass
        with sdpa_kernel([]):
            pass
        """) == textwrap.dedent("""\
        import torch
        from torch.nn.attention import sdpa_kernel
        from torch.nn.attention import SDPBackend

        with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]):
            pass
        with sdpa_kernel([]):
            pass
        """)


def test_sdp_kernel_no_fix_when_the_new_name_means_something_else() -> None:
    (finding,) = lint("TL713", """\
        import torch

        def sdpa_kernel(backends):
            return backends

        with torch.backends.cuda.sdp_kernel(enable_flash=False):
            pass
        """)
    assert finding.fix is None


def test_range_fix_is_unsafe_without_dtype() -> None:
    (untyped,) = lint("TL715", "import torch\nr = torch.range(0, 4)\n")
    (typed,) = lint("TL715", "import torch\nr = torch.range(0, 4, dtype=torch.float32)\n")
    (none_dtype,) = lint("TL715", "import torch\nr = torch.range(0, 4, dtype=None)\n")
    assert untyped.fix is not None and not untyped.fix.is_safe
    assert typed.fix is not None and typed.fix.is_safe
    assert none_dtype.fix is not None and not none_dtype.fix.is_safe


def test_default_tensor_type_cuda_form_adds_the_device_line() -> None:
    assert fixed("TL716", """\
        import torch

        def setup():
            torch.set_default_tensor_type('torch.cuda.DoubleTensor')
        """) == textwrap.dedent("""\
        import torch

        def setup():
            torch.set_default_dtype(torch.float64)
            torch.set_default_device("cuda")
        """)


def test_default_tensor_type_no_safe_fix_beside_a_device_setter() -> None:
    (finding,) = lint("TL716", """\
        import torch
        torch.set_default_tensor_type(torch.FloatTensor)
        torch.set_default_device("cpu")
        """)
    assert finding.fix is None


def test_norm_fix_keeps_argument_places_and_renames_p() -> None:
    assert fixed("TL708", """\
        import torch
        a = torch.norm(x, 2, (0, 1), True, dtype=torch.float64)
        b = torch.norm(input=x, p=-1, dim=0)
        c = torch.norm(x, dim=[1, 2], p="nuc", keepdim=True)
        """) == textwrap.dedent("""\
        import torch
        a = torch.linalg.vector_norm(x, 2, (0, 1), True, dtype=torch.float64)
        b = torch.linalg.vector_norm(input=x, ord=-1, dim=0)
        c = torch.linalg.matrix_norm(x, dim=[1, 2], ord="nuc", keepdim=True)
        """)


@pytest.mark.parametrize("call", [
    "torch.norm(x, p)", "torch.norm(x, 2, dim)", "torch.norm(x, 2, 1, False, None)",
    "torch.norm(x, 'fro', (0, 1, 2))", "torch.norm(x, 'nuc', 1)", "torch.norm(x, 'nuc')",
    "torch.norm(x, p=None)", "torch.norm(*args)", "torch.norm(x, 2, 1, False, out=y)",
    "torch.norm(x, 'inf')", "torch.norm(x, np.inf)", "torch.norm(x, float(s))",
])
def test_norm_without_an_exact_rewrite_has_no_fix(call: str) -> None:
    (finding,) = lint("TL708", f"import numpy as np\nimport torch\nn = {call}\n")
    assert finding.fix is None


@pytest.mark.parametrize(("call", "fix"), [
    ("torch.lu_solve(b, LU, pivots)", "torch.linalg.lu_solve(LU, pivots, b)"),
    ("torch.lu_solve(self.b, fact.LU, fact.pivots)",
     "torch.linalg.lu_solve(fact.LU, fact.pivots, self.b)"),
    ("torch.lu_solve(b(), LU, pivots)", None),
    ("torch.lu_solve(b, *lu)", None),
    ("torch.lu_solve(b, LU_data=LU, LU_pivots=p)", None),
    ("torch.chain_matmul(a, b)", "torch.linalg.multi_dot([a, b])"),
    ("torch.chain_matmul(a)", None),
    ("torch.chain_matmul(a, *rest)", None),
    ("torch.qr(A, some=flag)", None),
    ("torch.qr(input=A, some=False)", 'torch.linalg.qr(A, mode="complete")'),
    ("torch.cholesky(A, upper=True, out=U)", "torch.linalg.cholesky(A, out=U, upper=True)"),
    ("torch.cholesky(A, out=L)", "torch.linalg.cholesky(A, out=L)"),
    ("torch.lu(A, get_infos=flag)", None),
    ("torch.svd(A)", None),
])
def test_table_a_rewrites(call: str, fix: str | None) -> None:
    text = f"import torch\nr = {call}\n"
    if fix is None:
        (finding,) = lint("TL707", text)
        assert finding.fix is None
    else:
        assert fixed("TL707", text) == f"import torch\nr = {fix}\n"


def test_upsample_fix_keeps_a_trailing_comma_layout() -> None:
    assert fixed("TL714", """\
        import torch.nn as nn

        up = nn.UpsamplingBilinear2d(
            scale_factor=2,
        )
        """) == textwrap.dedent("""\
        import torch.nn as nn

        up = nn.Upsample(
            scale_factor=2,
            mode="bilinear",
            align_corners=True,
        )
        """)


def test_amp_decorator_import_removed_when_every_use_is_fixed() -> None:
    assert fixed("TL717", """\
        import torch
        from torch.cuda.amp import custom_bwd, custom_fwd

        class F(torch.autograd.Function):
            @staticmethod
            @custom_fwd
            def forward(ctx, x):
                return x

            @staticmethod
            @custom_bwd
            def backward(ctx, g):
                return g
        """) == textwrap.dedent("""\
        import torch

        class F(torch.autograd.Function):
            @staticmethod
            @torch.amp.custom_fwd(device_type="cuda")
            def forward(ctx, x):
                return x

            @staticmethod
            @torch.amp.custom_bwd(device_type="cuda")
            def backward(ctx, g):
                return g
        """)


def test_amp_import_kept_while_a_non_decorator_use_remains() -> None:
    text = fixed("TL717", """\
        import torch
        from torch.cuda.amp import custom_fwd

        wrap = custom_fwd

        @custom_fwd
        def forward(ctx, x):
            return x
        """)
    assert "from torch.cuda.amp import custom_fwd" in text
    assert '@torch.amp.custom_fwd(device_type="cuda")' in text


def test_sigmoid_fix_removes_functional_import_left_unused() -> None:
    assert fixed("TL721", """\
        import torch
        import torch.nn.functional as F

        y = F.sigmoid(x) + F.tanh(x)
        """) == textwrap.dedent("""\
        import torch

        y = torch.sigmoid(x) + torch.tanh(x)
        """)


@pytest.mark.parametrize("code", ["TL706", "TL707", "TL708", "TL709", "TL710", "TL711", "TL712",
                                  "TL713", "TL714", "TL715", "TL716", "TL717", "TL721"])
def test_tensor_methods_and_foreign_namesakes_are_silent(code: str) -> None:
    assert lint(code, """\
        import numpy as np
        import jax
        import torch

        def methods(x, y):
            return (x.qr(), x.svd(), x.norm(2), x.cholesky(), x.ger(y), x.lu_solve(y, y),
                    x.sigmoid(), x.tanh(), x.range(3), x.weight_norm(), x.upsample(2))

        def others(a, b, f, m):
            return (np.linalg.solve(a, b), np.linalg.norm(a), jax.vmap(f), jax.grad(f),
                    np.testing.assert_allclose(a, b), m.spectral_norm(a))
        """) == []
