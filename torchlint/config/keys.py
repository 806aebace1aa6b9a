"""The configuration keys: what each one holds, how layers combine it, and checking a table.

One table of keys serves the configuration files, ``--config KEY=VALUE`` and the command
line's own options, so every way of setting a key is checked the same way and
``--show-settings`` can say where each value came from.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Literal

from torchlint.config.errors import ConfigError
from torchlint.config.selectors import validate_selectors

# How a key combines over layers (an extended file, the file, --config KEY=VALUE, options):
#   replace    the last layer that sets it wins
#   extend     every layer's values add up
#   selection  rule selection: each layer refines the codes the one before chose
Kind = Literal["replace", "extend", "selection"]


@dataclass(frozen=True)
class Key:
    name: str
    kind: Kind
    parse: Callable[[object, str], object]
    help: str


class BadValue(ConfigError):
    """A wrong value. ``item``: the string in it that is wrong (a code in a list), None for
    the value as a whole; ``under``: the entry of a table value that holds it (a glob of
    ``per-file-ignores``). The reader points at it."""

    def __init__(self, message: str, *, item: str | None = None,
                 under: str | None = None) -> None:
        super().__init__(message)
        self.item = item
        self.under = under


def _string_list(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):  # never taken as a list of one: say how to write it
        raise BadValue(f"{where} must be a list of strings, not a string: write "
                       f"[{_quoted(value)}]")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadValue(f"{where} must be a list of strings")
    return tuple(value)


def _quoted(value: str) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _codes(value: object, where: str) -> tuple[str, ...]:
    codes = _string_list(value, where)
    for code in codes:
        try:
            validate_selectors((code,), where)
        except ConfigError as exc:
            raise BadValue(str(exc), item=code) from None
    return codes


def _globs(value: object, where: str) -> tuple[str, ...]:
    globs = _string_list(value, where)
    for glob in globs:
        if not glob.strip():
            raise BadValue(f"{where} holds an empty pattern", item=glob)
    return globs


def _bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where} must be true or false")
    return value


def _path(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a path (a non-empty string)")
    return value


def _size(value: object, where: str) -> int:
    """A size in bytes: a number, or a string such as ``"4 MB"``, ``"512kB"``."""
    from torchlint.engine.limits import parse_size

    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConfigError(f"{where} must be a size in bytes, or a string such as \"4 MB\"")
    size = parse_size(value)
    if size is None or size <= 0:
        raise ConfigError(f"{where} must be a positive size such as 4000000 or \"4 MB\", "
                          f"not {value!r}")
    return size


def _per_file_ignores(value: object, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise BadValue(f"{where} must be a table of \"glob\" = [codes]")
    pairs = []
    for pattern, codes in value.items():
        if not pattern.strip():
            raise BadValue(f"{where} holds an empty pattern", under=pattern)
        try:
            pairs.append((pattern, _codes(codes, f"{where} {pattern!r}")))
        except BadValue as exc:
            raise BadValue(str(exc), item=exc.item, under=pattern) from None
    return tuple(pairs)


def parse_release(value: object, where: str) -> tuple[int, int]:
    """``"2.4"`` (or ``"2.4.1"``, ``"v2.4"``) -> ``(2, 4)``."""
    if isinstance(value, float):
        raise ConfigError(f"{where} must be a string such as \"2.4\" (a TOML number cannot "
                          f"tell 2.1 from 2.10): write \"{value}\"")
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be a torch release such as \"2.4\"")
    text = value.strip().lower().removeprefix("v")
    parts = text.split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]) or len(parts) > 3 or (
            len(parts) == 3 and not parts[2].isdigit()):
        raise ConfigError(f"{where} must be a torch release such as \"2.4\", not {value!r}")
    major, minor = int(parts[0]), int(parts[1])
    if major < 1 and (major, minor) != (0, 4):
        raise ConfigError(f"{where}: torchlint knows torch from 0.4 on, not {value!r}")
    return major, minor


KEYS: dict[str, Key] = {key.name: key for key in (
    Key("select", "selection", _codes,
        "codes or prefixes to enable instead of the defaults (\"ALL\" for every rule)"),
    Key("extend-select", "selection", _codes, "codes or prefixes to enable on top"),
    Key("ignore", "selection", _codes, "codes or prefixes never to report"),
    Key("extend-ignore", "selection", _codes, "the same as ignore (flake8's name)"),
    Key("fixable", "selection", _codes, "codes whose fixes may be applied (default: ALL)"),
    Key("extend-fixable", "selection", _codes, "codes made fixable on top of fixable"),
    Key("unfixable", "selection", _codes, "codes reported but never fixed"),
    Key("per-file-ignores", "replace", _per_file_ignores, "glob -> codes ignored there"),
    Key("extend-per-file-ignores", "extend", _per_file_ignores,
        "more per-file ignores on top of per-file-ignores"),
    Key("exclude", "replace", _globs, "paths never linted (replaces the defaults)"),
    Key("extend-exclude", "extend", _globs, "more paths never linted"),
    Key("force-exclude", "replace", _bool,
        "apply the exclusions also to paths named on the command line and --stdin-filename"),
    Key("respect-gitignore", "replace", _bool,
        "skip files ignored by .gitignore, .ignore, .git/info/exclude, the global excludes"),
    Key("extend-module-bases", "extend", _string_list,
        "more base classes whose subclasses are nn.Modules"),
    Key("extend-model-names", "extend", _string_list, "more names that mean a model"),
    Key("preview", "replace", _bool, "run the preview rules and behaviours"),
    Key("target-torch", "replace", parse_release,
        "the oldest torch release the code must run on (default: inferred)"),
    Key("cache-dir", "replace", _path, "where results are cached"),
    Key("max-file-size", "replace", _size,
        "files larger than this are skipped with a warning (bytes or \"4 MB\"; default 500 kB)"),
    Key("extend", "replace", _path, "another configuration file this one builds on"),
)}

# keys that only a configuration file may hold
FILE_ONLY = frozenset({"extend"})


class KeyProblem(ConfigError):
    """A key that is unknown or holds a wrong value; the reader adds where the key is.
    ``bad``: the wrong value's problem (the reader points at the value), None for a key
    that is itself wrong. ``placed``: the message already says where the key is."""

    def __init__(self, key: str, message: str, bad: BadValue | None = None, *,
                 placed: bool = False) -> None:
        super().__init__(message)
        self.key = key
        self.bad = bad
        self.placed = placed or bad is not None  # a value's message names its key


def check_table(table: Mapping[str, object], *, allowed: Collection[str] = KEYS,
                section: str = "the top level") -> dict[str, object]:
    """Each key of ``table`` checked and parsed (raises :class:`KeyProblem`). ``section``:
    where the keys are written, for hints."""
    values: dict[str, object] = {}
    for key, raw in table.items():
        spec = KEYS.get(key)
        if spec is None or key not in allowed:
            if key == "lint" and isinstance(raw, dict):  # Ruff's [tool.ruff.lint]
                table = section.startswith("[")
                raise KeyProblem(key, f"unknown key 'lint'{f' in {section}' if table else ''}: "
                                 "torchlint has no 'lint' sub-table (unlike Ruff); write its "
                                 f"keys {f'in {section} itself' if table else 'at the top level'}",
                                 placed=True)
            import difflib

            close = difflib.get_close_matches(key, [k for k in KEYS if k in allowed], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise KeyProblem(key, f"unknown key {key!r}{hint}")
        try:
            values[key] = spec.parse(raw, f"{key!r}")
        except BadValue as exc:
            raise KeyProblem(key, str(exc), exc) from None
        except ConfigError as exc:
            raise KeyProblem(key, str(exc), BadValue(str(exc))) from None
    return values
