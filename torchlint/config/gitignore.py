"""Which files git (and ripgrep-style ``.ignore`` files) would leave out, with ``pathspec``
for the pattern semantics (``GitIgnoreSpec`` replicates git's own matching).

The rules for the entries of a folder, most decisive first: its ``.ignore`` and
``.gitignore``, then those of each parent folder up to the top of the repository, then the
repository's ``.git/info/exclude``, then the global excludes file (git's
``core.excludesFile``, by default ``$XDG_CONFIG_HOME/git/ignore``). The first file with a
matching pattern decides (a ``!pattern`` re-includes). Outside a git repository the
``.gitignore`` and ``.ignore`` files are still read, from the project's folder down (the
folder of the nearest configuration, else the current directory).
As in git, a folder that is ignored is not entered, so nothing below it comes back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torchlint.config.memo import Memo, names_digest, stat_signature
from torchlint.source import read_file

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

IGNORE_FILES = (".ignore", ".gitignore")  # in one folder, .ignore wins (as ripgrep has it)

Listing = Callable[[str], frozenset[str]]


@dataclass(frozen=True)
class Rules:
    """One ignore file's patterns; paths are matched relative to ``base``."""

    spec: GitIgnoreSpec
    base: str
    source: str

    def check(self, path: str, is_dir: bool) -> bool | None:
        """True: ignored, False: re-included by a ``!pattern``, None: no pattern matched."""
        prefix = self.base.rstrip(os.sep) + os.sep
        if not path.startswith(prefix) or len(path) == len(prefix):
            return None
        relative = path[len(prefix):]
        if os.sep != "/":
            relative = relative.replace(os.sep, "/")
        return self.spec.check_file(relative + "/" if is_dir else relative).include


def _read_rules(path: str, base: str) -> Rules | None:
    try:
        # read_file: a FIFO or device is not waited on
        lines = read_file(path).decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    if not any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return None
    from pathspec import GitIgnoreSpec

    return Rules(GitIgnoreSpec.from_lines(lines), base, path)


def _git_dir(root: str) -> str | None:
    """The git directory of the work tree at ``root`` (``.git`` may be a file pointing to it,
    as in worktrees and submodules); for worktrees, the common directory."""
    dot_git = os.path.join(root, ".git")
    if os.path.isdir(dot_git):
        return dot_git
    try:
        with open(dot_git, encoding="utf-8") as handle:
            line = handle.readline().strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    git_dir = os.path.normpath(os.path.join(root, line.removeprefix("gitdir:").strip()))
    try:
        with open(os.path.join(git_dir, "commondir"), encoding="utf-8") as handle:
            return os.path.normpath(os.path.join(git_dir, handle.read().strip()))
    except OSError:
        return git_dir


def _git_config_files(root: str) -> list[str]:
    """The config files git reads for ``core.excludesFile`` (what its answer depends on)."""
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = [os.path.join(home, ".gitconfig"), os.path.join(xdg, "git", "config")]
    for variable in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"):
        if os.environ.get(variable):
            files.append(os.environ[variable])
    git_dir = _git_dir(root)
    if git_dir is not None:
        files.append(os.path.join(git_dir, "config"))
    return files


def global_excludes_file(root: str, memo: Memo | None = None) -> str | None:
    """git's ``core.excludesFile`` for the repository at ``root`` (asked of git itself, which
    reads every config file and include), else its default location. Remembered in
    ``memo`` while git's config files and the variables that point at them are unchanged."""
    signature: list[object] = []
    if memo is not None:
        variables = [os.environ.get(v, "") for v in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM",
                                                      "XDG_CONFIG_HOME", "HOME")]
        signature = [variables, stat_signature(_git_config_files(root))]
        known = memo.get(f"excludes-file:{root}", signature)
        if known is not None:
            return known or None
    found = _ask_git_for_excludes_file(root)
    if memo is not None:
        memo.put(f"excludes-file:{root}", signature, found or "")
    return found


def _ask_git_for_excludes_file(root: str) -> str | None:
    import subprocess

    try:
        answer = subprocess.run(["git", "config", "--path", "--get", "core.excludesFile"],
                                cwd=root, capture_output=True, text=True, timeout=10)
        configured = answer.stdout.strip() if answer.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        configured = ""
    if configured:
        return os.path.join(root, os.path.expanduser(configured))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "git", "ignore")


