"""torchlint's own modules keep their compiled bytecode, even where
``PYTHONDONTWRITEBYTECODE`` is set.

An installed wheel has it: pip compiles a package's modules when it installs them. An
editable install (``pip install -e .``) has it only from Python's imports, which that
setting turns off, so every run would compile the same two hundred modules again: a
quarter of a second of CPU, more than linting a small project takes. At the end of a
command-line run, the modules of torchlint it imported that have no valid bytecode are
compiled with :mod:`py_compile` into their ``__pycache__`` folder, as pip would have done,
with the same atomic write Python's own imports use. Nothing else is written: no module of
another package, and nothing where the folder is not writable.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from types import ModuleType

_HEADER = 16  # magic number, flags, source mtime, source size (PEP 552)


def keep_bytecode(modules: Mapping[str, ModuleType] | None = None,
                  package: str = "torchlint") -> int:
    """Compile the modules of ``package`` among ``modules`` (the imported ones by default)
    whose bytecode is missing or out of date, when Python was told not to write it.
    Returns how many were written; never raises for a folder it cannot write."""
    if not sys.dont_write_bytecode:
        return 0  # Python's imports wrote it already
    import py_compile  # (only here: every run imports this module)

    written = 0
    for name, module in list((modules if modules is not None else sys.modules).items()):
        if name != package and not name.startswith(package + "."):
            continue
        spec = getattr(module, "__spec__", None)
        origin, cached = getattr(spec, "origin", None), getattr(spec, "cached", None)
        if not origin or not cached or not origin.endswith(".py") or _valid(origin, cached):
            continue
        try:
            py_compile.compile(origin, cfile=cached, doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue  # a read-only install, a source gone since it was imported
        written += 1
    return written


def _valid(source: str, cached: str) -> bool:
    """Does ``cached`` hold bytecode Python would load for ``source`` as it is now (the
    timestamp check of importlib; a hash-based file counts as valid, Python checks it)?"""
    from importlib.util import MAGIC_NUMBER
    try:
        stat = os.stat(source)
        with open(cached, "rb") as handle:
            header = handle.read(_HEADER)
    except OSError:
        return False
    if len(header) < _HEADER or header[:4] != MAGIC_NUMBER:
        return False
    if int.from_bytes(header[4:8], "little") != 0:
        return True
    return (int.from_bytes(header[8:12], "little") == int(stat.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == stat.st_size & 0xFFFFFFFF)
