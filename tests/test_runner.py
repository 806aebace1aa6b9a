"""The runner: worker processes, output order, errors confined to their file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchlint.config.settings import Settings
from torchlint.run import file as run_file
from torchlint.run import runner
from torchlint.run.outcome import FileOutcome, Mode
from torchlint.run.runner import run

FINDING = "import torch\ntorch.nn.utils.clip_grad_norm(model.parameters(), 1.0)\n"


def _tree(root: Path, count: int = 12) -> list[str]:
    paths = []
    for i in range(count):
        path = root / f"pkg{i % 3}" / f"m{i:02}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        body = FINDING * (i % 4 + 1) + "y = 1\n" * (i * 37)  # different sizes, different order
        path.write_text(body, encoding="utf-8")
        paths.append(str(path))
    return sorted(paths)


def _settings(root: Path) -> Settings:
    return Settings(root=str(root), select=("ALL",))


def _key(outcomes: list[FileOutcome]) -> list[tuple[str, list[tuple[int, int, str]], str | None]]:
    return [(o.path, [(d.line, d.column, d.code) for d in o.diagnostics], o.error)
            for o in outcomes]


def test_same_outcomes_in_the_same_order_for_any_jobs(tmp_path: Path) -> None:
    paths = _tree(tmp_path)
    settings = _settings(tmp_path)
    serial = list(run(paths, settings, Mode(), jobs=1))
    assert [o.path for o in serial] == paths
    assert all(o.diagnostics for o in serial)
    for jobs in (2, 3, 8):
        assert _key(list(run(paths, settings, Mode(), jobs=jobs))) == _key(serial)


def test_parallel_run_uses_worker_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    paths = _tree(tmp_path)
    seen: list[int] = []
    original = runner._run_parallel

    def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        seen.append(1)
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(runner, "_run_parallel", spy)
    list(run(paths, _settings(tmp_path), Mode(), jobs=2))
    assert seen
    seen.clear()
    list(run(paths[:2], _settings(tmp_path), Mode(), jobs=2))  # a small run stays here
    assert not seen


def test_workers_fork_with_what_is_loaded_kept_out_of_the_collector(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gc
    from concurrent.futures import ProcessPoolExecutor

    paths = _tree(tmp_path)
    original = ProcessPoolExecutor.submit
    at_fork: list[int] = []

    def submit(self, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        at_fork.append(gc.get_freeze_count())  # the workers fork at the first submit
        return original(self, fn, *args, **kwargs)

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit)
    before = gc.get_freeze_count()
    outcomes = list(run(paths, _settings(tmp_path), Mode(), jobs=2))
    assert all(o.diagnostics for o in outcomes)
    assert at_fork and at_fork[0] > before
    assert gc.get_freeze_count() == before  # given back to the collector afterwards


def test_duplicate_paths_keep_their_places(tmp_path: Path) -> None:
    paths = _tree(tmp_path, 5)
    doubled = paths + paths[:2]
    outcomes = list(run(doubled, _settings(tmp_path), Mode(), jobs=2))
    assert [o.path for o in outcomes] == doubled


def test_parallel_fix_matches_serial_fix(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    paths_one, paths_two = _tree(one), _tree(two)
    a = list(run(paths_one, _settings(one), Mode(fix=True), jobs=1))
    b = list(run(paths_two, _settings(two), Mode(fix=True), jobs=2))
    assert [o.fixed for o in a] == [o.fixed for o in b]
    for p, q in zip(paths_one, paths_two):
        assert Path(p).read_bytes() == Path(q).read_bytes()
    assert "clip_grad_norm_(" in Path(paths_one[0]).read_text()


def test_a_crash_in_the_engine_is_one_line_for_that_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _tree(tmp_path, 3)
    original = run_file.lint_one

    def flaky(source, settings, mode):  # type: ignore[no-untyped-def]
        if source.path == paths[1]:
            raise ValueError("boom")
        return original(source, settings, mode)

    monkeypatch.setattr(run_file, "lint_one", flaky)
    outcomes = list(run(paths, _settings(tmp_path), Mode(), jobs=1))
    assert outcomes[0].diagnostics and outcomes[2].diagnostics
    assert outcomes[1].error is not None and "ValueError: boom" in outcomes[1].error
    assert "\n" not in outcomes[1].error


def test_a_dying_worker_costs_only_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    if "fork" not in __import__("multiprocessing").get_all_start_methods():
        pytest.skip("needs fork to patch the workers")
    paths = _tree(tmp_path, 8)
    victim = paths[3]
    original = runner._guarded

    def dying(path, *args):  # type: ignore[no-untyped-def]
        if path == victim:
            os._exit(3)
        return original(path, *args)

    monkeypatch.setattr(runner, "_guarded", dying)
    outcomes = list(run(paths, _settings(tmp_path), Mode(), jobs=2))
    assert [o.path for o in outcomes] == paths
    by_path = {o.path: o for o in outcomes}
    assert by_path[victim].error and "died" in by_path[victim].error
    assert all(by_path[p].diagnostics for p in paths if p != victim)


def test_cli_output_is_identical_for_any_jobs(tmp_path: Path) -> None:
    _tree(tmp_path, 10)
    outputs = set()
    for jobs in ("1", "2", "4"):
        result = subprocess.run(
            [sys.executable, "-m", "torchlint", "check", str(tmp_path), "--no-cache",
             "--select", "ALL", "--jobs", jobs], capture_output=True, text=True)
        assert result.returncode == 1, result.stderr
        outputs.add(result.stdout)
    assert len(outputs) == 1
