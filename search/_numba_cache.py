"""Keeps numba's on-disk cache honest.

numba invalidates a cached kernel only when *its own* source file changes, not when a function
it inlines from another file does; a stale kernel would silently run old semantics. So the
cache files of this package are dropped whenever any of its sources change.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def invalidate_if_sources_changed() -> None:
    digest = hashlib.sha256()
    for source in sorted(_PACKAGE_DIR.glob("*.py")):
        digest.update(source.name.encode())
        digest.update(source.read_bytes())
    stamp = _PACKAGE_DIR / "__pycache__" / "numba_sources.sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return
        stamp.parent.mkdir(exist_ok=True)
        for cached in stamp.parent.glob("*.nb[ic]"):
            cached.unlink(missing_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:  # read-only install: numba falls back to its own cache directory
        pass
