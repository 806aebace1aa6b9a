"""Safe fixes of TL719 and TL902 proven by execution.

TL902's cases run with real torch like every other family's. TL719's fix replaces
``pretrained=True`` by a weights enum member: it keeps behaviour when that member is exactly
the one torchvision's own legacy shim (``handle_legacy_interface``) hands to the builder.
Its cases run both versions with torchvision installed and every builder stubbed (the shim
runs for real; the stub records the arguments it receives instead of building a model and
downloading weights), then compare what the builder received. They run in a Python that has
torchvision (this one, ``TORCHLINT_TORCHVISION_PYTHON`` or ``/tmp/tv/bin/python``) and skip
when there is none. Run with: python -m pytest -m torch tests/test_fix_execution_api_ext.py
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from fix_execution_support import Case, Namespace, params, run_case, same

from torchlint.analysis.torchvision_weights import (
    BY_ARGUMENT,
    PRETRAINED,
    PRETRAINED_BACKBONE,
)
from torchlint.config.file_settings import FileSettings
from torchlint.fix.fixer import fix_source
from torchlint.registry import all_rules
from torchlint.source import SourceFile

pytestmark = pytest.mark.torch


def _same_functions(before: Namespace, after: Namespace) -> None:
    """The public names are the very objects the private ones were."""
    assert before["functions"] == after["functions"]
    assert all(a is b for a, b in zip(before["functions"], after["functions"]))
    assert before["functions"][0].__module__ == "torch.utils.data._utils.collate"
    same(before["result"], after["result"])


CASES: dict[str, list[Case]] = {
    "TL902": [
        Case("TL902", """
            import torch
            from torch.utils.data._utils.collate import default_collate, default_convert

            batch = [{"x": torch.ones(2), "y": 1, "name": "a"},
                     {"x": torch.zeros(2), "y": 2, "name": "b"}]
            result = [default_collate(batch), default_convert([torch.ones(2), (1, 2), {"k": [3]}])]
            functions = (default_collate, default_convert)
        """, _same_functions),
        Case("TL902", """
            import torch
            import torch.utils.data._utils.collate as private
            from torch.utils.data import DataLoader
            from torch.utils.data._utils import collate

            data = [(torch.full((2,), float(i)), i) for i in range(6)]
            loader = DataLoader(data, batch_size=4, collate_fn=collate.default_collate)
            result = [list(batch) for batch in loader]
            result.append(torch.utils.data._utils.collate.default_collate([(1, 2.0), (3, 4.0)]))
            functions = (private.default_convert, collate.default_collate)
        """, _same_functions),
        Case("TL902", """
            import torch
            from torch.utils.data._utils.collate import (
                collate,
                default_collate as base,  # the one the tests patch
            )

            result = base([torch.eye(2), torch.ones(2, 2)])
            functions = (base, collate)
        """, _same_functions),
    ],
    "TL719": [
        Case("TL719", """
            import torchvision

            result = torchvision.models.resnet50(pretrained=True)
        """),
        Case("TL719", """
            from torchvision import models

            result = [models.mobilenet_v3_large(pretrained=True),
                      models.vit_b_16(pretrained=False, image_size=224)]
        """),
        Case("TL719", """
            from torchvision.models.detection import fasterrcnn_resnet50_fpn, keypointrcnn_resnet50_fpn

            result = [fasterrcnn_resnet50_fpn(pretrained=True, pretrained_backbone=False),
                      fasterrcnn_resnet50_fpn(pretrained=False, pretrained_backbone=True,
                                              num_classes=3),
                      keypointrcnn_resnet50_fpn(pretrained=True)]
        """),
        Case("TL719", """
            import torchvision.models as tvm
            from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

            result = [resnet_fpn_backbone(backbone_name="resnext101_64x4d", pretrained=True),
                      tvm.segmentation.lraspp_mobilenet_v3_large(pretrained_backbone=True),
                      tvm.video.s3d(pretrained=True),
                      tvm.optical_flow.raft_small(pretrained=True)]
        """),
        Case("TL719", """
            from torchvision.models.alexnet import alexnet
            from torchvision.models.googlenet import googlenet

            result = [alexnet(pretrained=True), googlenet(pretrained=True, aux_logits=False)]
        """),
    ],
}


@pytest.mark.parametrize("case", params({k: v for k, v in CASES.items() if k != "TL719"}))
def test_fix_keeps_behaviour(case: Case) -> None:
    run_case(case)


def _fixed(case: Case) -> tuple[str, str]:
    """The case and its safe fix, checked as :func:`run_case` checks them."""
    rule = all_rules()[case.code]
    before = textwrap.dedent(case.source).lstrip()
    outcome = fix_source(SourceFile("case.py", before), FileSettings.for_rules([rule]), unsafe=False)
    after = outcome.source.text
    assert after != before, f"{case.code}: no safe fix applied to the case"
    assert not any(d.code == case.code and d.fix is not None and d.fix.is_safe
                   for d in outcome.result.diagnostics), after
    return before, after


def _run_with_torchvision(pairs: list[list[str]]) -> list[str]:
    """Run (label, before, after) programs with torchvision's builders stubbed, in a Python
    that has torchvision; the failures."""
    from torchvision_facts import torchvision_python

    python = torchvision_python()
    if python is None:
        pytest.skip("no Python with torchvision here (set TORCHLINT_TORCHVISION_PYTHON)")
    script = Path(__file__).resolve().parent / "torchvision_facts.py"
    done = subprocess.run([python, str(script), "--run-pairs"], input=json.dumps(pairs),
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", params({"TL719": CASES["TL719"]}))
def test_weights_are_what_the_legacy_shim_picks(case: Case) -> None:
    before, after = _fixed(case)
    assert "weights=" in after and "pretrained" not in after.replace("pretrained_", "")
    failures = _run_with_torchvision([["case", before, after]])
    assert not failures, "\n\n".join(failures)


def _table_cases() -> list[tuple[str, str]]:
    """Every builder of the table with every literal its fix handles, called through
    ``import torchvision`` and through a from-import."""
    calls = []
    for builder, (_, member) in PRETRAINED.items():
        argument = BY_ARGUMENT.get(builder, ("",))[0]
        if argument == "quantize":
            continue  # no fix: the weights depend on quantize=
        if argument == "backbone_name":
            for name in BY_ARGUMENT[builder][1]:
                calls.append((builder, f'backbone_name="{name}", pretrained=True'))
            calls.append((builder, 'backbone_name="resnet18", pretrained=False'))
            continue
        if member is not None:
            calls.append((builder, "pretrained=True"))
        calls.append((builder, "pretrained=False"))
    for builder in PRETRAINED_BACKBONE:
        calls += [(builder, "pretrained_backbone=True"), (builder, "pretrained_backbone=False")]
    return calls


def test_every_table_entry_matches_the_legacy_shim() -> None:
    """All of them in one run (some 540 fixes, each program run twice): failures are listed."""
    pairs = []
    for builder, arguments in _table_cases():
        module, _, name = builder.rpartition(".")
        for source in (f"import {module}\n\nresult = {builder}({arguments})\n",
                       f"from {module} import {name}\n\nresult = {name}({arguments})\n"):
            before, after = _fixed(Case("TL719", source))
            pairs.append([f"{builder}({arguments})", before, after])
    assert len(pairs) > 500
    failures = _run_with_torchvision(pairs)
    assert not failures, "\n\n".join(failures[:20])
