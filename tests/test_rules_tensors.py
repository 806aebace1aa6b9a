"""Unit checks for the tensor-operation rules beyond their fixtures."""

from __future__ import annotations

from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile


def _lint(code: str, text: str) -> list[tuple[int, int]]:
    rule = all_rules()[code]
    result = lint_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}))
    return [(d.line, d.column) for d in result.diagnostics]


def _fix(code: str, text: str) -> str:
    rule = all_rules()[code]
    return fix_source(SourceFile("t.py", text), FileSettings.for_rules([rule], {code}), unsafe=True).source.text


def test_view_after_permute_reports_at_the_call_and_fixes_only_the_name() -> None:
    text = "import torch\ny = torch.randn(2, 3).t().view(-1)\n"
    assert _lint("TL501", text) == [(2, 5)]
    assert _fix("TL501", text) == "import torch\ny = torch.randn(2, 3).t().reshape(-1)\n"


def test_view_with_a_dtype_is_silent() -> None:
    text = "import torch\nimport numpy as np\ndef f(x):\n    return x.T.view(np.float32)\n"
    assert _lint("TL501", text) == []


def test_data_parallel_needs_torch() -> None:
    assert _lint("TL801", "from mylib import DataParallel\nDataParallel(1)\n") == []
    assert _lint("TL801", "import torch.nn.parallel as P\nP.DataParallel(1)\nloss.backward()\n"
                 ) == [(2, 1)]


def test_adam_from_import_gets_an_adamw_import_and_loses_the_unused_adam() -> None:
    text = "from torch.optim import Adam\nopt = Adam(ps, weight_decay=0.1)\n"
    assert _fix("TL208", text) == (
        "from torch.optim import AdamW\nopt = AdamW(ps, weight_decay=0.1)\n")


def test_adam_import_stays_while_an_unflagged_use_remains() -> None:
    text = ("from torch.optim import Adam, SGD\n"
            "a = Adam(ps, weight_decay=0.1)\nb = Adam(ps)\n")
    assert _fix("TL208", text) == (
        "from torch.optim import Adam, SGD\nfrom torch.optim import AdamW\n"
        "a = AdamW(ps, weight_decay=0.1)\nb = Adam(ps)\n")


def test_sqrt_fix_keeps_keywords() -> None:
    text = "import torch\nd = torch.sqrt(torch.sum(x ** 2, dim=1))\n"
    assert _fix("TL206", text) == "import torch\nd = torch.linalg.vector_norm(x, dim=1)\n"


def test_expand_fix_is_idempotent() -> None:
    text = "def f(x):\n    y = x.expand(3, 4)\n    y[0] = 1\n    y.add_(1)\n    return y\n"
    fixed = _fix("TL207", text)
    assert fixed.count(".clone()") == 1
    assert _lint("TL207", fixed) == []


def test_data_assignment_target_is_silent() -> None:
    text = "def f(m, v):\n    for p in m.parameters():\n        p.data = v\n"
    assert _lint("TL210", text) == []


def test_data_parallel_alias_and_subclass() -> None:
    text = ("import torch.nn as nn\nDP = nn.DataParallel\n\n"
            "class Mine(nn.DataParallel):\n    pass\n\n"
            "def f(m, DP2=None):\n    return DP(m), Mine(m), DP2(m)\n\nloss.backward()\n")
    assert _lint("TL801", text) == [(8, 12), (8, 19)]


def test_view_after_narrow_function_uses_its_dim_argument() -> None:
    text = "import torch\ndef f(x):\n    return torch.narrow(x, 0, 0, 2).view(-1)\n"
    assert _lint("TL501", text) == []
    assert _lint("TL501", text.replace("x, 0, 0", "x, 1, 0")) == [(3, 12)]


def test_view_of_self_attribute_named_t_is_silent() -> None:
    text = "class A:\n    def f(self):\n        return self.T.view(-1), self.t().view(-1)\n"
    assert _lint("TL501", text) == []


def test_adam_partial_fixes_the_reference() -> None:
    text = ("import functools\nimport torch\n"
            "make = functools.partial(torch.optim.Adam, weight_decay=1e-4)\n")
    assert _fix("TL208", text).endswith(
        "make = functools.partial(torch.optim.AdamW, weight_decay=1e-4)\n")


def test_adam_weight_decay_bound_to_zero_is_silent() -> None:
    text = "import torch\ndef f(ps):\n    wd = 0\n    return torch.optim.Adam(ps, weight_decay=wd)\n"
    assert _lint("TL208", text) == []


def test_zero_grad_kept_when_grads_are_accumulated_by_hand() -> None:
    text = ("def step(model, opt, grads):\n"
            "    for p, g in zip(model.parameters(), grads):\n        p.grad += g\n"
            "    opt.step()\n    opt.zero_grad(set_to_none=False)\n")
    assert _lint("TL211", text) == []


def test_sqrt_of_bound_sum_of_squares_is_reported_without_fix() -> None:
    text = "import torch\ndef f(d):\n    s = (d ** 2).sum(-1)\n    return s.sqrt()\n"
    assert _lint("TL206", text) == [(4, 12)]
    assert _fix("TL206", text) == text


def test_view_after_permute_reads_the_sizes_an_unpacking_named() -> None:
    text = (
        "import torch\n\n\ndef tokens(x):\n    b, c, h, w = x.shape\n"
        "    y = x.permute(0, 2, 3, 1)\n    return y.view(b, h, w * c)\n"
    )
    assert _lint("TL501", text) == [(7, 12)]
    assert _lint("TL501", text.replace("view(b, h, w * c)", "view(b, h * w, c)")) == []
    # a size name that is not the unpacked one, or a shape of another tensor: unknown
    assert _lint("TL501", text.replace("view(b, h, w * c)", "view(b, h, w * k)")) == []
    assert _lint("TL501", text.replace("= x.shape", "= z.shape")) == []
