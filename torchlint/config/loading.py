"""Settings for one file or folder, as the language server and plugins ask for them:
:func:`resolve_settings` (the nearest configuration, options on top) and
:func:`load_config` (what one configuration file says)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from torchlint.config.errors import ConfigError  # noqa: F401 - part of this module's API
from torchlint.config.files import config_in, find_config, load_chain  # noqa: F401
from torchlint.config.layers import merge, options_layer
from torchlint.config.selectors import validate_selectors
from torchlint.config.settings import Settings
from torchlint.config.workspace import Workspace


def load_config(path: Path) -> Settings:
    """The settings one configuration file gives (with the files it extends)."""
    chain = load_chain(path, explicit=True)
    return merge(chain, root=os.path.dirname(os.path.abspath(path)), config_file=str(path),
                 extends=tuple(layer.source for layer in chain[-2::-1]))



def resolve_settings(
    start: Path,
    *,
    config: Path | None = None,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    extend_select: Sequence[str] = (),
    preview: bool | None = None,
    isolated: bool = False,
) -> Settings:
    """The settings for the file or folder ``start``: its nearest configuration (or
    ``config``), the options given here on top, and the inferred torch target."""
    for name, codes in (("--select", select or ()), ("--ignore", ignore),
                        ("--extend-select", extend_select)):
        validate_selectors(codes, name)
    layer = options_layer({"select": select, "ignore": ignore or None,
                           "extend-select": extend_select or None, "preview": preview},
                          base=str(Path.cwd()))
    workspace = Workspace(config=config, overrides=(layer,), isolated=isolated)
    return workspace.settings_for(str(start))