class IgnoreFiles:
    """The ignore rules of one run, read once per folder.

    ``listing(folder)`` gives a folder's entries (the walk already knows them);
    ``project_top(folder)`` is where to stop looking upwards outside a repository;
    ``memo`` keeps each folder's answers between runs (see :meth:`ignored_entries`)."""

    def __init__(self, listing: Listing, project_top: Callable[[str], str],
                 memo: Memo | None = None) -> None:
        self._listing = listing
        self._project_top = project_top
        self.memo = memo
        self._own: dict[str, tuple[Rules, ...]] = {}
        self._chains: dict[tuple[str, str], tuple[Rules, ...]] = {}
        self._repo: dict[str, str | None] = {}
        self._repo_rules: dict[str, tuple[Rules, ...]] = {}

    def repository_root(self, folder: str) -> str | None:
        """The top of the git work tree holding ``folder`` (a folder with ``.git``)."""
        if folder in self._repo:
            return self._repo[folder]
        parent = os.path.dirname(folder)
        if ".git" in self._listing(folder):
            root: str | None = folder
        elif parent == folder:
            root = None
        else:
            root = self.repository_root(parent)
        self._repo[folder] = root
        return root

    def top(self, folder: str) -> str:
        """The highest folder whose ignore files apply to ``folder``'s entries."""
        return self.repository_root(folder) or self._project_top(folder)

    def _own_rules(self, folder: str) -> tuple[Rules, ...]:
        if folder not in self._own:
            names = self._listing(folder)
            found = [_read_rules(os.path.join(folder, n), folder) for n in IGNORE_FILES
                     if n in names]
            self._own[folder] = tuple(r for r in found if r is not None)
        return self._own[folder]

    def _repository_rules(self, root: str) -> tuple[Rules, ...]:
        if root not in self._repo_rules:
            found = []
            found = [_read_rules(path, root) for path in self._repository_sources(root)]
            self._repo_rules[root] = tuple(r for r in found if r is not None)
        return self._repo_rules[root]

    def _repository_sources(self, root: str) -> list[str]:
        git_dir = _git_dir(root)
        if git_dir is None:
            return []
        sources = [os.path.join(git_dir, "info", "exclude")]
        excludes = global_excludes_file(root, self.memo)
        if excludes:
            sources.append(excludes)
        return sources

    def sources(self, folder: str, top: str | None = None) -> list[str]:
        """The ignore files :meth:`chain` reads for ``folder``, without reading them."""
        top = top if top is not None else self.top(folder)
        names = self._listing(folder)
        own = [os.path.join(folder, n) for n in IGNORE_FILES if n in names]
        parent = os.path.dirname(folder)
        if folder == top or parent == folder or not folder.startswith(
                top.rstrip(os.sep) + os.sep):
            repo = self.repository_root(folder)
            return own + (self._repository_sources(repo) if repo is not None else [])
        return own + self.sources(parent, top)

    def ignored_entries(self, folder: str, entries: list[tuple[str, bool]],
                        top: str | None = None) -> dict[str, str]:
        """Which of ``folder``'s ``entries`` (name, is a folder) the ignore files leave out,
        each with the file that does. Answered from the memo while the entries and the
        ignore files are unchanged; otherwise the patterns are compiled and matched."""
        signature: list[object] = []
        key = f"ignored:{folder}:{top or ''}"
        if self.memo is not None:
            listed = [f"{name}/" if is_dir else name for name, is_dir in entries]
            signature = [names_digest(listed), stat_signature(self.sources(folder, top))]
            known = self.memo.get(key, signature)
            if isinstance(known, dict):
                return known
        chain = self.chain(folder, top)
        answer: dict[str, str] = {}
        if chain:
            for name, is_dir in entries:
                rules = self.ignored(os.path.join(folder, name), is_dir, chain)
                if rules is not None:
                    answer[name] = rules.source
        if self.memo is not None:
            self.memo.put(key, signature, answer)
        return answer

    def chain(self, folder: str, top: str | None = None) -> tuple[Rules, ...]:
        """The rules for the entries of ``folder``, most decisive first. ``top``: stop there
        (default: :meth:`top`)."""
        top = top if top is not None else self.top(folder)
        key = (folder, top)
        if key not in self._chains:
            own = self._own_rules(folder)
            parent = os.path.dirname(folder)
            if folder == top or parent == folder or not folder.startswith(
                    top.rstrip(os.sep) + os.sep):
                repo = self.repository_root(folder)
                rest = self._repository_rules(repo) if repo is not None else ()
            else:
                rest = self.chain(parent, top)
            self._chains[key] = own + rest
        return self._chains[key]

    @staticmethod
    def ignored(path: str, is_dir: bool, chain: tuple[Rules, ...]) -> Rules | None:
        """The rules that ignore ``path`` (an entry of the folder ``chain`` belongs to)."""
        for rules in chain:
            decision = rules.check(path, is_dir)
            if decision is not None:
                return rules if decision else None
        return None
