"""Configuration files: the nearest one per file, in any argument order; extend; the file
names and their precedence; --config FILE and KEY=VALUE; --isolated; the user-level file;
errors that point at the line."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from torchlint.cli import main
from torchlint.config.errors import ConfigError
from torchlint.config.loading import resolve_settings

LOAD = "import torch\n\nstate = torch.autograd.Variable(torch.FloatTensor(3))\n"
MOVE = "import torch\n\ntorch.nn.utils.clip_grad_norm(params, 1.0)\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def check(cwd: Path, *args: str, env: dict[str, str] | None = None, stdin: str | None = None):
    old = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(main, ["check", "--no-cache", *args], input=stdin,
                                  env={"XDG_CONFIG_HOME": str(cwd / ".no-user-config"),
                                       **(env or {})}, catch_exceptions=False)
    finally:
        os.chdir(old)


def codes_by_file(output: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in output.splitlines():
        path, _, rest = line.partition(":")
        found.setdefault(path, []).append(rest.split(": ", 1)[1].split()[0])
    return {k: sorted(v) for k, v in found.items()}


@pytest.fixture
def monorepo(tmp_path: Path) -> Path:
    """The trial's layout (with two default rules): the root ignores TL705, scripts/
    ignores TL704."""
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nignore = ["TL705"]\n')
    write(tmp_path / "scripts" / "pyproject.toml", '[tool.torchlint]\nignore = ["TL704"]\n')
    write(tmp_path / "scripts" / "a.py", LOAD)
    write(tmp_path / "src" / "b.py", LOAD)
    write(tmp_path / "src" / "deep" / "c.py", LOAD)
    return tmp_path


def test_each_file_gets_its_nearest_configuration_in_any_argument_order(monorepo: Path
                                                                        ) -> None:
    expected = {"scripts/a.py": ["TL705"], "src/b.py": ["TL704"], "src/deep/c.py": ["TL704"]}
    paths = list(expected)
    for order in itertools.permutations(paths):
        result = check(monorepo, *order)
        assert codes_by_file(result.stdout) == expected, order
    assert codes_by_file(check(monorepo).stdout) == expected  # the folder
    assert codes_by_file(check(monorepo, "scripts", "src").stdout) == expected
    inner = check(monorepo / "src", "../scripts/a.py", "b.py")  # from another folder
    assert codes_by_file(inner.stdout) == {"../scripts/a.py": ["TL705"], "b.py": ["TL704"]}


def test_stdin_and_the_language_server_use_the_same_nearest_configuration(monorepo: Path
                                                                          ) -> None:
    piped = check(monorepo, "--stdin-filename", "scripts/new.py", stdin=LOAD)
    assert codes_by_file(piped.stdout) == {"scripts/new.py": ["TL705"]}
    piped = check(monorepo, "-", "--stdin-filename", "src/new.py", stdin=LOAD)
    assert codes_by_file(piped.stdout) == {"src/new.py": ["TL704"]}
    # what torchlint/lsp.py calls for each document
    assert "TL704" not in resolve_settings(monorepo / "scripts" / "a.py").for_file(
        str(monorepo / "scripts" / "a.py")).codes
    assert "TL705" not in resolve_settings(monorepo / "src" / "b.py").for_file(
        str(monorepo / "src" / "b.py")).codes


def test_flake8_plugin_uses_the_nearest_configuration(monorepo: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "flake8", "--select", "TL", "scripts/a.py",
                           "src/b.py"], cwd=monorepo, capture_output=True, text=True, timeout=120)
    assert codes_by_file(done.stdout) == {"scripts/a.py": ["TL705"], "src/b.py": ["TL704"]}


def test_extend_inherits_and_each_file_keeps_its_own_relative_paths(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", """\
        [tool.torchlint]
        ignore = ["TL705"]
        extend-exclude = ["pkg/generated"]
        [tool.torchlint.per-file-ignores]
        "pkg/scripts/*" = ["TL702"]
    """)
    write(tmp_path / "pkg" / "torchlint.toml", """\
        extend = "../pyproject.toml"
        extend-ignore = ["TL704"]
        extend-exclude = ["vendored"]
    """)
    for name in ("generated/g.py", "vendored/v.py", "scripts/s.py", "m.py"):
        write(tmp_path / "pkg" / name, LOAD + MOVE.split("\n", 2)[2])
    result = check(tmp_path, "pkg")
    # the parent's globs stay relative to the parent's folder, the child's to its own
    assert codes_by_file(result.stdout) == {"pkg/m.py": ["TL702"]}
    assert "pkg/scripts/s.py" not in result.stdout
    settings = check(tmp_path, "--show-settings", "pkg/m.py").stdout
    assert "extends" in settings and "pyproject.toml" in settings
    assert 'ignore              = ["TL705", "TL704"]' in settings


def test_a_circular_extend_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "a" / "torchlint.toml", 'extend = "../b/torchlint.toml"\n')
    write(tmp_path / "b" / "torchlint.toml", 'extend = "../a/torchlint.toml"\n')
    write(tmp_path / "a" / "x.py", MOVE)
    result = check(tmp_path, "a")
    assert result.exit_code == 2 and "circular configuration" in result.stderr


def test_file_names_and_their_precedence_in_one_folder(tmp_path: Path) -> None:
    write(tmp_path / "x.py", LOAD + MOVE.split("\n", 2)[2])
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nselect = ["TL704"]\n')
    assert codes_by_file(check(tmp_path, "x.py").stdout) == {"x.py": ["TL704"]}
    write(tmp_path / "torchlint.toml", 'select = ["TL705"]\n')
    assert codes_by_file(check(tmp_path, "x.py").stdout) == {"x.py": ["TL705"]}
    write(tmp_path / ".torchlint.toml", 'select = ["TL702"]\n')
    assert codes_by_file(check(tmp_path, "x.py").stdout) == {"x.py": ["TL702"]}


def test_a_pyproject_without_a_torchlint_table_is_not_a_configuration(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nignore = ["TL702"]\n')
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "sub"\n')
    write(tmp_path / "sub" / "x.py", MOVE)
    assert check(tmp_path, "sub").exit_code == 0


def test_the_tool_table_in_torchlint_toml_is_an_error_that_says_why(tmp_path: Path) -> None:
    write(tmp_path / "torchlint.toml", '[tool.torchlint]\nselect = ["TL3"]\n')
    write(tmp_path / "x.py", MOVE)
    result = check(tmp_path, "x.py")
    assert result.exit_code == 2
    assert "torchlint.toml:1:2: torchlint.toml takes its keys at the top level" in result.stderr


def test_config_file_option_applies_to_every_file(monorepo: Path) -> None:
    write(monorepo / "ci" / "strict.toml", 'select = ["TL704"]\n')
    result = check(monorepo, "--config", "ci/strict.toml", "scripts/a.py", "src/b.py")
    assert codes_by_file(result.stdout) == {"scripts/a.py": ["TL704"], "src/b.py": ["TL704"]}


@pytest.mark.parametrize(("name", "body", "message"), [
    ("pyproject.toml", '[project]\nname = "x"\n', "no [tool.torchlint] table"),
    ("other.toml", '[tool.black]\nline-length = 99\n', "no [tool.torchlint] table"),
    ("empty.toml", "", "holds no torchlint settings"),
    ("typo.toml", 'selct = ["TL3"]\n', "typo.toml:1:1: unknown key 'selct' (did you mean "
     "'select'?)"),
])
def test_config_file_option_rejects_a_file_with_no_torchlint_settings(
        tmp_path: Path, name: str, body: str, message: str) -> None:
    write(tmp_path / "cfg" / name, body)
    write(tmp_path / "x.py", MOVE)
    result = check(tmp_path, "--config", f"cfg/{name}", "x.py")
    assert result.exit_code == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_config_key_value_overrides_every_configuration(monorepo: Path) -> None:
    result = check(monorepo, "--config", 'ignore = ["TL704", "TL705"]', "scripts/a.py", "src/b.py")
    assert result.exit_code == 0, result.output
    result = check(monorepo, "--config", "extend-select = ['TL306']", "--config",
                   'target-torch = "2.1"', "--show-settings", "src/b.py")
    assert 'target-torch        = "2.1"   # --config' in result.stdout
    assert "TL306" in result.stdout
    for bad, message in (("selct = 1", "unknown key 'selct'"),
                         ("select = [", "neither a file nor"),
                         ("extend = 'x.toml'", "unknown key 'extend'"),
                         ("select = ['TL999']", "TL999")):
        result = check(monorepo, "--config", bad, "src")
        assert result.exit_code == 2 and message in result.stderr, (bad, result.stderr)


def test_isolated_reads_no_configuration(monorepo: Path, tmp_path: Path) -> None:
    result = check(monorepo, "--isolated", "scripts/a.py", "src/b.py")
    assert codes_by_file(result.stdout) == {"scripts/a.py": ["TL704", "TL705"],
                                            "src/b.py": ["TL704", "TL705"]}
    assert check(monorepo, "--isolated", "--config", "pyproject.toml").exit_code == 2


def test_user_configuration_only_where_no_project_configuration_exists(
        monorepo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    home = tmp_path_factory.mktemp("home")
    write(home / "torchlint" / "torchlint.toml", 'extend-ignore = ["TL702"]\n')
    loose = tmp_path_factory.mktemp("loose")
    write(loose / "script.py", MOVE)
    env = {"XDG_CONFIG_HOME": str(home)}
    assert check(loose, "script.py", env=env).exit_code == 0  # the user's file applies
    shown = check(loose, "--show-settings", "script.py", env=env).stdout
    assert str(home / "torchlint" / "torchlint.toml") in shown
    write(monorepo / "src" / "move.py", MOVE)
    assert check(monorepo, "src/move.py", env=env).exit_code == 1  # a project's file wins
    assert check(loose, "--isolated", "script.py", env=env).exit_code == 1


@pytest.mark.parametrize(("body", "where", "caret"), [
    ('[tool.torchlint]\nselect = ["TL3"\nignore = []\n', "pyproject.toml:3:1: invalid TOML",
     "3 | ignore = []\n  | ^"),
    ('[tool.torchlint]\n\nselct = ["TL3"]\n', "pyproject.toml:3:1: unknown key 'selct'",
     "3 | selct = [\"TL3\"]\n  | ^^^^^"),
    ('[tool.torchlint]\n  preview = "yes"\n', "pyproject.toml:2:13: 'preview' must be true or "
     "false", "  |             ^^^^^"),
    ('[tool.torchlint]\ntarget-torch = 2.10  # c\n', "pyproject.toml:2:16: 'target-torch' must be a "
     "string", "  |                ^^^^\n"),
    # the caret is under the bad value: a code in a list of several lines
    ('[tool.torchlint]\nselect = [\n  "TL3",\n  "TL999",  # "TL999"\n]\n',
     "pyproject.toml:4:3: unknown rule code or prefix 'TL999' in 'select'",
     '4 |   "TL999",  # "TL999"\n  |   ^^^^^^^\n'),
    # ... a code of per-file-ignores, as a table or written inline
    ('[tool.torchlint.per-file-ignores]\n"tests/*" = ["TL3"]\n"x/*" = ["TL3", "TL99x"]\n',
     "pyproject.toml:3:17: unknown rule code or prefix 'TL99x' in 'per-file-ignores' 'x/*'",
     '  |                 ^^^^^^^\n'),
    ('[tool.torchlint]\nper-file-ignores = { "t/*" = ["TL3"], "x/*" = ["TL99x"] }\n',
     "pyproject.toml:2:48: unknown rule code or prefix 'TL99x'", "^^^^^^^"),
    # a string where a list belongs is an error, not a list of one
    ('[tool.torchlint]\nselect = "TL3"\n', "pyproject.toml:2:10: 'select' must be a list of "
     'strings, not a string: write ["TL3"]', "  |          ^^^^^"),
    # Ruff's [tool.ruff.lint] has no counterpart here: say so
    ('[tool.torchlint.lint]\nselect = ["TL3"]\n', "pyproject.toml:1:17: unknown key 'lint' in "
     "[tool.torchlint]: torchlint has no 'lint' sub-table", "  |                 ^^^^\n"),
    ("[tool.torchlint\n", "pyproject.toml:1:16: invalid TOML", "1 | [tool.torchlint"),
])
def test_configuration_errors_name_the_line_and_column_with_a_caret(
        tmp_path: Path, body: str, where: str, caret: str) -> None:
    write(tmp_path / "pyproject.toml", body)
    write(tmp_path / "x.py", MOVE)
    result = check(tmp_path, "x.py")
    assert result.exit_code == 2
    assert where in result.stderr
    assert caret in result.stderr
    assert "Traceback" not in result.stderr


def test_resolve_settings_raises_a_config_error(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nselect = "TL3\n')
    with pytest.raises(ConfigError):
        resolve_settings(tmp_path / "x.py")


LIST_KEYS = ("select", "extend-select", "ignore", "extend-ignore", "fixable", "extend-fixable",
             "unfixable", "exclude", "extend-exclude", "extend-module-bases",
             "extend-model-names")


def test_every_list_valued_key_rejects_a_lone_string(tmp_path: Path) -> None:
    from torchlint.config.keys import KEYS

    listed = {name for name, key in KEYS.items() if key.parse.__name__ in (
        "_string_list", "_codes", "_globs")}
    assert listed == set(LIST_KEYS)  # a new list-valued key joins this test
    write(tmp_path / "x.py", MOVE)
    for key in LIST_KEYS:
        write(tmp_path / "pyproject.toml", f'[tool.torchlint]\n{key} = "TL3"\n')
        result = check(tmp_path, "x.py")
        assert result.exit_code == 2, key
        assert (f"pyproject.toml:2:{len(key) + 4}: '{key}' must be a list of strings, not a "
                'string: write ["TL3"]') in result.stderr, result.stderr
    write(tmp_path / "pyproject.toml", '[tool.torchlint.per-file-ignores]\n"t/*" = "TL3"\n')
    result = check(tmp_path, "x.py")
    assert "pyproject.toml:2:9: 'per-file-ignores' 't/*' must be a list of strings" in result.stderr


def test_configuration_errors_name_the_file_relative_to_the_current_folder(
        tmp_path: Path) -> None:
    write(tmp_path / "pkg" / "sub" / "pyproject.toml", '[tool.torchlint]\nselct = ["TL3"]\n')
    write(tmp_path / "pkg" / "sub" / "x.py", MOVE)
    result = check(tmp_path, "pkg")
    assert result.stderr.startswith(
        f"torchlint: error: {os.path.join('pkg', 'sub', 'pyproject.toml')}:2:1: unknown key")
    assert str(tmp_path) not in result.stderr
    # a file outside the current folder keeps its full path
    result = check(tmp_path / "pkg" / "sub", "--config", 'extend-select = ["TL3"]', "x.py")
    assert "sub/pyproject.toml" not in result.stderr and "pyproject.toml:2:1" in result.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = check(elsewhere, str(tmp_path / "pkg" / "sub" / "x.py"))
    assert str(tmp_path / "pkg" / "sub" / "pyproject.toml") in result.stderr
    # and so does one named from the root of the file system
    root = Path(os.path.abspath(os.sep))
    result = check(root, str(tmp_path / "pkg" / "sub" / "x.py"))
    assert f"error: {tmp_path / 'pkg' / 'sub' / 'pyproject.toml'}:2:1:" in result.stderr


DEEP = "[" * 3000 + "]" * 3000


@pytest.mark.parametrize("body", [
    f"[tool.torchlint]\nselect = {DEEP}\n",
    f'[tool.torchlint]\nselect = ["TL3"]\n[x]\ny = {DEEP}\n',
    "[tool.torchlint]\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n",
], ids=["array", "array-in-another-table", "inline-tables"])
def test_a_deeply_nested_configuration_is_a_configuration_error(tmp_path: Path,
                                                                  body: str) -> None:
    write(tmp_path / "pyproject.toml", body)
    write(tmp_path / "x.py", MOVE)
    result = check(tmp_path, "x.py")
    assert result.exit_code == 2
    assert result.stderr == ("torchlint: error: pyproject.toml: cannot be read as a "
                             "configuration: values nested too deeply to read\n")


def test_a_deeply_nested_pyproject_without_torchlint_settings_is_not_an_error(
        tmp_path: Path) -> None:
    # read only for the torch requirement it declares: unreadable, it declares none
    write(tmp_path / "pyproject.toml", f'[project]\ndependencies = ["torch>=2.0"]\nx = {DEEP}\n')
    write(tmp_path / "x.py", "import torch\n")
    result = check(tmp_path, "x.py")
    assert result.exit_code == 0, result.output
    result = check(tmp_path, "--config", f"select = {DEEP}", "x.py")
    assert result.exit_code == 2 and "values nested too deeply to read" in result.stderr
    assert len(result.stderr) < 300  # the assignment is shown shortened
    assert "Traceback" not in result.output


def test_extend_naming_a_file_that_is_not_toml_does_not_print_its_lines(tmp_path: Path) -> None:
    write(tmp_path / "notes.txt", "the secret first line\nmore\n")
    write(tmp_path / "torchlint.toml", 'extend = "notes.txt"\n')
    write(tmp_path / "x.py", MOVE)
    result = check(tmp_path, "x.py")
    assert result.exit_code == 2
    assert result.stderr == ("torchlint: error: torchlint.toml: 'extend' names notes.txt, which "
                             "is not a TOML configuration file\n")
    # a broken TOML configuration that is extended still shows where it is broken
    write(tmp_path / "base.toml", 'select = ["TL3"\n')
    write(tmp_path / "torchlint.toml", 'extend = "base.toml"\n')
    result = check(tmp_path, "x.py")
    assert result.exit_code == 2 and "base.toml:1:16: invalid TOML" in result.stderr


def test_a_selection_that_enables_no_rule_says_who_chose_it_and_names_the_preview_rules(
        tmp_path: Path) -> None:
    from torchlint.registry import all_rules

    write(tmp_path / "x.py", MOVE)
    preview = sorted(c for c, r in all_rules().items() if r.preview and r.default)[-1]
    family = preview[:4]
    stable = [c for c, r in all_rules().items() if c.startswith(family) and not r.preview]
    result = check(tmp_path, "--select", preview, "x.py")
    assert result.exit_code == 0
    assert result.stderr == (
        "torchlint: warning: no rule is enabled: the command line's --select chooses none that "
        f"runs without --preview; {preview} is a preview rule: add --preview (or `preview = "
        "true` in the configuration) to run it\nAll checks passed! (1 file checked)\n")
    # chosen by a prefix (its stable rules ignored): still named
    result = check(tmp_path, "--select", family, *(f"--ignore={c}" for c in stable), "x.py")
    assert "leave none that runs without --preview;" in result.stderr or (
        "chooses none that runs without --preview;" in result.stderr)
    assert preview in result.stderr.split("without --preview;", 1)[1]
    result = check(tmp_path, "--select", "TL7", "--ignore", "TL7", "x.py")
    assert ("warning: no rule is enabled: the command line's --select and --ignore leave none; "
            "only syntax errors are reported") in result.stderr
    write(tmp_path / "pyproject.toml", '[tool.torchlint]\nignore = ["ALL"]\n')
    result = check(tmp_path, "x.py")
    assert "no rule is enabled: pyproject.toml's ignore leaves none;" in result.stderr
    assert "warning" not in check(tmp_path, "--preview", "--select", preview, "x.py").stderr
