"""Reading settings: ``[tool.torchlint]`` in the nearest pyproject.toml, then the command
line on top."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from torchlint.config.errors import ConfigError
from torchlint.config.selectors import validate_selectors
from torchlint.config.settings import Settings

if TYPE_CHECKING:
    from types import ModuleType

KNOWN_KEYS = ("select", "ignore", "extend-select", "per-file-ignores", "exclude",
              "extend-exclude", "unfixable", "extend-module-bases", "extend-model-names",
              "preview")


def _toml() -> ModuleType:
    """tomllib, imported when a pyproject.toml is actually read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml with a [tool.torchlint] table, from ``start`` upwards."""
    current = start.resolve()
    if current.is_file() or not current.exists():
        current = current.parent
    for directory in (current, *current.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            tomllib = _toml()
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
                if "torchlint" in _safe_read(candidate):
                    raise ConfigError(f"{candidate}: cannot read: {exc}") from None
                continue
            if "torchlint" in data.get("tool", {}):
                return candidate
    return None


def _safe_read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _string_list(value: object, key: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: '{key}' must be a list of strings")
    return tuple(value)


def load_config(path: Path) -> Settings:
    where = f"{path} [tool.torchlint]"
    tomllib = _toml()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    table = data.get("tool", {}).get("torchlint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table")
    for key in table:
        if key not in KNOWN_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r} (known: {', '.join(KNOWN_KEYS)})")
    settings = Settings(root=str(path.parent), config_file=str(path))
    values: dict[str, object] = {}
    for key in ("select", "ignore", "extend-select", "unfixable"):
        if key in table:
            codes = _string_list(table[key], key, where)
            validate_selectors(codes, f"{where} '{key}'")
            values[key.replace("-", "_")] = codes
    for key in ("exclude", "extend-exclude", "extend-module-bases", "extend-model-names"):
        if key in table:
            values[key.replace("-", "_")] = _string_list(table[key], key, where)
    if "preview" in table:
        if not isinstance(table["preview"], bool):
            raise ConfigError(f"{where}: 'preview' must be true or false")
        values["preview"] = table["preview"]
    if "per-file-ignores" in table:
        raw = table["per-file-ignores"]
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: 'per-file-ignores' must be a table of glob = [codes]")
        pairs = []
        for pattern, codes in raw.items():
            parsed = _string_list(codes, f"per-file-ignores.{pattern}", where)
            validate_selectors(parsed, f"{where} 'per-file-ignores'")
            pairs.append((pattern, parsed))
        values["per_file_ignores"] = tuple(pairs)
    return replace(settings, **values)  # type: ignore[arg-type]


def resolve_settings(
    start: Path,
    *,
    config: Path | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    preview: bool | None = None,
) -> Settings:
    """File settings (explicit ``config`` or nearest), then CLI options on top."""
    for name, codes in (("--select", select or ()), ("--ignore", ignore),
                        ("--extend-select", extend_select)):
        validate_selectors(codes, name)
    path = config if config is not None else find_config(start)
    settings = load_config(path) if path is not None else Settings(root=str(Path.cwd()))
    return replace(
        settings,
        cli_select=tuple(select) if select is not None else None,
        cli_extend_select=tuple(extend_select),
        cli_ignore=tuple(ignore),
        preview=settings.preview if preview is None else preview,
    )
