"""Files written whole or not at all: `write_atomically` writes to a temporary file next to the
target, flushes it to disk and renames it over the target, so a reader (or a run killed
mid-write) sees the old file or the new one, never half of one. Checkpoints, exported models
and evaluation videos all go through it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

# The temporary files (".last.tmp.x1y2.ckpt"), left behind only by a killed write. They keep the
# target's suffix because some writers (OpenCV's video writer) choose the format by it.
TEMPORARY_PATTERN = ".*.tmp.*"


def write_atomically(path: Path, write: Callable[[Path], object]) -> bool:
    """Run ``write(tmp)`` on a fresh temporary file in ``path``'s directory, then rename it over
    ``path``. If ``write`` returns False (it could not write this format) the target is left as
    it was and the result is False; if it raises, the temporary file is removed and the error
    goes on."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(
        prefix=f".{path.stem}.tmp.", suffix=path.suffix, dir=path.parent
    )
    os.close(handle)
    tmp = Path(name)
    try:
        if write(tmp) is False:
            return False
        with open(tmp, "rb+") as file:  # on disk before the rename makes it visible
            os.fsync(file.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the file from a group
        os.replace(tmp, path)
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def remove_temporaries(directory: Path) -> list[Path]:
    """Delete the temporary files a killed `write_atomically` left in ``directory``."""
    leftovers = sorted(Path(directory).glob(TEMPORARY_PATTERN))
    for path in leftovers:
        path.unlink(missing_ok=True)
    return leftovers


def check_file_target(path: str | os.PathLike, label: str, hint: str = ", not a file") -> Path:
    """``path``, after refusing one that no file can be written to: a directory (``label`` is
    a directory``hint``), or a path under a file. Commands call it before their work, so that
    a bad output path is refused before minutes of games or an export, not after."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{label} is a directory{hint}")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise NotADirectoryError(f"{label}: {parent} is a file, not a directory")
            break
    return path
