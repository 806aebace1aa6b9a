"""``torchlint server``: a language server for any LSP client (the ``lsp`` extra).

``server.py`` holds the server's state (settings, lints and their scheduling),
``features.py`` its handlers, ``linting.py`` what it lints (documents and notebooks),
``actions.py`` the code actions, ``presentation.py`` how findings look, ``settings.py``
the editor's settings, ``positions.py`` positions and minimal edits, ``protocol.py``
errors as JSON-RPC answers, and ``unavailable.py`` the server that only says why it
cannot lint (the ``lsp`` extra is missing).
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_server", "serve"]


def __getattr__(name: str) -> Any:
    if name == "create_server":  # imported on use: it needs pygls
        from torchlint.lsp.features import create_server

        return create_server
    raise AttributeError(name)


def serve() -> None:
    try:
        from torchlint.lsp.features import create_server
    except ImportError as exc:  # without the lsp extra: say so to the editor, not nothing
        from torchlint.lsp.unavailable import serve_unavailable

        serve_unavailable(
            f"torchlint cannot lint: its language server needs the lsp extra ({exc}). "
            "Install it in this environment: pip install '/path/to/torchlint[lsp]' "
            "(in your clone: pip install '.[lsp]'), then restart the server.")
        return
    from torchlint.engine.parse import remember_parses

    # typing changes one statement at a time: parse only that statement again
    remember_parses(2)
    create_server().start_io()
