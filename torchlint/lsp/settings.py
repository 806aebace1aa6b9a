"""What the editor says (``initializationOptions``, ``workspace/didChangeConfiguration``)
and the settings each document is linted with.

Editor settings (camelCase, all optional)::

    select, extendSelect, ignore   rule codes or prefixes, as on the command line
    preview                        run the preview rules
    unsafeFixes                    "fix all" also applies unsafe fixes
    configuration                  a pyproject.toml to use, or an inline [tool.torchlint] table
    configurationPreference        filesystemFirst (default) | editorFirst | editorOnly
    lintOnChange                   lint as you type (default) or only on open and save
    lintDelay                      seconds of quiet after an edit before linting (0.3)
    severity                       {"TL001": "error", "TL3": "information", ...}
    documentationUrl               a rule's page, with {code} and {name}: links the codes
    args                           options as for ``torchlint check`` (--select, --ignore,
                                   --extend-select, --preview, --unsafe-fixes, --config);
                                   the settings above win over them

``configurationPreference`` says who wins, as in Ruff's server: ``filesystemFirst`` uses
the project's ``[tool.torchlint]`` when there is one (the editor's lint settings apply to
files without a project configuration); ``editorFirst`` applies the editor's settings on
top of the project's, like command-line options; ``editorOnly`` ignores configuration
files (except ``configuration``).
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from torchlint.config.errors import ConfigError
from torchlint.config.loading import resolve_settings
from torchlint.config.selectors import validate_selectors
from torchlint.config.settings import Settings

# seconds of quiet after an edit before linting: typing bursts cost one lint
LINT_DELAY = 0.3
MAX_LINT_DELAY = 10.0
PREFERENCES = ("filesystemFirst", "editorFirst", "editorOnly")
SEVERITIES = ("error", "warning", "information", "hint")
KEYS = ("select", "extendSelect", "ignore", "preview", "unsafeFixes", "configuration",
        "configurationPreference", "lintOnChange", "lintDelay", "severity", "documentationUrl", "args")
# the options of ``torchlint check`` that ``args`` may hold, and the settings they set
ARGS = {"--select": "select", "--extend-select": "extendSelect", "--ignore": "ignore",
        "--config": "configuration"}
FLAGS = {"--preview": ("preview", True), "--no-preview": ("preview", False),
         "--unsafe-fixes": ("unsafeFixes", True)}


@dataclass(frozen=True)
class EditorSettings:
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    preview: bool | None = None
    unsafe_fixes: bool = False
    configuration: str | tuple[tuple[str, Any], ...] | None = None  # a path or a table
    configuration_preference: str = "filesystemFirst"
    lint_on_change: bool = True
    lint_delay: float = LINT_DELAY
    severity: tuple[tuple[str, str], ...] = ()
    documentation_url: str | None = None
    workspace: str | None = None  # the folder these settings are for (None: global)

    def severity_of(self, code: str) -> str:
        """The configured severity of ``code`` (the longest matching prefix decides);
        a syntax error is an error and a finding a warning unless configured."""
        best = ("", "error" if code == "TL001" else "warning")
        for prefix, level in self.severity:
            if code.upper().startswith(prefix.upper()) and len(prefix) > len(best[0]):
                best = (prefix, level)
        return best[1]

    def documentation_link(self, code: str, name: str) -> str | None:
        if not self.documentation_url:
            return None
        return self.documentation_url.replace("{code}", code).replace(
            "{code_lower}", code.lower()).replace("{name}", name)


def _strings(value: Any, key: str, problems: list[str]) -> tuple[str, ...] | None:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(f"'{key}' must be a list of rule codes")
        return None
    kept = []
    for selector in value:
        try:
            validate_selectors([selector], f"the editor setting '{key}'")
        except ConfigError as exc:
            problems.append(str(exc))  # the others still apply
            continue
        kept.append(selector)
    if key == "select" and not kept:
        # an empty selection would switch every rule off: never what a typo meant
        problems.append("'select' names no known rule: with it every rule would be off, so "
                        "the selection stays as it was")
        return None
    return tuple(kept)


def parse_settings(raw: Any, base: EditorSettings | None = None,
                   workspace: str | None = None) -> tuple[EditorSettings, list[str]]:
    """Editor settings from the client's JSON (on top of ``base``), and what was wrong
    with it (each problem is skipped; the rest applies)."""
    settings = base or EditorSettings()
    problems: list[str] = []
    if raw is None:
        return replace(settings, workspace=workspace), problems
    if not isinstance(raw, dict):
        return settings, ["the settings must be an object"]
    values: dict[str, Any] = {"workspace": workspace}
    if "args" in raw:  # the other settings win over the options
        raw = {**_from_args(raw["args"], problems),
               **{key: value for key, value in raw.items() if value is not None}}
    for key, value in raw.items():
        if value is None or key in ("workspace", "args"):
            continue
        if key in ("select", "extendSelect", "ignore"):
            codes = _strings(value, key, problems)
            if codes is not None:
                values[{"select": "select", "extendSelect": "extend_select",
                        "ignore": "ignore"}[key]] = codes
        elif key in ("preview", "unsafeFixes", "lintOnChange"):
            if isinstance(value, bool):
                values[{"preview": "preview", "unsafeFixes": "unsafe_fixes",
                        "lintOnChange": "lint_on_change"}[key]] = value
            else:
                problems.append(f"'{key}' must be true or false")
        elif key == "lintDelay":
            if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    0 <= value <= MAX_LINT_DELAY:
                values["lint_delay"] = float(value)
            else:
                problems.append(f"'lintDelay' must be a number of seconds from 0 to "
                                f"{MAX_LINT_DELAY:g}")
        elif key == "configuration":
            if isinstance(value, str) and value.strip():
                values["configuration"] = value
            elif isinstance(value, dict):
                values["configuration"] = _frozen(value)
            else:
                problems.append("'configuration' must be a file path or a table of settings")
        elif key == "configurationPreference":
            if value in PREFERENCES:
                values["configuration_preference"] = value
            else:
                problems.append(f"'configurationPreference' must be one of {', '.join(PREFERENCES)}")
        elif key == "severity":
            if isinstance(value, dict) and all(isinstance(k, str) and v in SEVERITIES
                                               for k, v in value.items()):
                values["severity"] = tuple(value.items())
            else:
                problems.append(f"'severity' maps codes or prefixes to one of "
                                f"{', '.join(SEVERITIES)}")
        elif key == "documentationUrl":
            if isinstance(value, str):
                values["documentation_url"] = value or None
            else:
                problems.append("'documentationUrl' must be a string")
        else:
            problems.append(f"unknown setting {key!r} (known: {', '.join(KEYS)})")
    return replace(settings, **values), problems


def _from_args(args: Any, problems: list[str]) -> dict[str, Any]:
    """The settings that command-line options say (``["--select", "TL3", "--preview"]``)."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        problems.append("'args' must be a list of strings")
        return {}
    found: dict[str, Any] = {}
    items = iter(args)
    for arg in items:
        option, equals, value = arg.partition("=")
        if option in ARGS:
            value = value if equals else next(items, "")
            if not value:
                problems.append(f"'args': {option} needs a value")
            elif option == "--config":
                found["configuration"] = value
            else:
                key = ARGS[option]
                found[key] = found.get(key, []) + [
                    code.strip() for code in value.split(",") if code.strip()]
        elif arg in FLAGS:
            key, flag = FLAGS[arg]
            found[key] = flag
        else:
            problems.append(f"'args': {arg!r} is not an option the server takes (it takes "
                            f"{', '.join([*ARGS, *FLAGS])})")
    return found


