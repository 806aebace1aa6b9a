"""The harness that proves safe fixes by execution: run a small program before and after
the fix with real torch on the CPU and compare what it leaves in ``result``.

Each ``tests/test_fix_execution*.py`` module holds a ``CASES`` table (rule code -> cases)
and runs it with :func:`run_case`; :func:`all_case_codes` gathers the codes of every such
module, so a safe fix that no module executes is caught.
"""

from __future__ import annotations

import importlib.util
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from torchlint.analysis.options import Options
from torchlint.config.file_settings import FileSettings
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

torch = pytest.importorskip("torch")

Namespace = dict


@dataclass
class Case:
    code: str
    source: str
    check: Callable[[Namespace, Namespace], None] | None = None  # None: results are the same
    cpu: bool = False  # rewrite "cuda" to "cpu" in both versions
    before_raises: type[BaseException] | None = None


def same(a: object, b: object) -> None:
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor)
        assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
        assert a.requires_grad == b.requires_grad
        assert torch.equal(a.detach(), b.detach()) or torch.allclose(
            a.detach(), b.detach(), equal_nan=True)
    elif isinstance(a, torch.nn.Module):
        assert isinstance(b, torch.nn.Module)
        pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
        assert pa.keys() == pb.keys()
        for name in pa:
            same(pa[name].detach(), pb[name].detach())
        assert a.state_dict().keys() == b.state_dict().keys()
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()  # type: ignore[union-attr]
        for key in a:
            same(a[key], b[key])  # type: ignore[index]
    else:
        assert a == b


def params(cases: dict[str, list[Case]]) -> list:
    return [pytest.param(case, id=f"{code}-{i}") for code, cases_ in cases.items()
            for i, case in enumerate(cases_)]


def _to_cpu(text: str) -> str:
    return (text.replace('"cuda"', '"cpu"').replace("'cuda'", "'cpu'")
            .replace(".cuda()", ".cpu()").replace("torch.cuda.FloatTensor", "torch.FloatTensor"))


def _execute(text: str, raises: type[BaseException] | None = None) -> Namespace:
    namespace: Namespace = {"__name__": "__fix_case__"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if raises is not None:
            with pytest.raises(raises):
                exec(compile(text, "<case>", "exec"), namespace)
        else:
            exec(compile(text, "<case>", "exec"), namespace)
    return namespace


def run_case(case: Case) -> None:
    """Fix the case with safe fixes only, run both versions, compare."""
    rule = all_rules().get(case.code)
    if rule is None:
        pytest.skip(f"{case.code} is not in this version")
    before = textwrap.dedent(case.source).lstrip()
    # the fixes run on the installed torch: that is the release the code targets
    installed = tuple(int(part) for part in torch.__version__.split(".")[:2])
    options = Options(target_torch=installed)  # type: ignore[arg-type]
    outcome = fix_source(SourceFile("case.py", before),
                         FileSettings.for_rules([rule], options=options), unsafe=False)
    after = outcome.source.text
    assert after != before, f"{case.code}: no safe fix applied to the case"
    assert not any(d.code == case.code and d.fix is not None and d.fix.is_safe
                   for d in outcome.result.diagnostics), after
    if case.cpu:
        before, after = _to_cpu(before), _to_cpu(after)
    ns_before = _execute(before, case.before_raises)
    ns_after = _execute(after)
    if case.check is not None:
        case.check(ns_before, ns_after)
    else:
        same(ns_before["result"], ns_after["result"])


def all_case_codes() -> set[str]:
    """The rule codes every ``test_fix_execution*.py`` module of this folder has cases for."""
    codes: set[str] = set()
    for path in sorted(Path(__file__).parent.glob("test_fix_execution*.py")):
        spec = importlib.util.spec_from_file_location(f"_cases_{path.stem}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        codes |= set(module.CASES)
    return codes
