"""Layers of settings and how they combine into :class:`Settings`.

A file's settings are the layers of its configuration (the files it ``extend``\\s first,
then itself), then ``--config KEY=VALUE``, then the command line's options. Each key
combines as :data:`torchlint.config.keys.KEYS` says: the last layer setting a ``replace``
key wins, ``extend`` keys add up, and each layer's rule selection refines the one before.
Relative paths stay relative to the folder of the layer that wrote them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from torchlint.config.settings import DEFAULT_EXCLUDE, Glob, PathGlob, Selection, Settings

_SELECTION_KEYS = ("select", "extend-select", "ignore", "extend-ignore", "fixable",
                   "extend-fixable", "unfixable")


@dataclass(frozen=True)
class Layer:
    """What one source of settings says: checked values by key, the folder its relative
    paths are resolved against, and where it came from (for ``--show-settings``)."""

    values: Mapping[str, Any]
    base: str
    source: str


def options_layer(values: Mapping[str, Any], base: str, source: str = "command line") -> Layer:
    """The command line's options as a layer (``None`` values are left out). Codes and
    globs must already be checked."""
    kept = {key: value for key, value in values.items() if value is not None}
    for key, value in list(kept.items()):
        if isinstance(value, list):
            kept[key] = tuple(value)
    return Layer(kept, os.path.abspath(base), source)


def _globs(patterns: Iterable[str], base: str, root: str) -> tuple[Glob, ...]:
    return tuple(p if base == root else PathGlob(p, base) for p in patterns)


def merge(layers: Iterable[Layer], *, root: str, config_file: str | None = None,
          extends: tuple[str, ...] = ()) -> Settings:
    """The settings the ``layers`` make together; plain globs are relative to ``root``."""
    from torchlint.config.keys import KEYS

    origins: dict[str, str] = {}
    selections: list[Selection] = []
    values: dict[str, Any] = {}
    exclude: tuple[Glob, ...] = DEFAULT_EXCLUDE
    extend_exclude: list[Glob] = []
    per_file: list[tuple[Glob, tuple[str, ...]]] = []
    bases: list[str] = []
    names: list[str] = []
    for layer in layers:
        v = layer.values
        for key in v:
            if key == "extend":
                continue
            if KEYS[key].kind == "replace" or key not in origins or key in (
                    "select", "fixable", "exclude", "per-file-ignores"):
                origins[key] = layer.source
            elif layer.source not in origins[key].split("; "):
                origins[key] += f"; {layer.source}"
        if any(key in v for key in _SELECTION_KEYS):
            selections.append(Selection(
                select=v.get("select"), extend_select=v.get("extend-select", ()),
                ignore=(*v.get("ignore", ()), *v.get("extend-ignore", ())),
                fixable=v.get("fixable"), extend_fixable=v.get("extend-fixable", ()),
                unfixable=v.get("unfixable", ())))
        if "exclude" in v:
            exclude = _globs(v["exclude"], layer.base, root)
        extend_exclude.extend(_globs(v.get("extend-exclude", ()), layer.base, root))
        if "per-file-ignores" in v:
            per_file = []
        for key in ("per-file-ignores", "extend-per-file-ignores"):
            for pattern, codes in v.get(key, ()):
                per_file.append((_globs([pattern], layer.base, root)[0], tuple(codes)))
        bases.extend(v.get("extend-module-bases", ()))
        names.extend(v.get("extend-model-names", ()))
        for key in ("preview", "force-exclude", "respect-gitignore", "target-torch",
                    "max-file-size"):
            if key in v:
                values[key.replace("-", "_")] = v[key]
        if "cache-dir" in v:
            values["cache_dir"] = os.path.normpath(
                os.path.join(layer.base, os.path.expanduser(v["cache-dir"])))
    return Settings(
        selections=tuple(selections), exclude=exclude, extend_exclude=tuple(extend_exclude),
        per_file_ignores=tuple(per_file), extend_module_bases=tuple(bases),
        extend_model_names=tuple(names), root=root, config_file=config_file,
        extends=extends, origins=tuple(origins.items()), **values)
