"""What the language server does for each kind of client: pull or push diagnostics,
resolved and versioned edits, editor settings and who wins over the project's
configuration, debouncing of rapid edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsp_client import TIMEOUT, Client, apply_edits, open_document  # noqa: E402

SOURCE = ("import torch\nfrom torch.autograd import Variable\n\n"
          "x = torch.ones(3).cuda()\ny = Variable(x)\n")
PUSH = {"textDocument": {"publishDiagnostics": {}}}
PULL = {"textDocument": {"diagnostic": {"dynamicRegistration": False},
                         "codeAction": {"dataSupport": True,
                                        "resolveSupport": {"properties": ["edit"]}}},
        "workspace": {"workspaceEdit": {"documentChanges": True}}}


@pytest.fixture
def start(tmp_path: Path) -> Any:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\npreview = true\nselect = ["TL301", "TL704"]\n')
    clients: list[Client] = []

    def started(capabilities: dict[str, Any], options: Any = None
                ) -> tuple[Client, dict[str, Any]]:
        client = Client(tmp_path)
        clients.append(client)
        return client, client.initialize(tmp_path, capabilities, options)

    yield started
    for client in clients:
        client.close()


def _pull(client: Client, uri: str, previous: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"textDocument": {"uri": uri}}
    if previous:
        params["previousResultId"] = previous
    return client.request("textDocument/diagnostic", params)


def test_pull_for_clients_that_pull_and_never_push(start: Any, tmp_path: Path) -> None:
    client, result = start(PULL)
    assert result["capabilities"]["diagnosticProvider"]["identifier"] == "torchlint"
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    report = _pull(client, uri)
    assert report["kind"] == "full"
    assert [d["code"] for d in report["items"]] == ["TL301", "TL704"]
    assert _pull(client, uri, report["resultId"]) == {"kind": "unchanged",
                                                      "resultId": report["resultId"]}
    # a round trip: everything the server sent before it is in the queue now
    client.request("textDocument/hover", {"textDocument": {"uri": uri},
                                          "position": {"line": 0, "character": 0}})
    assert not [m for m in list(client.messages.queue)
                if m.get("method") == "textDocument/publishDiagnostics"]


def test_push_clients_get_no_pull_provider(start: Any) -> None:
    _, result = start(PUSH)
    assert "diagnosticProvider" not in result["capabilities"]


def test_tags_links_and_severities(start: Any, tmp_path: Path) -> None:
    client, _ = start(PUSH, {"settings": {
        "documentationUrl": "https://docs.example/rules/{code}",
        "severity": {"TL3": "information"}}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    tl301, tl704 = client.diagnostics(uri)
    assert (tl301["severity"], tl704["severity"]) == (3, 2)
    assert tl704["tags"] == [2]  # deprecated API
    assert "tags" not in tl301
    assert tl301["codeDescription"] == {"href": "https://docs.example/rules/TL301"}


def test_resolved_fix_all_with_versioned_edits(start: Any, tmp_path: Path) -> None:
    client, _ = start(PULL)
    uri = open_document(client, tmp_path / "t.py", SOURCE, version=7)
    (action,) = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": [], "only": ["source.fixAll"]}})
    assert "edit" not in action  # computed when chosen
    resolved = client.request("codeAction/resolve", action)
    (change,) = resolved["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri, "version": 7}
    assert apply_edits(SOURCE, change["edits"]) == (
        'import torch\n\nx = torch.ones(3, device="cuda")\ny = x.detach()\n')
    assert all(e["range"]["start"]["line"] > 0 or e["range"]["end"]["line"] < 3
               for e in change["edits"])  # small edits, not the whole text


def test_rapid_edits_are_linted_once_for_the_last_version(start: Any, tmp_path: Path) -> None:
    client, _ = start(PUSH)
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert len(client.diagnostics(uri)) == 2
    for version in range(2, 22):
        client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": SOURCE + "z = torch.zeros(1).cuda()\n" * version}]})
    message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    # the first lint after the burst is the last version's: none of an older text
    assert message["params"]["version"] == 21
    assert len(message["params"]["diagnostics"]) == 2 + 21


def test_editor_settings_and_who_wins(start: Any, tmp_path: Path) -> None:
    # filesystemFirst (the default): the project's configuration wins
    client, _ = start(PUSH, {"settings": {"select": ["TL704"]}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL301", "TL704"]
    # editorFirst: the editor's selection applies on top, like --select
    client.notify("workspace/didChangeConfiguration", {"settings": {"torchlint": {
        "select": ["TL704"], "configurationPreference": "editorFirst"}}})
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL704"]
    # editorOnly with an inline configuration: the project's file is not read
    client.notify("workspace/didChangeConfiguration", {"settings": {"torchlint": {
        "configurationPreference": "editorOnly",
        "configuration": {"preview": True, "select": ["TL3"],
                          "per-file-ignores": {"other.py": ["TL3"]}}}}})
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL301"]


def test_a_file_without_project_configuration_takes_the_editors(start: Any,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").unlink()
    client, _ = start(PUSH, {"settings": {"ignore": ["TL301"], "preview": True}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL704"]


def test_bad_settings_are_reported_and_skipped(start: Any, tmp_path: Path) -> None:
    client, _ = start(PUSH, {"settings": {"select": ["TL301", "TL999x"], "colour": "blue"}})
    # one pop-up says everything that was skipped
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
    assert "TL999x" in shown["message"] and "colour" in shown["message"]
    assert "The other settings apply" in shown["message"]
    client.notify("workspace/didChangeConfiguration", {"settings": {"torchlint": {
        "select": ["TL301", "TL999x"], "configurationPreference": "editorFirst"}}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL301"]


@pytest.mark.parametrize("select", [["TL999x"], [], ["nonsense", "TL-1"]])
def test_a_selection_of_no_known_rule_keeps_the_rules_on(start: Any, tmp_path: Path,
                                                         select: list[str]) -> None:
    (tmp_path / "pyproject.toml").unlink()
    client, _ = start(PUSH, {"settings": {"select": select}})
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
    assert "'select' names no known rule" in shown["message"]
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert "TL704" in [d["code"] for d in client.diagnostics(uri)]  # a default rule


def test_a_bad_project_configuration_falls_back_to_the_defaults(start: Any,
                                                                tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\nbogus = 1\n')
    client, _ = start(PUSH, {"settings": {"extendSelect": ["TL301"], "preview": True}})
    open_document(client, tmp_path / "t.py", SOURCE)
    seen: list[dict[str, Any]] = []
    client.wait(lambda m: seen.append(m) or (  # type: ignore[func-returns-value]
        m.get("method") == "textDocument/publishDiagnostics"))
    (shown,) = [m["params"]["message"] for m in seen if m.get("method") == "window/showMessage"]
    assert "unknown key 'bogus'" in shown
    assert "files are linted with the default settings with the editor's extendSelect TL301" \
        in shown
    assert [d["code"] for d in seen[-1]["params"]["diagnostics"]] == ["TL301", "TL704"]
    (logged,) = [m["params"]["message"] for m in seen if m.get("method") == "window/logMessage"
                 and "settings in force" in m["params"]["message"]]
    assert logged.startswith(f"torchlint: settings in force for {tmp_path}: the default "
                             "settings with the editor's extendSelect TL301; preview true (")


def test_the_settings_in_force_are_logged(start: Any, tmp_path: Path) -> None:
    client, _ = start(PUSH, {"settings": {"ignore": ["TL301"]}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    logged = client.wait(lambda m: m.get("method") == "window/logMessage")["params"]
    assert logged["message"] == (
        f"torchlint: settings in force for {tmp_path}: {tmp_path / 'pyproject.toml'} (the "
        "editor's lint settings are not used: configurationPreference is filesystemFirst) "
        "(2 rules on)")
    assert [d["code"] for d in client.diagnostics(uri)] == ["TL301", "TL704"]


def test_lint_on_save_only(start: Any, tmp_path: Path) -> None:
    client, _ = start(PUSH, {"settings": {"lintOnChange": False}})
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    assert len(client.diagnostics(uri)) == 2
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": "import torch\n"}]})
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
    assert message["params"]["diagnostics"] == [] and message["params"]["version"] == 2
    assert TIMEOUT  # the change alone published nothing: the save's lint came first


def _command(client: Client, command: str, arguments: list[Any],
             answer: dict[str, Any] | None = None, expect: str | None = None
             ) -> tuple[Any, dict[str, Any] | None]:
    """Run a server command; answer the one request it makes of the client (``expect``)."""
    client.next_id += 1
    ident = client.next_id
    client.send({"id": ident, "method": "workspace/executeCommand",
                 "params": {"command": command, "arguments": arguments}})
    asked = None
    if expect is not None:
        asked = client.wait(lambda m: m.get("method") == expect, keep=True)
        client.send({"id": asked["id"], "result": answer})
    reply = client.wait(lambda m: m.get("id") == ident and "method" not in m, keep=True)
    assert "error" not in reply, reply
    return reply["result"], asked


def test_commands(start: Any, tmp_path: Path) -> None:
    client, result = start({**PUSH, "window": {"showDocument": {"support": True}}})
    assert result["capabilities"]["executeCommandProvider"]["commands"] == [
        "torchlint.showDocumentation", "torchlint.ruleDocumentation", "torchlint.applyFixAll"]
    markdown, _ = _command(client, "torchlint.ruleDocumentation", ["TL301"])
    assert markdown.startswith("**TL301** `create-then-move`")
    shown, asked = _command(client, "torchlint.showDocumentation", ["TL301"],
                            {"success": True}, "window/showDocument")
    assert asked is not None and asked["params"]["uri"].endswith("/TL301.md")
    page = Path(asked["params"]["uri"].removeprefix("file://"))
    assert page.read_text(encoding="utf-8").strip() == shown.strip()
    uri = open_document(client, tmp_path / "t.py", SOURCE, version=3)
    client.diagnostics(uri)
    applied, asked = _command(client, "torchlint.applyFixAll", [uri], {"applied": True},
                              "workspace/applyEdit")
    assert applied is True and asked is not None
    edits = asked["params"]["edit"]["changes"][uri]
    assert apply_edits(SOURCE, edits) == 'import torch\n\nx = torch.ones(3, device="cuda")\ny = x.detach()\n'


def test_documentation_is_plain_text_where_markdown_is_not_shown(start: Any,
                                                                  tmp_path: Path) -> None:
    client, _ = start({"textDocument": {"publishDiagnostics": {},
                                        "hover": {"contentFormat": ["plaintext"]}}})
    markdown, _ = _command(client, "torchlint.showDocumentation", ["TL301"])
    assert markdown.startswith("**TL301**")  # the command's result stays Markdown
    shown = client.wait(lambda m: m.get("method") == "window/showMessage")["params"]
    assert shown["message"].startswith("TL301 create-then-move (")
    assert "): Flags a tensor built on the CPU" in shown["message"]
    assert not any(mark in shown["message"] for mark in ("**", "`", "##"))
    assert shown["message"].endswith("(the whole page: torchlint explain TL301)")
    uri = open_document(client, tmp_path / "t.py", SOURCE)
    (found, _) = client.diagnostics(uri)
    hover = client.request("textDocument/hover", {
        "textDocument": {"uri": uri}, "position": found["range"]["start"]})
    assert hover["contents"]["kind"] == "plaintext"
    assert hover["contents"]["value"].startswith("TL301 create-then-move")
    assert "**" not in hover["contents"]["value"] and "```" not in hover["contents"]["value"]
