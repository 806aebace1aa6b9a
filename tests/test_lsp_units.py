"""The language server's pure parts: minimal edits, disable comments, editor settings."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pygls")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from torchlint.config.errors import ConfigError  # noqa: E402
from torchlint.lsp.positions import apply_changes, minimal_changes  # noqa: E402
from torchlint.lsp.presentation import noqa_change  # noqa: E402
from torchlint.lsp.settings import ClientSettings, Resolver, parse_settings  # noqa: E402

LINES = st.lists(st.sampled_from(["x = 1\n", "import torch\n", "y = f(x)\n", "\n", "# c\n",
                                  "z = torch.ones(3).cuda()\n", "é = 2\r\n", "w"]),
                 max_size=12)


@given(LINES, LINES)
def test_minimal_changes_turn_one_text_into_the_other(old: list[str], new: list[str]) -> None:
    a, b = "".join(old), "".join(new)
    changes = minimal_changes(a, b)
    assert apply_changes(a, changes) == b
    assert all(x.end <= y.start for x, y in zip(changes, changes[1:]))  # never overlapping


def test_a_one_word_change_is_one_small_edit() -> None:
    old = "import torch\n" * 50 + "x = torch.ones(3).cuda()\n" + "y = 1\n" * 50
    new = old.replace("torch.ones(3).cuda()", 'torch.ones(3, device="cuda")')
    (change,) = minimal_changes(old, new)
    assert change.new == ', device="cuda"' and change.end - change.start == len(").cuda(")


@pytest.mark.parametrize(("text", "line", "expected"), [
    ("x = f()\n", 1, "x = f()  # noqa: TL301\n"),
    ("x = f()   \n", 1, "x = f()  # noqa: TL301\n"),
    ("x = f()  # noqa: TL302\n", 1, "x = f()  # noqa: TL302, TL301\n"),
    ("x = f()  # why  # noqa:TL302\n", 1, "x = f()  # why  # noqa:TL302, TL301\n"),
    ("x = f()  # a comment\n", 1, "x = f()  # a comment  # noqa: TL301\n"),
    ("x = (f(),\n     g())\n", 1, "x = (f(),  # noqa: TL301\n     g())\n"),
])
def test_disable_comment(text: str, line: int, expected: str) -> None:
    change = noqa_change(text, text, line, "TL301")
    assert change is not None
    assert apply_changes(text, [change]) == expected


@pytest.mark.parametrize(("text", "line"), [
    ("x = f()  # noqa\n", 1),  # already silenced
    ('x = f(); s = """\nmore"""\n', 1),  # the comment would be in the string
    ("x = f() + \\\n    1\n", 1),  # after a backslash
])
def test_no_disable_comment_where_it_cannot_go(text: str, line: int) -> None:
    assert noqa_change(text, text, line, "TL301") is None


def test_ruffs_shapes_of_settings() -> None:
    settings, problems = ClientSettings.from_options({
        "globalSettings": {"select": ["TL3"]},
        "settings": [{"workspace": "file:///work/a", "ignore": ["TL301"]}]})
    assert problems == []
    assert settings.global_settings.select == ("TL3",)
    assert settings.for_path("/work/a/x.py").ignore == ("TL301",)
    assert settings.for_path("/work/a/x.py").select == ("TL3",)  # on top of the global
    assert settings.for_path("/elsewhere/x.py").ignore == ()
    flat, _ = ClientSettings.from_options({"torchlint": {"preview": True}})
    assert flat.global_settings.preview is True


def test_severity_by_longest_prefix() -> None:
    settings, _ = parse_settings({"severity": {"TL3": "information", "TL301": "hint"}})
    assert [settings.severity_of(c) for c in ("TL301", "TL302", "TL101", "TL001")] == [
        "hint", "information", "warning", "error"]


def test_an_inline_configuration_error_names_the_setting() -> None:
    settings, _ = parse_settings({"configuration": {"bogus": 1},
                                  "configurationPreference": "editorFirst"})
    with pytest.raises(ConfigError, match=r"^the editor setting 'configuration' .*'bogus'"):
        Resolver().settings("/tmp/x.py", settings, "/tmp")


def test_a_failing_handler_is_answered_with_its_exception_not_a_traceback() -> None:
    from concurrent.futures import Future

    from torchlint.lsp.features import create_server

    protocol = create_server().protocol
    sent: list[Any] = []
    protocol._send_response = lambda msg_id, result=None, error=None: sent.append(  # type: ignore[method-assign]
        (msg_id, result, error))
    failed: Future[Any] = Future()
    failed.set_exception(ValueError("boom"))
    protocol._send_handler_result(failed, msg_id=7)
    ((msg_id, result, error),) = sent
    assert msg_id == 7 and result is None
    assert error.code == -32603 and error.message.startswith("torchlint: ValueError: boom")
    assert "Traceback" not in error.message
    answered: Future[Any] = Future()
    answered.set_result([])
    protocol._send_handler_result(answered, msg_id=8)
    assert sent[-1] == (8, [], None)


def test_args_are_options_as_for_check_and_the_settings_win() -> None:
    settings, problems = parse_settings({"args": [
        "--select", "TL3,TL1", "--ignore=TL301", "--preview", "--colour", "--extend-select"]})
    assert (settings.select, settings.ignore, settings.preview) == (
        ("TL3", "TL1"), ("TL301",), True)
    assert len(problems) == 2 and "'--colour'" in problems[0] and "needs a value" in problems[1]
    settings, problems = parse_settings({"args": ["--select", "TL3"], "select": ["TL1"],
                                         "ignore": None})
    assert settings.select == ("TL1",) and problems == []


def test_a_failing_notification_is_one_line_to_the_user() -> None:
    import sys

    from pygls.exceptions import FeatureNotificationError, JsonRpcInternalError

    from torchlint.lsp.features import create_server

    server = create_server()
    shown: list[Any] = []
    server.window_show_message = shown.append  # type: ignore[method-assign]
    try:
        raise KeyError("cell")
    except KeyError:
        error = JsonRpcInternalError.of(sys.exc_info())
    server.report_server_error(error, FeatureNotificationError)
    ((params),) = shown
    assert params.message == ("torchlint: KeyError: 'cell' (the traceback is in the server's "
                              "log)")
