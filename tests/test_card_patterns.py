"""The eight classic mistakes the project was created for, in one training script: plain
`torchlint check` (default tier, no --preview) reports every one of them."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from torchlint.cli import main

SCRIPT = Path(__file__).resolve().parent / "data" / "card_patterns.py"

# line -> the rule that must report on it
EXPECTED = {
    10: "TL106",  # conv bias in front of BatchNorm
    12: "TL101",  # layers kept in a plain list
    18: "TL501",  # .view merging dimensions .permute moved apart, from the unpacked shape
    22: "TL405",  # F.dropout still drops at test time
    30: "TL301",  # a CPU tensor moved to the GPU in the training loop
    36: "TL201",  # the loss appended with its autograd graph
    40: "TL402",  # evaluation without model.eval()
    51: "TL801",  # DataParallel in training code
}


def test_plain_check_reports_the_eight_classic_mistakes(tmp_path: Path) -> None:
    # a training script of its own project (under tests/ it would be taken for test code)
    script = tmp_path / "train.py"
    script.write_bytes(SCRIPT.read_bytes())
    result = CliRunner().invoke(main, ["check", "--no-cache", "--isolated", str(script)])
    found = {(int(line.split(":")[1]), line.split()[1]) for line in result.stdout.splitlines()
             if line.startswith(str(script))}
    missing = {(line, code) for line, code in EXPECTED.items() if (line, code) not in found}
    assert not missing, f"default run misses {sorted(missing)}; it found {sorted(found)}"
    # evaluation without no_grad is reported too, on the same function
    assert any(code == "TL401" for _, code in found)
