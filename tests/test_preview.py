"""The preview tier: rules (or behaviours) not yet stable run only in preview mode."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint import registry
from torchlint.cli import main
from torchlint.config.loading import load_config
from torchlint.config.settings import Selection, Settings
from torchlint.registry import CatalogEntry


@pytest.fixture
def preview_tl201(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend TL201 (a default rule) and TL306 (opt-in) are in preview."""
    catalog = dict(registry.rule_catalog())
    catalog["TL201"] = catalog["TL201"]._replace(preview=True)
    catalog["TL306"] = catalog["TL306"]._replace(preview=True)
    monkeypatch.setattr(registry, "rule_catalog", lambda: catalog)
    monkeypatch.setattr("torchlint.config.settings.rule_catalog", lambda: catalog)
    monkeypatch.setattr("torchlint.config.selectors.rule_catalog", lambda: catalog)


def test_preview_rules_run_only_in_preview_mode(preview_tl201: None) -> None:
    stable = Settings()
    assert "TL201" not in stable.enabled_codes() and "TL202" in stable.enabled_codes()
    assert "TL201" in replace(stable, preview=True).enabled_codes()
    # an opt-in preview rule needs both preview mode and a selection
    assert "TL306" not in replace(stable, preview=True).enabled_codes()
    assert "TL306" in replace(stable, preview=True, select=("ALL",)).enabled_codes()
    named = replace(stable, selections=(Selection(select=("TL306",)),))
    assert "TL306" not in named.enabled_codes()
    assert named.selected_preview_codes() == ["TL306"]
    assert replace(named, preview=True).selected_preview_codes() == []


def test_preview_reaches_the_rules_options() -> None:
    assert Settings().for_file("a.py").options.preview is False
    on = Settings(preview=True).for_file("a.py")
    assert on.options.preview is True
    assert on.fingerprint != Settings().for_file("a.py").fingerprint


def test_preview_from_the_configuration(tmp_path: Path) -> None:
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.torchlint]\npreview = true\n")
    assert load_config(config).preview is True
    config.write_text('[tool.torchlint]\npreview = "yes"\n')
    with pytest.raises(Exception, match="'preview' must be true or false"):
        load_config(config)


def test_cli_warns_about_a_named_preview_rule(preview_tl201: None, tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    result = CliRunner().invoke(main, ["check", "--no-cache", "--select", "TL306",
                                       str(tmp_path / "a.py")])
    assert "TL306 is a preview rule" in result.stderr
    quiet = CliRunner().invoke(main, ["check", "--no-cache", "--preview", "--select",
                                      "TL306", str(tmp_path / "a.py")])
    assert "preview rule" not in quiet.stderr


def test_catalog_records_the_tier() -> None:
    catalog = registry.rule_catalog()
    stable, preview = catalog["TL704"], catalog["TL304"]
    assert isinstance(stable, CatalogEntry) and stable.preview is False and stable.default
    assert isinstance(preview, CatalogEntry) and preview.preview is True and preview.default
