"""Reading configuration files: ``.torchlint.toml`` / ``torchlint.toml`` (keys at the top
level) and ``pyproject.toml`` (``[tool.torchlint]``), the files they ``extend``, the
user-level file, and ``--config KEY=VALUE`` settings."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from torchlint.config.errors import ConfigError, shown
from torchlint.config.layers import Layer
from torchlint.source import read_file

# The key table and the TOML reader are imported when a file is actually read: a run in a
# tree without a configuration never needs them.

# In one folder the first of these that exists is its configuration (as Ruff orders its own).
CONFIG_NAMES = (".torchlint.toml", "torchlint.toml", "pyproject.toml")
PYPROJECT = "pyproject.toml"
TABLE = ("tool", "torchlint")


def is_pyproject(path: Path) -> bool:
    return path.name == PYPROJECT


def config_in(directory: str, names: frozenset[str] | None = None) -> Path | None:
    """The configuration file of ``directory`` itself, if it has one. ``names``: the
    folder's entries when already listed (spares the file-system look-ups)."""
    for name in CONFIG_NAMES:
        if names is not None and name not in names:
            continue
        candidate = Path(directory, name)
        if not candidate.is_file():
            continue
        if name != PYPROJECT or _has_torchlint_table(candidate):
            return candidate
    return None


def _has_torchlint_table(path: Path) -> bool:
    """Does this pyproject.toml configure torchlint? One that does not is not a
    configuration (as Ruff treats ``[tool.ruff]``); one that cannot be read but names
    torchlint is an error rather than silently skipped."""
    try:
        raw = read_file(path)  # a FIFO or device is not waited on
    except OSError:
        return False
    if b"torchlint" not in raw:
        return False
    from torchlint.config.toml_files import parse_toml, read_text

    text = read_text(path)
    data = parse_toml(text, path)  # a broken file that mentions torchlint: say where
    tool = data.get("tool")
    return isinstance(tool, dict) and "torchlint" in tool


def read_layer(path: Path, *, explicit: bool = False, extended_by: Path | None = None
               ) -> Layer:
    """The settings ``path`` holds. ``explicit``: named with ``--config``, where a file with
    no torchlint settings is an error rather than nothing. ``extended_by``: the file whose
    ``extend`` names it."""
    from torchlint.config.keys import KEYS, KeyProblem, check_table
    from torchlint.config.toml_files import loads, parse_toml, problem_at, read_text, tomllib

    text = read_text(path)
    if extended_by is not None and path.suffix != ".toml":
        # any file may be named: say what it is not, never print its lines
        try:
            data = loads(text)
        except tomllib().TOMLDecodeError:
            raise ConfigError(f"{shown(extended_by)}: 'extend' names {shown(path)}, which is "
                              "not a TOML configuration file") from None
    else:
        data = parse_toml(text, path)
    table_path: tuple[str, ...] = ()
    tool = data.get("tool")
    in_tool = isinstance(tool, dict) and "torchlint" in tool
    if path.name in CONFIG_NAMES[:2]:
        if in_tool:
            raise problem_at(text, path, (), "tool", f"{path.name} takes its keys at the top "
                             "level: write them without the [tool.torchlint] header", "")
        table = data
    elif is_pyproject(path) or in_tool or "tool" in data or "project" in data:
        if not in_tool:
            raise ConfigError(f"{shown(path)}: no [tool.torchlint] table: nothing for torchlint "
                              "here (add the table, or name a torchlint.toml)")
        table = tool["torchlint"]  # type: ignore[index]
        table_path = TABLE
    else:  # another name, given with --config or 'extend': keys at the top level
        table = data
    if not isinstance(table, dict):
        raise ConfigError(f"{shown(path)}: [tool.torchlint] must be a table")
    if explicit and not table and not table_path:  # an empty [tool.torchlint] says "defaults"
        raise ConfigError(f"{shown(path)}: holds no torchlint settings (known keys: "
                          f"{', '.join(KEYS)})")
    section = "[tool.torchlint]" if table_path else "the top level"
    try:
        values = check_table(table, section=section)
    except KeyProblem as problem:
        bad = problem.bad
        raise problem_at(text, path, table_path, problem.key, str(problem),
                         "" if problem.placed else section,
                         value=bad is not None, item=bad.item if bad else None,
                         under=bad.under if bad else None) from None
    return Layer(values, os.path.dirname(os.path.abspath(path)), str(path))


def load_chain(path: Path, *, explicit: bool = False) -> list[Layer]:
    """``path``'s layer and those of the files it extends, the farthest first."""
    chain: list[Layer] = []
    seen: list[Path] = []
    current: Path | None = path
    while current is not None:
        current = Path(os.path.normpath(os.path.abspath(current)))
        if current in seen:
            cycle = " extends ".join(shown(p) for p in (*seen, current))
            raise ConfigError(f"circular configuration: {cycle}")
        if seen and not current.is_file():
            what = "is not a file" if current.exists() else "does not exist"
            raise ConfigError(f"{shown(seen[-1])}: 'extend' names {shown(current)}, which "
                              f"{what}")
        layer = read_layer(current, explicit=explicit or bool(seen),
                           extended_by=seen[-1] if seen else None)
        seen.append(current)
        chain.append(layer)
        extend = layer.values.get("extend")
        current = Path(layer.base, os.path.expanduser(extend)) if extend else None
    return chain[::-1]


def user_config_dir() -> Path:
    """Where the user-level configuration lives: ``$XDG_CONFIG_HOME/torchlint`` (default
    ``~/.config/torchlint``; ``%APPDATA%\\torchlint`` on Windows)."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    if xdg:
        return Path(xdg, "torchlint")
    if sys.platform == "win32" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"], "torchlint")
    return Path.home() / ".config" / "torchlint"


def user_config() -> Path | None:
    """The user-level configuration file, if there is one."""
    try:
        directory = user_config_dir()
    except RuntimeError:  # no home directory
        return None
    return config_in(str(directory))


def override_layer(assignment: str, base: str) -> Layer:
    """``--config 'KEY = VALUE'`` (a TOML assignment) as a layer."""
    from torchlint.config.keys import FILE_ONLY, KEYS, KeyProblem, check_table
    from torchlint.config.toml_files import loads, tomllib

    said = repr(assignment if len(assignment) <= 60 else assignment[:57] + "...")
    try:
        data = loads(assignment)
    except tomllib().TOMLDecodeError as exc:
        raise ConfigError(f"--config {said} is neither a file nor a TOML "
                          f"'key = value' assignment ({exc})") from None
    if len(data) != 1:
        raise ConfigError(f"--config {said}: give one 'key = value' per --config")
    try:
        values = check_table(data, allowed=[k for k in KEYS if k not in FILE_ONLY])
    except KeyProblem as problem:
        raise ConfigError(f"--config {said}: {problem}") from None
    return Layer(values, base, "--config")


def find_config(start: Path) -> Path | None:
    """The configuration nearest to ``start`` (a file or folder), upwards; None if none."""
    current = os.path.abspath(start)
    if not os.path.isdir(current):
        current = os.path.dirname(current)
    while True:
        found = config_in(current)
        if found is not None:
            return found
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
