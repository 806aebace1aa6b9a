"""TL718, TL719, TL720 and TL902: the torchvision table against an installed torchvision,
how fixes spell the names they need, and the cases the fixtures cannot show (torch targets,
fixes withheld)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from torchlint.analysis.options import Options
from torchlint.analysis.torchvision_weights import (
    ALIASES,
    BY_ARGUMENT,
    ENUM_MODULES,
    PRETRAINED,
    PRETRAINED_BACKBONE,
    PRETRAINED_DEPRECATED_IN,
    SHADOWED_MODULES,
    TORCH_FOR_TORCHVISION,
    V2_TOIMAGE_SINCE,
)
from torchlint.config.file_settings import FileSettings
from torchlint.engine.lint import lint_source
from torchlint.fix.fixer import fix_source
from torchlint.rules.data.tl902_private_default_collate import PrivateDefaultCollate
from torchlint.rules.migration.tl718_checkpoint_without_use_reentrant import (
    CheckpointWithoutUseReentrant,
)
from torchlint.rules.migration.tl719_torchvision_pretrained import TorchvisionPretrained
from torchlint.rules.migration.tl720_v2_totensor import V2ToTensor
from torchlint.rules.migration.torchvision import from_import_with
from torchlint.source import SourceFile

DATA = Path(__file__).resolve().parent.parent / "torchlint" / "analysis" / "torchvision_weights.py"


def findings(rule: type, text: str, target: tuple[int, int] | None = None) -> list:
    source = SourceFile("example.py", textwrap.dedent(text))
    settings = FileSettings.for_rules([rule], options=Options(target_torch=target))
    return lint_source(source, settings).diagnostics


def fixed(rule: type, text: str, target: tuple[int, int] | None = None) -> str:
    source = SourceFile("example.py", textwrap.dedent(text))
    settings = FileSettings.for_rules([rule], options=Options(target_torch=target))
    outcome = fix_source(source, settings, unsafe=True)
    assert all(d.fix is None for d in lint_source(outcome.source, settings).diagnostics)
    return outcome.source.text


# ------------------------------------------------------------------ the table
def _installed_table() -> dict:
    """The facts of an installed torchvision, read by a Python that has it."""
    import ast
    import subprocess

    from torchvision_facts import torchvision_python

    python = torchvision_python()
    if python is None:
        pytest.skip("no Python with torchvision here (set TORCHLINT_TORCHVISION_PYTHON)")
    script = Path(__file__).resolve().parent / "torchvision_facts.py"
    done = subprocess.run([python, str(script), "--table"], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return ast.literal_eval(done.stdout)  # type: ignore[no-any-return]


def test_table_matches_the_installed_torchvision() -> None:
    """Every fact of the data module is what the installed torchvision does; for the release
    it was generated from, the module is exactly what the generator writes."""
    from torchvision_facts import render

    import torchlint.analysis.torchvision_weights as data

    table = _installed_table()
    assert len(table["pretrained"]) > 100 and table["backbone"]
    if table["version"] == data.TORCHVISION_VERSION:
        assert DATA.read_text(encoding="utf-8") == render(table), (
            "run: python tests/torchvision_facts.py > torchlint/analysis/torchvision_weights.py")
        return
    # another release: what the table says about the builders it knows must still hold
    for builder, entry in PRETRAINED.items():
        if builder in table["pretrained"]:
            assert table["pretrained"][builder] == entry, (table["version"], builder)
    for builder, entry in PRETRAINED_BACKBONE.items():
        if builder in table["backbone"]:
            assert table["backbone"][builder] == entry, (table["version"], builder)


def test_legacy_members_are_named_never_default() -> None:
    members = [m for _, m in PRETRAINED.values() if m is not None]
    members += [m for _, m in PRETRAINED_BACKBONE.values()]
    members += [m for _, values in BY_ARGUMENT.values() for _, m in values.values()]
    assert members and "DEFAULT" not in members
    assert PRETRAINED["torchvision.models.resnet50"] == ("ResNet50_Weights", "IMAGENET1K_V1")
    assert PRETRAINED["torchvision.models.vit_h_14"][1] is None  # pretrained=True raises


def test_table_is_consistent() -> None:
    assert set(ALIASES.values()) <= set(PRETRAINED)
    assert set(PRETRAINED_BACKBONE) <= set(PRETRAINED)
    enums = {e for e, _ in PRETRAINED.values() if e} | {e for e, _ in PRETRAINED_BACKBONE.values()}
    enums |= {e for _, values in BY_ARGUMENT.values() for e, _ in values.values()}
    assert enums <= set(ENUM_MODULES)
    assert all(modules[0].startswith("torchvision.models") for modules in ENUM_MODULES.values())
    assert "torchvision.models.alexnet" in SHADOWED_MODULES
    assert {argument for argument, _ in BY_ARGUMENT.values()} == {
        "quantize", "backbone_name", "pretrained"}
    assert PRETRAINED_DEPRECATED_IN == (0, 13) and V2_TOIMAGE_SINCE == (0, 16)
    assert TORCH_FOR_TORCHVISION[PRETRAINED_DEPRECATED_IN] == (1, 12)


# --------------------------------------------------------------- from-imports
@pytest.mark.parametrize(("statement", "add", "remove", "expected"), [
    ("from m import a", ["B"], (), "from m import a, B"),
    ("from m import a as x, b", ["B", "C"], (), "from m import a as x, b, B, C"),
    ("from m import a, b", ["B"], {"a"}, "from m import b, B"),
    ("from m import a, b", [], {"b"}, "from m import a"),
    ("from m import (\n    a,\n    b,\n)", ["B"], (), "from m import (\n    a,\n    b, B,\n)"),
    ("from m import (a, b)", ["B"], {"b"}, "from m import (a, B)"),
    ("from m import a", [], {"a"}, None),
])
def test_from_import_with(statement: str, add: list[str], remove: set[str],
                          expected: str | None) -> None:
    node = cst.parse_statement(statement + "\n").body[0]  # type: ignore[attr-defined]
    assert from_import_with(node, add, remove) == expected


# ----------------------------------------------------------------------- TL719
def test_pretrained_enum_spelled_through_the_builders_own_module() -> None:
    assert fixed(TorchvisionPretrained, """\
        import torchvision.models.resnet as R
        from torchvision.models import quantization as Q

        a = R.resnet50(pretrained=True)
        b = Q.resnet18(pretrained=False)
        """) == textwrap.dedent("""\
        import torchvision.models.resnet as R
        from torchvision.models import quantization as Q

        a = R.resnet50(weights=R.ResNet50_Weights.IMAGENET1K_V1)
        b = Q.resnet18(pretrained=False)
        """)


def test_pretrained_enum_already_imported_is_reused() -> None:
    assert fixed(TorchvisionPretrained, """\
        from torchvision.models import ResNet50_Weights, resnet50

        def build():
            return resnet50(pretrained=True)
        """) == textwrap.dedent("""\
        from torchvision.models import ResNet50_Weights, resnet50

        def build():
            return resnet50(weights=ResNet50_Weights.IMAGENET1K_V1)
        """)


def test_pretrained_enum_added_to_a_local_import() -> None:
    assert fixed(TorchvisionPretrained, """\
        def build():
            from torchvision.models.detection import retinanet_resnet50_fpn
            return retinanet_resnet50_fpn(pretrained=True)
        """) == textwrap.dedent("""\
        def build():
            from torchvision.models.detection import retinanet_resnet50_fpn, RetinaNet_ResNet50_FPN_Weights
            return retinanet_resnet50_fpn(weights=RetinaNet_ResNet50_FPN_Weights.COCO_V1)
        """)


def test_pretrained_no_fix_when_every_spelling_is_taken() -> None:
    text = """\
        from torchvision.models import resnet50
        ResNet50_Weights = None
        model = resnet50(pretrained=True)
        """
    (finding,) = findings(TorchvisionPretrained, text)
    assert finding.fix is None and finding.column == 18
    assert "weights=ResNet50_Weights.IMAGENET1K_V1" in finding.message


@pytest.mark.parametrize("call", [
    "tvm.resnet50(pretrained=flag)",
    "tvm.resnet50(pretrained=1)",
    "tvm.resnet50(True, pretrained=True)",
    "tvm.resnet50(pretrained=True, weights=None)",
    "tvm.resnet50(pretrained=True, **kwargs)",
    "tvm.quantization.resnet50(pretrained=False)",
    "tvm.vit_h_14(pretrained=True)",
    "tvm.detection.backbone_utils.resnet_fpn_backbone(backbone_name=name, pretrained=True)",
    'tvm.detection.backbone_utils.resnet_fpn_backbone("resnet50", pretrained=True)',
    "tvm.detection.keypointrcnn_resnet50_fpn(pretrained='legacy')",
])
def test_pretrained_reported_without_fix(call: str) -> None:
    (finding,) = findings(TorchvisionPretrained, f"import torchvision.models as tvm\nm = {call}\n")
    assert finding.code == "TL719" and finding.fix is None


def test_pretrained_false_fixed_even_without_weights() -> None:
    assert fixed(TorchvisionPretrained, "import torchvision\nm = torchvision.models.vit_h_14("
                 "pretrained=False)\n") == (
        "import torchvision\nm = torchvision.models.vit_h_14(weights=None)\n")


def test_pretrained_silent_for_targets_before_torchvision_0_13() -> None:
    text = "import torchvision\nm = torchvision.models.resnet18(pretrained=True)\n"
    assert findings(TorchvisionPretrained, text, target=(1, 11)) == []
    assert len(findings(TorchvisionPretrained, text, target=(1, 12))) == 1


def test_pretrained_not_a_builder() -> None:
    assert findings(TorchvisionPretrained, """\
        import torchvision.models.alexnet as A
        from torchvision import models
        a = A.alexnet(pretrained=True)
        b = models.get_weight(pretrained=True)
        c = models.resnet18(pretrained_backbone=True)
        """) == []


# ----------------------------------------------------------------------- TL718
def test_checkpoint_silent_for_targets_before_the_warning() -> None:
    text = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
    assert findings(CheckpointWithoutUseReentrant, text, target=(2, 0)) == []
    (finding,) = findings(CheckpointWithoutUseReentrant, text, target=(2, 1))
    assert (finding.line, finding.column) == (2, 5) and not finding.fix.is_safe


def test_checkpoint_fix_keeps_one_argument_per_line() -> None:
    assert fixed(CheckpointWithoutUseReentrant, """\
        import torch.utils.checkpoint

        y = torch.utils.checkpoint.checkpoint(
            block,  # the layer
            x,
        )
        """) == textwrap.dedent("""\
        import torch.utils.checkpoint

        y = torch.utils.checkpoint.checkpoint(
            block,  # the layer
            x,
            use_reentrant=False,
        )
        """)


# ----------------------------------------------------------------------- TL720
def test_totensor_fix_withheld_before_torchvision_0_16() -> None:
    text = "from torchvision.transforms import v2\nt = v2.ToTensor()\n"
    (finding,) = findings(V2ToTensor, text, target=(2, 0))
    assert finding.fix is None
    (finding,) = findings(V2ToTensor, text, target=(2, 1))
    assert finding.fix is not None and not finding.fix.is_safe
    assert findings(V2ToTensor, text, target=(1, 13)) == []  # no transforms.v2 yet
    assert findings(V2ToTensor, text)[0].fix is not None  # target unknown


def test_release_facts_come_from_torch_releases() -> None:
    """The rules read their releases from the shared table, whose torchvision entries are
    the torch releases the torchvision facts name."""
    from torchlint.analysis import torch_releases as releases

    assert CheckpointWithoutUseReentrant.applies_to.since == (2, 1)
    assert releases.CHECKPOINT_USE_REENTRANT.added == (1, 11)
    assert PrivateDefaultCollate.applies_to.since == (1, 11)
    assert TorchvisionPretrained.applies_to.since == TORCH_FOR_TORCHVISION[(0, 13)] == (1, 12)
    assert V2ToTensor.applies_to.since == TORCH_FOR_TORCHVISION[(0, 15)] == (2, 0)
    assert releases.TORCHVISION_V2_TO_TENSOR.replacement_added == (2, 1)
    for rule in (CheckpointWithoutUseReentrant, PrivateDefaultCollate, TorchvisionPretrained,
                 V2ToTensor):
        assert "## Torch releases" in rule.doc()


def test_totensor_imports_torch_and_v2_when_missing() -> None:
    assert fixed(V2ToTensor, """\
        import torch
        from torchvision.transforms.v2._deprecated import ToTensor

        t = ToTensor()
        """) == textwrap.dedent("""\
        import torch
        from torchvision.transforms import v2

        t = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
        """)


def test_totensor_no_fix_when_names_are_taken() -> None:
    text = """\
        from torchvision.transforms.v2._deprecated import ToTensor
        v2 = torch = None
        t = ToTensor()
        """
    (finding,) = findings(V2ToTensor, text)
    assert finding.fix is None


# ----------------------------------------------------------------------- TL902
def test_private_collate_silent_for_targets_without_the_public_name() -> None:
    text = "from torch.utils.data._utils.collate import default_collate\n"
    assert findings(PrivateDefaultCollate, text, target=(1, 10)) == []
    (finding,) = findings(PrivateDefaultCollate, text, target=(1, 11))
    assert (finding.line, finding.column) == (1, 45) and finding.fix.is_safe


def test_private_collate_aliased_local_import() -> None:
    assert fixed(PrivateDefaultCollate, """\
        def collate(batch):
            from torch.utils.data._utils.collate import default_collate as base, collate
            return base(batch)
        """) == textwrap.dedent("""\
        def collate(batch):
            from torch.utils.data import default_collate as base
            from torch.utils.data._utils.collate import collate
            return base(batch)
        """)


def test_private_collate_patched_or_fallback_is_left_alone() -> None:
    assert findings(PrivateDefaultCollate, """\
        import torch
        import torch.utils.data._utils.collate as C
        C.default_collate = my_collate
        del torch.utils.data._utils.collate.default_convert
        if hasattr(torch.utils.data, "default_collate"):
            from torch.utils.data import default_collate
        else:
            from torch.utils.data._utils.collate import default_collate
        fallback = torch.utils.data.dataloader.default_collate if old else C.default_convert
        """) == []
