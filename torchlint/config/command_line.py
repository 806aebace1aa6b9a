"""The settings the command line gives: ``--config FILE`` or ``--config KEY=VALUE``,
``--isolated``, and the options that set configuration keys (``--select``,
``--per-file-ignores``, ``--target-torch``...), turned into a :class:`Workspace`.

An option given with an empty value (``--select ''``, as a CI variable that expanded to
nothing gives) is an error, never "no rules". Globs given on the command line are relative
to the current directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchlint.config.errors import ConfigError
from torchlint.config.files import override_layer
from torchlint.config.layers import Layer, options_layer
from torchlint.config.selectors import validate_selectors
from torchlint.config.workspace import Workspace

CODE_OPTIONS = ("select", "extend-select", "ignore", "extend-ignore", "fixable",
                "extend-fixable", "unfixable")
GLOB_OPTIONS = ("exclude", "extend-exclude")
FLAG_OPTIONS = ("preview", "force-exclude", "respect-gitignore")


@dataclass
class CommandLine:
    """What the options of ``torchlint check`` say about settings (None: not given)."""

    config: Sequence[str] = ()  # --config values: one file and/or KEY=VALUE assignments
    isolated: bool = False
    codes: Mapping[str, Sequence[Sequence[str]] | None] = field(default_factory=dict)
    globs: Mapping[str, Sequence[str] | None] = field(default_factory=dict)
    per_file_ignores: Sequence[str] | None = None
    extend_per_file_ignores: Sequence[str] | None = None
    flags: Mapping[str, bool | None] = field(default_factory=dict)
    target_torch: str | None = None
    honour_noqa: bool = True  # False: --ignore-noqa
    cwd: str = field(default_factory=os.getcwd)


def _codes(option: str, groups: Sequence[Sequence[str]]) -> tuple[str, ...]:
    codes = tuple(code for group in groups for code in group)
    if any(not group for group in groups):
        raise ConfigError(f"--{option} was given an empty value (no codes); name codes or "
                          "prefixes such as TL301 or TL3, or leave the option out")
    validate_selectors(codes, f"--{option}")
    return codes


def _pairs(option: str, values: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--per-file-ignores 'tests/*:TL401,TL402'`` (Ruff's PATTERN:CODES form)."""
    from torchlint.config.keys import KEYS

    table: dict[str, list[str]] = {}
    for value in values:
        pattern, sep, codes = value.rpartition(":")
        if not sep or not pattern.strip() or not codes.strip():
            raise ConfigError(f"--{option} {value!r}: expected PATTERN:CODES, e.g. "
                              "'tests/*:TL401,TL402'")
        table.setdefault(pattern.strip(), []).extend(
            c.strip() for c in codes.split(",") if c.strip())
    return KEYS["per-file-ignores"].parse(table, f"--{option}")  # type: ignore[return-value]


def split_config_values(values: Sequence[str]) -> tuple[Path | None, list[str]]:
    """``--config`` values: at most one existing file, the rest KEY=VALUE assignments."""
    file: Path | None = None
    assignments: list[str] = []
    for value in values:
        if not value.strip():
            raise ConfigError("--config was given an empty value; name a configuration "
                              "file or a 'key = value' setting")
        if os.path.isfile(value):
            if file is not None:
                raise ConfigError(f"--config names two files ({file} and {value}); give one "
                                  "file, and settings as --config 'key = value'")
            file = Path(value)
        elif "=" in value:
            assignments.append(value)
        elif value.endswith(".toml") or os.sep in value or "/" in value:
            raise ConfigError(f"--config {value}: no such file")
        else:
            raise ConfigError(f"--config {value!r} is neither a file nor a 'key = value' "
                              "setting")
    return file, assignments


def option_values(line: CommandLine) -> dict[str, Any]:
    """The configuration keys the options set, checked."""
    values: dict[str, Any] = {}
    for option in CODE_OPTIONS:
        groups = line.codes.get(option)
        if groups:
            values[option] = _codes(option, groups)
    for option in GLOB_OPTIONS:
        globs = line.globs.get(option)
        if globs:
            if any(not g.strip() for g in globs):
                raise ConfigError(f"--{option} was given an empty pattern")
            values[option] = tuple(globs)
    if line.per_file_ignores:
        values["per-file-ignores"] = _pairs("per-file-ignores", line.per_file_ignores)
    if line.extend_per_file_ignores:
        values["extend-per-file-ignores"] = _pairs("extend-per-file-ignores",
                                                   line.extend_per_file_ignores)
    for option in FLAG_OPTIONS:
        flag = line.flags.get(option)
        if flag is not None:
            values[option] = flag
    if line.target_torch is not None:
        from torchlint.config.keys import parse_release

        values["target-torch"] = parse_release(line.target_torch, "--target-torch")
    return values


def workspace_for(line: CommandLine) -> Workspace:
    """The workspace the command line asks for."""
    file, assignments = split_config_values(line.config)
    if line.isolated and file is not None:
        raise ConfigError("--isolated reads no configuration file: drop --config "
                          f"{file} or --isolated")
    layers: list[Layer] = [override_layer(a, line.cwd) for a in assignments]
    options = option_values(line)
    if options:
        layers.append(options_layer(options, base=line.cwd))
    return Workspace(config=file, overrides=layers, isolated=line.isolated, cwd=line.cwd,
                     honour_noqa=line.honour_noqa)
