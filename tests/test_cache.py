"""The result cache: warm runs skip parsing; anything doubtful is recomputed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import torchlint
from torchlint.config.settings import Settings
from torchlint.run import cache as cache_module
from torchlint.run import file as run_file
from torchlint.run.outcome import Mode
from torchlint.run.runner import run

FINDING = "import torch\ntorch.nn.utils.clip_grad_norm(model.parameters(), 1.0)\n"
CLEAN = "import torch\ntorch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"


def _setup(tmp_path: Path, text: str = FINDING) -> tuple[str, Settings, Path]:
    path = tmp_path / "code.py"
    path.write_text(text, encoding="utf-8")
    return str(path), Settings(root=str(tmp_path), select=("ALL",)), tmp_path / "cache"


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed although cached")

    monkeypatch.setattr(run_file, "lint_one", fail)


def _entries(cache_dir: Path) -> list[Path]:
    return sorted(cache_dir.rglob("*.json"))


def test_warm_run_reprints_the_findings_without_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    cold = list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    assert cold[0].diagnostics and _entries(cache_dir)
    _no_parsing(monkeypatch)
    warm = list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    assert warm[0].diagnostics == cold[0].diagnostics  # fixes included
    assert (cache_dir / ".gitignore").read_text() == "*\n"


def test_changed_content_is_recomputed(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    Path(path).write_text(CLEAN, encoding="utf-8")
    assert list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics == []


@pytest.mark.parametrize("garbage", [b"", b"{", b"\xff\xfe", b"[]", b'{"key": "x"}',
                                     b'{"key": null, "diagnostics": 3}'])
def test_corrupt_or_foreign_entries_are_ignored_and_rebuilt(tmp_path: Path, garbage: bytes
                                                            ) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    expected = list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics
    (entry,) = _entries(cache_dir)
    entry.write_bytes(garbage)
    again = list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics
    assert again == expected
    assert json.loads(entry.read_text())["diagnostics"]  # rebuilt


def test_an_entry_with_wrong_contents_under_the_right_name_is_not_trusted(tmp_path: Path
                                                                         ) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    (entry,) = _entries(cache_dir)
    entry.write_text(json.dumps({"key": "0" * 64, "diagnostics": []}))  # someone else's
    assert list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics


def test_key_depends_on_settings_version_code_and_path(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    data = Path(path).read_bytes()
    base = cache_module.open_cache(cache_dir)
    assert base is not None
    fingerprint = settings.for_file(path).fingerprint
    key = base.key(path, data, fingerprint)
    assert base.key(path, data + b"\n", fingerprint) != key
    assert base.key(path + "x", data, fingerprint) != key
    other = replace(settings, ignore=("TL702",)).for_file(path).fingerprint
    assert base.key(path, data, other) != key
    extended = replace(settings, extend_model_names=("policy",)).for_file(path).fingerprint
    assert base.key(path, data, extended) != key
    monkeypatch.setattr(torchlint, "__version__", "999.0")
    bumped = cache_module.open_cache(cache_dir)
    assert bumped is not None and bumped.key(path, data, fingerprint) != key


def test_each_file_is_keyed_by_its_own_settings(tmp_path: Path) -> None:
    """Per-file ignores change one file's settings, and only that file's key."""
    path, settings, cache_dir = _setup(tmp_path)
    ignoring = replace(settings, per_file_ignores=(("other.py", ("TL702",)),))
    assert ignoring.for_file(path).fingerprint == settings.for_file(path).fingerprint
    other = str(Path(path).with_name("other.py"))
    assert ignoring.for_file(other).fingerprint != settings.for_file(other).fingerprint
    assert "TL702" not in ignoring.for_file(other).codes


def test_editing_a_rule_source_changes_the_fingerprint(tmp_path: Path) -> None:
    rule = tmp_path / "rule.py"
    rule.write_text("A = 1\n")
    first = cache_module.code_fingerprint([str(rule)])
    rule.write_text("A = 2\n")
    assert cache_module.code_fingerprint([str(rule)]) != first
    files = cache_module._engine_files()
    assert any(f.endswith(os.path.join("engine", "lint.py")) for f in files)
    assert any("tl301" in os.path.basename(f) for f in files)


def test_ignored_settings_select_changes_results(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    assert list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics
    quiet = replace(settings, ignore=("TL702",))
    assert not list(run([path], quiet, Mode(), jobs=1, cache_dir=cache_dir))[0].diagnostics


def test_fix_mode_never_uses_an_entry_with_fixes_to_apply(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))  # lint fills the cache
    (outcome,) = run([path], settings, Mode(fix=True), jobs=1, cache_dir=cache_dir)
    assert outcome.fixed == 1
    assert "clip_grad_norm_(" in Path(path).read_text()


def test_second_fix_run_is_answered_from_the_cache(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    list(run([path], settings, Mode(fix=True), jobs=1, cache_dir=cache_dir))
    fixed = Path(path).read_bytes()
    _no_parsing(monkeypatch)
    (outcome,) = run([path], settings, Mode(fix=True), jobs=1, cache_dir=cache_dir)
    assert outcome.fixed == 0 and not outcome.diagnostics
    assert Path(path).read_bytes() == fixed
    (outcome,) = run([path], settings, Mode(), jobs=1, cache_dir=cache_dir)
    assert not outcome.diagnostics


def test_diff_mode_recomputes_when_there_is_a_fix(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    (outcome,) = run([path], settings, Mode(diff=True), jobs=1, cache_dir=cache_dir)
    assert "+torch.nn.utils.clip_grad_norm_(" in outcome.diff


def test_syntax_errors_are_cached_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, settings, cache_dir = _setup(tmp_path, "def f(:\n")
    (cold,) = run([path], settings, Mode(), jobs=1, cache_dir=cache_dir)
    assert [d.code for d in cold.diagnostics] == ["TL001"]
    _no_parsing(monkeypatch)
    (warm,) = run([path], settings, Mode(), jobs=1, cache_dir=cache_dir)
    assert warm.diagnostics == cold.diagnostics


def test_unwritable_cache_directory_is_not_an_error(tmp_path: Path) -> None:
    path, settings, _ = _setup(tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the cache directory should be")
    (outcome,) = run([path], settings, Mode(), jobs=1, cache_dir=blocker / "cache")
    assert outcome.diagnostics and outcome.error is None


def test_parallel_runs_fill_and_use_the_cache(tmp_path: Path) -> None:
    paths = []
    for i in range(10):
        p = tmp_path / f"m{i}.py"
        p.write_text(FINDING * (i + 1))
        paths.append(str(p))
    settings = Settings(root=str(tmp_path), select=("ALL",))
    cache_dir = tmp_path / "cache"
    cold = list(run(paths, settings, Mode(), jobs=2, cache_dir=cache_dir))
    assert len(_entries(cache_dir)) == 10
    warm = list(run(paths, settings, Mode(), jobs=2, cache_dir=cache_dir))
    assert [o.diagnostics for o in warm] == [o.diagnostics for o in cold]


def test_cli_cache_options(tmp_path: Path) -> None:
    path, _, _ = _setup(tmp_path)
    command = [sys.executable, "-m", "torchlint", "check", path, "--select", "ALL"]
    first = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert first.returncode == 1
    assert (tmp_path / ".torchlint_cache").is_dir()
    second = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path)
    assert second.stdout == first.stdout
    custom = tmp_path / "elsewhere"
    subprocess.run([*command, "--cache-dir", str(custom)], capture_output=True, cwd=tmp_path)
    assert _entries(custom)
    nocache = tmp_path / "nocache"
    nocache.mkdir()
    (nocache / "code.py").write_text(FINDING)
    result = subprocess.run([sys.executable, "-m", "torchlint", "check", "code.py",
                             "--no-cache"], capture_output=True, text=True, cwd=nocache)
    assert result.returncode == 1
    assert not (nocache / ".torchlint_cache").exists()


def test_a_cached_run_loads_neither_libcst_nor_a_rule(tmp_path: Path) -> None:
    """A run answered from the cache starts fast: libcst and the rules stay unimported, and
    so do the ignore-file and requirement parsers (discovery's answers are remembered)."""
    path, _, _ = _setup(tmp_path)
    cache_dir = tmp_path / ".torchlint_cache"  # where it usually is: a folder never walked
    (tmp_path / ".gitignore").write_text("runs/\n*.log\n")
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")
    probe = (
        "import sys\n"
        "from torchlint.cli import main\n"
        "try:\n"
        f"    main([ 'check', '.', '--cache-dir', {str(cache_dir)!r}, '-q'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "loaded = sorted(m for m in sys.modules if m in ('libcst', 'pathspec', "
        "'packaging.requirements') or m.startswith('torchlint.rules.'))\n"
        "print(code, loaded)\n"
    )
    first = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                           cwd=tmp_path, check=True)
    loaded = first.stdout.splitlines()[-1]
    assert loaded.startswith("1 ['libcst', 'packaging.requirements', 'pathspec'")  # computed
    second = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=tmp_path, check=True)
    assert "TL702" in second.stdout
    assert second.stdout.splitlines()[-1] == "1 []"


def test_plugin_metadata_is_noticed_without_importlib_metadata(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchlint import registry

    dist = tmp_path / "someplugin-1.0.dist-info"
    dist.mkdir()
    (dist / "entry_points.txt").write_text("[console_scripts]\nx = y:z\n", encoding="utf-8")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    assert not registry._may_declare_plugins()
    (dist / "entry_points.txt").write_text("[torchlint.rules]\nmine = someplugin.rules\n",
                                           encoding="utf-8")
    assert registry._may_declare_plugins()
    archive = tmp_path / "bundle.zip"
    archive.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setattr(sys, "path", [str(archive)])
    assert registry._may_declare_plugins()  # cannot look inside cheaply: ask importlib


def test_the_cache_holds_one_entry_per_file_however_often_it_changes(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    for version in range(5):
        Path(path).write_text(FINDING + f"y = {version}\n", encoding="utf-8")
        list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir))
    assert len(_entries(cache_dir)) == 1


def test_a_run_prunes_entries_of_files_it_no_longer_meets(tmp_path: Path) -> None:
    cache_dir = tmp_path / "cache"
    project = tmp_path / "project"
    paths = []
    for name in ("a.py", "b.py", "sub/c.py"):
        file = project / name
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(FINDING)
        paths.append(str(file))
    settings = Settings(root=str(project), select=("ALL",))
    list(run(paths, settings, Mode(), jobs=1, cache_dir=cache_dir, walked=[str(project)]))
    assert len(_entries(cache_dir)) == 3
    # a run over some files only (pre-commit) keeps the others' entries
    list(run(paths[:1], settings, Mode(), jobs=1, cache_dir=cache_dir, walked=[]))
    assert len(_entries(cache_dir)) == 3
    # a file deleted, a folder gone: the next run over the project drops their entries
    Path(paths[1]).unlink()
    (project / "sub" / "c.py").unlink()
    list(run(paths[:1], settings, Mode(), jobs=1, cache_dir=cache_dir, walked=[str(project)]))
    assert len(_entries(cache_dir)) == 1


def test_old_generations_go_after_a_week(tmp_path: Path) -> None:
    path, settings, cache_dir = _setup(tmp_path)
    stale = cache_dir / ("f" * 16)
    stale.mkdir(parents=True)
    (stale / "x.json").write_text("{}")
    recent = cache_dir / ("e" * 16)
    recent.mkdir()
    (recent / "last-used").write_text("")
    week_ago = os.stat(stale).st_mtime - cache_module.STALE_SECONDS - 60
    os.utime(stale, (week_ago, week_ago))
    old_layout = cache_dir / "ab"
    old_layout.mkdir()
    (old_layout / ("ab" + "0" * 62 + ".json")).write_text("{}")
    list(run([path], settings, Mode(), jobs=1, cache_dir=cache_dir, walked=[str(tmp_path)]))
    assert not stale.exists() and not old_layout.exists() and recent.exists()


def test_cache_dir_variable_and_clean(tmp_path: Path) -> None:
    path, _, _ = _setup(tmp_path)
    elsewhere = tmp_path / "from-env"
    env = dict(os.environ, TORCHLINT_CACHE_DIR=str(elsewhere))
    command = [sys.executable, "-m", "torchlint", "check", "--isolated", path]
    subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, check=False)
    assert _entries(elsewhere) and not (tmp_path / ".torchlint_cache").exists()
    subprocess.run(command, cwd=tmp_path, capture_output=True, check=False)
    assert (tmp_path / ".torchlint_cache").is_dir()
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "data.json").write_text("{}")
    done = subprocess.run([sys.executable, "-m", "torchlint", "clean"], cwd=tmp_path,
                          env=env, capture_output=True, text=True)
    assert done.returncode == 0
    assert not (tmp_path / ".torchlint_cache").exists() and not elsewhere.exists()
    assert (tmp_path / "keep" / "data.json").exists()
    again = subprocess.run([sys.executable, "-m", "torchlint", "clean"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert "No torchlint cache" in again.stderr


def test_clean_never_deletes_a_folder_torchlint_did_not_make(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.torchlint]\ncache-dir = "important"\n')
    (tmp_path / "important").mkdir()
    (tmp_path / "important" / "thesis.tex").write_text("years of work")
    subprocess.run([sys.executable, "-m", "torchlint", "clean"], cwd=tmp_path,
                   capture_output=True, check=True)
    assert (tmp_path / "important" / "thesis.tex").exists()
