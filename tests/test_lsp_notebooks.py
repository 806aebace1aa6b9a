"""Notebooks in the language server, synced as VS Code syncs them (notebookDocument/*):
linted as one program in cell order, each cell's findings on that cell."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsp_client import Client, apply_edits  # noqa: E402

CAPABILITIES = {"textDocument": {"publishDiagnostics": {}}, "notebookDocument": {
    "synchronization": {"dynamicRegistration": False}}}


def _cell_uri(notebook: Path, n: int) -> str:
    return f"vscode-notebook-cell:{notebook.as_posix()}#W{n}sZmlsZQ%3D%3D"


def _open(client: Client, notebook: Path, cells: list[tuple[str, str]]) -> list[str]:
    """Open a notebook of (kind, text) cells; the cell URIs in order."""
    uris = [_cell_uri(notebook, n) for n in range(len(cells))]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook.as_uri(), "notebookType": "jupyter-notebook",
                     "version": 1,
                     "cells": [{"kind": 2 if kind == "code" else 1, "document": uri}
                               for uri, (kind, _) in zip(uris, cells)]},
        "cellTextDocuments": [{"uri": uri, "languageId": "python" if kind == "code"
                               else "markdown", "version": 1, "text": text}
                              for uri, (kind, text) in zip(uris, cells)]})
    return uris


def _published(client: Client, uris: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The next diagnostics published for each of ``uris``."""
    found: dict[str, list[dict[str, Any]]] = {}
    while len(found) < len(uris):
        message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                              and m["params"]["uri"] in uris)
        found[message["params"]["uri"]] = message["params"]["diagnostics"]
    return found


@pytest.fixture
def client(tmp_path: Path) -> Any:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nselect = ["TL001", "TL301"]\n')
    started = Client(tmp_path)
    result = started.initialize(tmp_path, CAPABILITIES)
    assert result["capabilities"]["notebookDocumentSync"]["notebookSelector"] == [
        {"notebook": "*", "cells": [{"language": "python"}]}]
    yield started
    started.close()


CELLS = [
    ("code", "%matplotlib inline\nimport torch\n"),
    ("markdown", "# Train\nwhat is this?\n"),
    ("code", "model = \n"),  # an exercise left to the reader
    ("code", "%%time\nx = torch.ones(3).cuda()\n"),
]


def test_cells_are_one_program(client: Client, tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    uris = _open(client, notebook, CELLS)
    code = [uris[0], uris[2], uris[3]]
    found = _published(client, code)
    assert found[uris[0]] == []
    assert [d["code"] for d in found[uris[2]]] == ["TL001"]  # only on its own cell
    (finding,) = found[uris[3]]  # torch imported in the first cell is known here
    assert finding["code"] == "TL301"
    assert finding["range"] == {"start": {"line": 1, "character": 4},
                                "end": {"line": 1, "character": 24}}


def test_edits_insertions_deletions_and_close(client: Client, tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    uris = _open(client, notebook, CELLS)
    _published(client, [uris[0], uris[2], uris[3]])
    new = _cell_uri(notebook, 9)
    # fill in the exercise, and insert a cell that moves another tensor
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": notebook.as_uri(), "version": 2},
        "change": {"cells": {
            "structure": {"array": {"start": 4, "deleteCount": 0,
                                    "cells": [{"kind": 2, "document": new}]},
                          "didOpen": [{"uri": new, "languageId": "python", "version": 1,
                                       "text": "y = torch.zeros(2).cuda()\n"}]},
            "textContent": [{"document": {"uri": uris[2], "version": 2}, "changes": [
                {"range": {"start": {"line": 0, "character": 8},
                           "end": {"line": 0, "character": 8}}, "text": "None"}]}]}}})
    found = _published(client, [uris[2], uris[3], new])
    assert found[uris[2]] == []
    assert [d["code"] for d in found[uris[3]]] == ["TL301"]
    assert [d["code"] for d in found[new]] == ["TL301"]
    # delete the first cell: 'torch' is unknown now, and the deleted cell is cleared
    client.notify("notebookDocument/didChange", {
        "notebookDocument": {"uri": notebook.as_uri(), "version": 3},
        "change": {"cells": {"structure": {
            "array": {"start": 0, "deleteCount": 1, "cells": []},
            "didClose": [{"uri": uris[0]}]}}}})
    found = _published(client, [uris[0], uris[3], new])
    assert found == {uris[0]: [], uris[3]: [], new: []}
    client.notify("notebookDocument/didClose", {
        "notebookDocument": {"uri": notebook.as_uri()},
        "cellTextDocuments": [{"uri": uris[2]}, {"uri": uris[3]}, {"uri": new}]})
    assert _published(client, [uris[2], uris[3], new]) == {uris[2]: [], uris[3]: [], new: []}


def test_quick_fix_and_fix_all_edit_the_cells(client: Client, tmp_path: Path) -> None:
    notebook = tmp_path / "nb.ipynb"
    cells = [("code", "import torch\n"), ("code", "a = torch.ones(1).cuda()\n"),
             ("code", "b = torch.ones(2).cuda()\n")]
    uris = _open(client, notebook, cells)
    found = _published(client, uris)
    actions = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uris[1]}, "range": found[uris[1]][0]["range"],
        "context": {"diagnostics": found[uris[1]]}})
    (quick,) = [a for a in actions if a.get("isPreferred")]
    assert list(quick["edit"]["changes"]) == [uris[1]]
    everything = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uris[1]},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["notebook.source.fixAll", "source.fixAll"]}})
    by_kind = {a["kind"]: a for a in everything}
    assert list(by_kind["source.fixAll.torchlint"]["edit"]["changes"]) == [uris[1]]
    whole = by_kind["notebook.source.fixAll.torchlint"]["edit"]["changes"]
    assert sorted(whole) == sorted([uris[1], uris[2]])
    assert apply_edits(cells[2][1], whole[uris[2]]) == 'b = torch.ones(2, device="cuda")\n'
