"""The README's editor section tells the truth: every capability it claims is what the
server advertises, its settings are the ones the server reads, and each editor's
snippet is valid in that editor's format and uses only those settings and kinds."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsp_client import Client  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from torchlint.lsp.settings import KEYS  # noqa: E402

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
EDITORS = README.split("## Editors\n", 1)[1].split("\n## ", 1)[0]
EVERYTHING = {  # a client that can do everything the server offers
    "textDocument": {"diagnostic": {}, "publishDiagnostics": {},
                     "codeAction": {"dataSupport": True,
                                    "resolveSupport": {"properties": ["edit"]}}},
    "notebookDocument": {"synchronization": {}},
    "workspace": {"workspaceEdit": {"documentChanges": True}},
}


def _between(name: str) -> str:
    return EDITORS.split(f"<!-- {name}:begin -->", 1)[1].split(f"<!-- {name}:end -->", 1)[0]


def _block(heading: str, language: str) -> str:
    section = EDITORS.split(f"### {heading}", 1)[1].split("\n### ", 1)[0]
    match = re.search(rf"```{language}\n(.*?)```", section, re.S)
    assert match is not None, f"no {language} block under {heading}"
    return match.group(1)


@pytest.fixture(scope="module")
def capabilities(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("readme")
    client = Client(root)
    try:
        return client.initialize(root, EVERYTHING)["capabilities"]
    finally:
        client.close()


def test_every_claimed_capability_is_advertised(capabilities: dict[str, Any]) -> None:
    claims = re.findall(r"^- `(\w+)`(.*)$", _between("capabilities"), re.M)
    assert {name for name, _ in claims} == set(capabilities) - {"positionEncoding",
                                                                 "workspace"}
    details = dict(claims)
    assert capabilities["textDocumentSync"]["change"] == 2 and "incremental" in \
        details["textDocumentSync"]
    assert capabilities["diagnosticProvider"]["identifier"] == "torchlint"
    actions = capabilities["codeActionProvider"]
    assert re.findall(r"`([\w.]+)`", details["codeActionProvider"]) == \
        actions["codeActionKinds"]
    assert actions["resolveProvider"] is True and "resolvable" in details["codeActionProvider"]
    assert re.findall(r"`([\w.]+)`", details["executeCommandProvider"]) == \
        capabilities["executeCommandProvider"]["commands"]
    assert capabilities["notebookDocumentSync"]["notebookSelector"][0]["cells"] == [
        {"language": "python"}]


def test_the_settings_table_is_what_the_server_reads() -> None:
    named = re.findall(r"^\| `(\w+)` \|", _between("settings"), re.M)
    assert named == list(KEYS)


def test_every_fix_all_kind_the_readme_names_is_advertised(capabilities: dict[str, Any]
                                                           ) -> None:
    named = set(re.findall(r"(?:notebook\.)?source\.fixAll\.torchlint", README))
    assert named <= set(capabilities["codeActionProvider"]["codeActionKinds"])


def test_helix_snippet() -> None:
    config = tomllib.loads(_block("Helix", "toml"))
    server = config["language-server"]["torchlint"]
    assert [server["command"], *server["args"]] == ["torchlint", "server"]
    assert set(server["config"]["settings"]) <= set(KEYS)
    assert "torchlint" in config["language"][0]["language-servers"]


def test_sublime_snippet() -> None:
    config = json.loads(_block("Sublime Text (LSP package)", "json"))
    client = config["clients"]["torchlint"]
    assert client["command"] == ["torchlint", "server"]
    assert set(client["initializationOptions"]["settings"]) <= set(KEYS)


def test_eglot_snippet() -> None:
    elisp = _block("Emacs (eglot)", "elisp")
    assert '("torchlint" "server"' in elisp
    assert elisp.count("(") == elisp.count(")")
    options = re.search(r":settings \((.*?)\)", elisp)
    assert options is not None
    assert set(re.findall(r":(\w+)", options.group(1))) <= set(KEYS)


def test_vscode_snippet_uses_the_extensions_settings() -> None:
    text = _block("VS Code", "jsonc")
    settings = json.loads(re.sub(r"//.*", "", text))
    ours = {key.split(".", 1)[1] for key in settings if key.startswith("torchlint.")}
    assert ours <= set(KEYS)


def test_neovim_snippet_settings() -> None:
    lua = _block("Neovim", "lua")
    assert 'cmd = { "torchlint", "server" }' in lua
    options = re.search(r"settings = \{(.*?)\}", lua)
    assert options is not None
    assert set(re.findall(r"(\w+) =", options.group(1))) <= set(KEYS)
