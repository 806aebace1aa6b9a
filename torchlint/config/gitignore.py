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
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
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


def global_excludes_file(root: str) -> str | None:
    """git's ``core.excludesFile`` for the repository at ``root`` (asked of git itself, which
    reads every config file and include), else its default location."""
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
    ``project_top(folder)`` is where to stop looking upwards outside a repository."""

    def __init__(self, listing: Listing, project_top: Callable[[str], str]) -> None:
        self._listing = listing
        self._project_top = project_top
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
            git_dir = _git_dir(root)
            if git_dir is not None:
                found.append(_read_rules(os.path.join(git_dir, "info", "exclude"), root))
                excludes = global_excludes_file(root)
                if excludes:
                    found.append(_read_rules(excludes, root))
            self._repo_rules[root] = tuple(r for r in found if r is not None)
        return self._repo_rules[root]

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
