"""``torchlint server``: a language server for any LSP client (the ``lsp`` extra).

``server.py`` holds the server's state (settings, lints and their scheduling),
``features.py`` its handlers, ``linting.py`` what it lints (documents and notebooks),
``actions.py`` the code actions, ``presentation.py`` how findings look, ``settings.py``
the editor's settings and ``positions.py`` positions and minimal edits.
"""

from __future__ import annotations

from torchlint.lsp.features import create_server

__all__ = ["create_server", "serve"]


def serve() -> None:
    create_server().start_io()
