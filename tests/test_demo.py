"""The bundled demo project shows a finding of every default rule."""

from __future__ import annotations

from pathlib import Path

from torchlint.config.discovery import discover
from torchlint.config.settings import Settings
from torchlint.registry import all_rules
from torchlint.run.outcome import Mode
from torchlint.run.runner import run

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"


def test_demo_has_a_finding_of_every_default_rule() -> None:
    settings = Settings(root=str(DEMO))
    files = discover([str(DEMO)], settings).files
    found = {d.code for outcome in run(files, settings, Mode()) for d in outcome.diagnostics}
    stable = {code for code, rule in all_rules().items() if rule.default and not rule.preview}
    assert stable - found == set()
    assert not {code for code in found if all_rules()[code].preview}
    # in preview mode the default rules of the preview tier report too
    preview = Settings(root=str(DEMO), preview=True)
    found = {d.code for outcome in run(files, preview, Mode()) for d in outcome.diagnostics}
    assert {code for code, rule in all_rules().items() if rule.default} - found == set()
