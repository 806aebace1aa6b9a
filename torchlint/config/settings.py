"""Settings: ``[tool.torchlint]`` in the nearest pyproject.toml, merged once with the CLI."""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING


def _toml() -> ModuleType:
    """tomllib, imported when a pyproject.toml is actually read."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    return tomllib

from torchlint.registry import all_rules, nearest_codes, rule_catalog

if TYPE_CHECKING:
    from types import ModuleType

    from torchlint.rule import Rule

KNOWN_KEYS = ("select", "ignore", "extend-select", "per-file-ignores", "exclude",
              "extend-exclude", "unfixable")
DEFAULT_EXCLUDE = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pytest_cache", ".pytype", ".ruff_cache", ".svn",
    ".tox", ".venv", ".torchlint_cache", "__pycache__", "__pypackages__", "_build", "buck-out",
    "build", "dist", "node_modules", "site-packages", "venv",
)


class ConfigError(Exception):
    """A problem with settings; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] | None = None  # None: the default rules
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    unfixable: tuple[str, ...] = ()
    root: str = "."  # directory that relative globs are matched against
    config_file: str | None = None
    # command-line selection, applied after the file's (so it can re-enable what it ignores)
    cli_select: tuple[str, ...] | None = None
    cli_extend_select: tuple[str, ...] = ()
    cli_ignore: tuple[str, ...] = ()

    # ------------------------------------------------------------ rule sets
    def enabled_codes(self) -> frozenset[str]:
        return self._enabled

    @cached_property
    def _enabled(self) -> frozenset[str]:
        if self.select is None:
            base = {code for code, (_, default) in rule_catalog().items() if default}
        else:
            base = set(expand_selectors(self.select))
        base |= set(expand_selectors(self.extend_select))
        base -= set(expand_selectors(self.ignore))
        if self.cli_select is not None:
            base = set(expand_selectors(self.cli_select))
        base |= set(expand_selectors(self.cli_extend_select))
        base -= set(expand_selectors(self.cli_ignore))
        return frozenset(base)

    def codes_for(self, path: str) -> frozenset[str]:
        codes = self.enabled_codes()
        if not self.per_file_ignores:
            return codes
        ignored: set[str] = set()
        relative = self.relative(path)
        for pattern, selectors in self.per_file_ignores:
            if _glob_match(relative, pattern):
                ignored |= set(expand_selectors(selectors))
        return codes - ignored

    def rules_for(self, path: str) -> list[type[Rule]]:
        return list(_rules_with(self.codes_for(path)))

    def unfixable_codes(self) -> frozenset[str]:
        return self._unfixable

    @cached_property
    def _unfixable(self) -> frozenset[str]:
        return frozenset(expand_selectors(self.unfixable))

    # ------------------------------------------------------------ exclusion
    def relative(self, path: str) -> str:
        """``path`` relative to the root, as posix; never raises (symlink loops included)."""
        relative = path
        # plain string paths first (fast); real paths when a symlink is in the way
        for absolute, root in _candidates(path, self.root):
            if absolute == root or absolute.startswith(root.rstrip(os.sep) + os.sep):
                relative = os.path.relpath(absolute, root)
                break
        relative = os.path.normpath(relative)
        return relative if os.sep == "/" else relative.replace(os.sep, "/")

    def is_excluded(self, path: str, *, explicit: bool = False) -> bool:
        """Excluded by a glob. Files named on the command line only meet the user's globs."""
        user_exclude = () if self.exclude == DEFAULT_EXCLUDE else self.exclude
        patterns = (*user_exclude, *self.extend_exclude) if explicit else (
            *self.exclude, *self.extend_exclude)
        relative = self.relative(path)
        names, globs = _split_patterns(patterns)
        if names and not names.isdisjoint(relative.split("/")):
            return True
        return any(_glob_match(relative, pattern) for pattern in globs)


@lru_cache(maxsize=64)
def _rules_with(codes: frozenset[str]) -> tuple[type[Rule], ...]:
    return tuple(rule for code, rule in all_rules().items() if code in codes)


@lru_cache(maxsize=64)
def _absolute_root(root: str) -> str:
    return os.path.abspath(root)


def _candidates(path: str, root: str) -> Iterator[tuple[str, str]]:
    yield os.path.abspath(path), _absolute_root(root)
    yield _real_path(path), _real_directory(root)


def _real_path(path: str) -> str:
    """``os.path.realpath(path)``, resolving each folder once a run."""
    head, tail = os.path.split(os.path.abspath(path))
    if not tail or os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(_real_directory(head), tail)


@lru_cache(maxsize=4096)
def _real_directory(directory: str) -> str:
    return os.path.realpath(directory)


@lru_cache(maxsize=64)
def _split_patterns(patterns: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Plain folder or file names (matched against each path part, as :func:`_glob_match`
    would) apart from real globs."""
    names: set[str] = set()
    globs: list[str] = []
    for pattern in patterns:
        plain = pattern.rstrip("/").removeprefix("./")
        if "/" in plain or any(c in plain for c in "*?["):
            globs.append(pattern)
        else:
            names.add(plain)
    return frozenset(names), tuple(globs)


def _glob_match(relative: str, pattern: str) -> bool:
    pattern = pattern.rstrip("/")
    if pattern.startswith("./"):
        pattern = pattern[2:]
    if fnmatch.fnmatchcase(relative, pattern) or relative.startswith(pattern + "/"):
        return True
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in relative.split("/"))
    return fnmatch.fnmatchcase(relative, pattern + "/*")


def expand_selectors(selectors: Iterable[str]) -> list[str]:
    """Codes named by selectors: ``ALL``, a code, or a prefix (``TL``, ``TL3``, ``TL30``)."""
    rules = rule_catalog()
    codes: list[str] = []
    for selector in selectors:
        upper = selector.strip().upper()
        if upper == "ALL":
            codes.extend(rules)
        else:
            codes.extend(code for code in rules if code.startswith(upper))
    return codes


def validate_selectors(selectors: Iterable[str], where: str) -> None:
    for selector in selectors:
        upper = selector.strip().upper()
        if upper == "ALL" or any(code.startswith(upper) for code in rule_catalog()) and upper:
            continue
        hint = nearest_codes(selector)
        suggestion = f" (did you mean {', '.join(hint)}?)" if hint else ""
        raise ConfigError(f"unknown rule code or prefix {selector!r} in {where}{suggestion}")


# --------------------------------------------------------------------- files
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
    for key in ("exclude", "extend-exclude"):
        if key in table:
            values[key.replace("-", "_")] = _string_list(table[key], key, where)
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
    )
