"""``--show-settings`` (the settings one file gets, and where each came from) and
``--show-files`` (the files a run would check)."""

from __future__ import annotations

import os
from collections.abc import Iterable

import click

from torchlint.config.keys import KEYS
from torchlint.config.settings import DEFAULT_EXCLUDE, Settings
from torchlint.config.workspace import Workspace


def _toml(value: object) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return f'"{value[0]}.{value[1]}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f'"{value}"'


def _values(settings: Settings) -> dict[str, object]:
    """Each key's effective value."""
    layers = settings._layers()
    def collect(attribute: str) -> tuple[str, ...]:
        return tuple(c for layer in layers for c in getattr(layer, attribute))

    selects = [layer.select for layer in layers if layer.select is not None]
    fixables = [layer.fixable for layer in layers if layer.fixable is not None]
    return {
        "select": selects[-1] if selects else None,
        "extend-select": collect("extend_select"),
        "ignore": collect("ignore"),
        "fixable": fixables[-1] if fixables else None,
        "unfixable": collect("unfixable"),
        "extend-fixable": collect("extend_fixable"),
        "per-file-ignores": tuple(f"{p}: {', '.join(c)}" for p, c in settings.per_file_ignores),
        "exclude": "(the defaults)" if settings.exclude == DEFAULT_EXCLUDE else tuple(
            str(p) for p in settings.exclude),
        "extend-exclude": tuple(str(p) for p in settings.extend_exclude),
        "force-exclude": settings.force_exclude,
        "respect-gitignore": settings.respect_gitignore,
        "extend-module-bases": settings.extend_module_bases,
        "extend-model-names": settings.extend_model_names,
        "preview": settings.preview,
        "target-torch": settings.target_torch,
        "cache-dir": settings.cache_location(),
        "max-file-size": settings.max_file_size,
    }


def show_settings(path: str, workspace: Workspace) -> str:
    """The settings ``path`` is linted with, one key a line with where it came from."""
    settings = workspace.settings_for(path)
    lines = [f"Settings for {path}"]
    if settings.config_file:
        chain = " -> ".join(settings.extends)
        lines.append(f"  configuration: {settings.config_file}"
                     + (f" (extends {chain})" if chain else ""))
    elif workspace.isolated:
        lines.append("  configuration: none (--isolated)")
    else:
        lines.append("  configuration: none found (the defaults)")
    lines.append(f"  relative paths are resolved against: {settings.root}")
    values = _values(settings)
    width = max(len(k) for k in values)
    origins = dict(settings.origins)
    for key, value in values.items():
        origin = origins.get(key, "default")
        if key == "ignore" and "extend-ignore" in origins:  # both add to one list
            both = [origins[k] for k in ("ignore", "extend-ignore") if k in origins]
            origin = "; ".join(dict.fromkeys(s for o in both for s in o.split("; ")))
        shown = value if isinstance(value, str) and value.startswith("(") else _toml(value)
        lines.append(f"  {key:<{width}} = {shown}   # {origin}")
    if settings.target_torch is None and "target-torch" not in origins:
        lines.append("  (no torch requirement declared: rules assume the newest torch, and "
                     "fixes that need a recent one are unsafe)")
    file_settings = settings.for_file(path)
    lines.append(f"  enabled rules ({len(file_settings.codes)}): "
                 + ", ".join(sorted(file_settings.codes)))
    unfixable = sorted(file_settings.unfixable & file_settings.codes)
    if unfixable:
        lines.append(f"  rules never fixed: {', '.join(unfixable)}")
    preview = settings.selected_preview_codes()
    if preview:
        lines.append(f"  preview rules named but off without --preview: {', '.join(preview)}")
    assert set(values) <= set(KEYS)
    return "\n".join(lines)


def show_files(files: Iterable[str]) -> None:
    for path in files:
        click.echo(os.path.normpath(path))