def _frozen(table: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    def freeze(value: Any) -> Any:
        if isinstance(value, dict):
            return tuple((k, freeze(v)) for k, v in value.items())
        if isinstance(value, list):
            return tuple(freeze(v) for v in value)
        return value

    return tuple((key, freeze(value)) for key, value in table.items())


def _thawed(frozen: Any) -> Any:
    if isinstance(frozen, tuple) and all(isinstance(p, tuple) and len(p) == 2
                                         and isinstance(p[0], str) for p in frozen):
        return {key: _thawed(value) for key, value in frozen}
    if isinstance(frozen, tuple):
        return [_thawed(v) for v in frozen]
    return frozen


@dataclass
class ClientSettings:
    """The editor's settings: global ones, and per workspace folder."""

    global_settings: EditorSettings = field(default_factory=EditorSettings)
    folders: list[EditorSettings] = field(default_factory=list)

    @classmethod
    def from_options(cls, options: Any) -> tuple[ClientSettings, list[str]]:
        """From ``{"settings": {...}}``, ``{"globalSettings": {...}, "settings": [{...,
        "workspace": uri}]}`` (Ruff's shapes), ``{"torchlint": {...}}`` or the settings
        themselves."""
        if isinstance(options, dict) and isinstance(options.get("torchlint"), dict):
            options = options["torchlint"]
        if not isinstance(options, dict):
            return cls(), [] if options is None else ["the settings must be an object"]
        problems: list[str] = []
        if "settings" not in options and "globalSettings" not in options:
            found, problems = parse_settings(options)
            return cls(found), problems
        base, problems = parse_settings(options.get("globalSettings"))
        folders: list[EditorSettings] = []
        settings = options.get("settings")
        if isinstance(settings, list):
            for entry in settings:
                if isinstance(entry, dict):
                    workspace = entry.get("workspace")
                    folder, more = parse_settings(entry, base, workspace if isinstance(
                        workspace, str) else None)
                    problems += more
                    folders.append(folder)
        else:
            base, more = parse_settings(settings, base)
            problems += more
        return cls(base, folders), problems

    def for_path(self, path: str) -> EditorSettings:
        """The settings of the innermost workspace folder holding ``path``."""
        from pygls.uris import to_fs_path

        best: EditorSettings | None = None
        best_length = -1
        for folder in self.folders:
            root = to_fs_path(folder.workspace) if folder.workspace else None
            if root and _inside(path, root) and len(root) > best_length:
                best, best_length = folder, len(root)
        return best or self.global_settings


def _inside(path: str, root: str) -> bool:
    try:
        Path(path).resolve().relative_to(Path(root).resolve())
    except (ValueError, OSError):
        return False
    return True


class Resolver:
    """The settings a document is linted with: the project's configuration and the
    editor's, combined as ``configurationPreference`` says."""

    def __init__(self) -> None:
        self._inline_dir: tempfile.TemporaryDirectory[str] | None = None
        self.editor_ignored = False  # the last settings are the project's alone

    def settings(self, path: str, editor: EditorSettings, root: str | None) -> Settings:
        """Raises ConfigError for a bad configuration."""
        start = Path(path)
        self.editor_ignored = False
        explicit = self._configuration_file(editor, root)
        preference = editor.configuration_preference
        if preference == "filesystemFirst":
            project = resolve_settings(start)
            if project.config_file is not None:
                self.editor_ignored = True
                return project
        elif preference == "editorOnly" and explicit is None:
            explicit = self._inline_file({}, root)
        try:
            settings = resolve_settings(start, config=explicit, select=editor.select,
                                        ignore=editor.ignore,
                                        extend_select=editor.extend_select,
                                        preview=editor.preview)
        except ConfigError as exc:
            if self._inline_dir is not None and self._inline_dir.name in str(exc):
                # name the setting, not the file it was written to
                raise ConfigError(re.sub(rf"{re.escape(self._inline_dir.name)}\S*",
                                         "the editor setting 'configuration'", str(exc))
                                  ) from None
            raise
        if isinstance(editor.configuration, tuple):  # globs are relative to the folder
            settings = replace(settings, root=str(Path(root or start.parent)))
        return settings

    def fallback(self, path: str, editor: EditorSettings, root: str | None) -> Settings:
        """The settings when the configuration cannot be read (as Ruff's server does):
        the defaults, with the editor's own selection on top."""
        return self.settings(path, replace(editor, configuration=None,
                                           configuration_preference="editorOnly"), root)

    def is_inline(self, file: str) -> bool:
        """Whether ``file`` holds the editor's inline ``configuration`` (or none)."""
        return self._inline_dir is not None and file.startswith(self._inline_dir.name)

    def describe(self, settings: Settings, editor: EditorSettings) -> str:
        """Where ``settings`` (the last ones :meth:`settings` gave) come from, in words:
        the configuration file (or the defaults) and the editor settings on top."""
        source = settings.config_file or "the default settings"
        if self.is_inline(source):
            source = ("the editor setting 'configuration'" if editor.configuration
                      else "the default settings")
        if self.editor_ignored:
            return f"{source} (the editor's lint settings are not used: " \
                "configurationPreference is filesystemFirst)"
        applied = [f"{label} {', '.join(codes)}" for label, codes in (
            ("select", editor.select), ("extendSelect", editor.extend_select),
            ("ignore", editor.ignore)) if codes]
        if editor.preview is not None:
            applied.append(f"preview {str(editor.preview).lower()}")
        return source + (f" with the editor's {'; '.join(applied)}" if applied else "")

    def _configuration_file(self, editor: EditorSettings, root: str | None) -> Path | None:
        configuration = editor.configuration
        if configuration is None:
            return None
        if isinstance(configuration, str):
            file = Path(configuration).expanduser()
            if not file.is_absolute() and root:
                file = Path(root) / file
            if not file.is_file():
                raise ConfigError(f"the editor setting 'configuration' names {file}, "
                                  "which is not a file")
            return file
        return self._inline_file(_thawed(configuration), root)

    def _inline_file(self, table: dict[str, Any], root: str | None) -> Path:
        """An inline table, written as a pyproject.toml the configuration loader reads (so
        it is checked exactly as a file would be)."""
        import tomli_w

        try:
            text = tomli_w.dumps({"tool": {"torchlint": table}})
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the editor setting 'configuration': {exc}") from None
        if self._inline_dir is None:
            self._inline_dir = tempfile.TemporaryDirectory(prefix="torchlint-editor-")
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        folder = Path(self._inline_dir.name) / digest
        folder.mkdir(exist_ok=True)
        file = folder / "pyproject.toml"
        if not file.exists():
            file.write_text(text, encoding="utf-8")
        return file
