"""Append-only JSON-lines logs that survive a run killed mid-append.

A record is one line, and a line is whole only once its newline is on disk. A kill -9 during an
append can leave a last line without its newline: `read_records` skips it (that record was
never finished), and the next `append_records` cuts it off first, so a later record never
merges into a torn one. A malformed line that is not the last is real damage and raises,
naming the file and the line. Evaluation logs, a text run's ``rounds.jsonl`` and the
benchmarks' result files all go through here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from mbrl.atomic_file import write_atomically

_CHUNK = 1 << 16


def append_records(path: str | Path, records: Iterable[dict]) -> None:
    """Append one line per record (after cutting off a torn last line), flushed to disk."""
    path = Path(path)
    text = _lines(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab+") as file:
        _cut_torn_tail(file)
        file.write(text)
        file.flush()
        os.fsync(file.fileno())


def rewrite_records(path: str | Path, records: Iterable[dict]) -> None:
    """Replace ``path``'s records with ``records``, atomically (a resume that knows better)."""
    text = _lines(records)
    write_atomically(Path(path), lambda tmp: tmp.write_bytes(text))


def read_records(path: str | Path) -> list[dict]:
    """Every whole record of ``path`` (none if it does not exist), a torn last line skipped."""
    path = Path(path)
    if not path.exists():
        return []
    *whole, _torn_or_empty = path.read_text().split("\n")
    records = []
    for number, line in enumerate(whole, start=1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}, line {number}: not a JSON record ({error.msg})") from None
    return records


def _lines(records: Iterable[dict]) -> bytes:
    return "".join(json.dumps(record) + "\n" for record in records).encode()


def _cut_torn_tail(file) -> None:
    """Truncate ``file`` (opened for appending and reading) after its last newline."""
    size = file.seek(0, os.SEEK_END)
    end = size
    while end > 0:
        start = max(0, end - _CHUNK)
        file.seek(start)
        chunk = file.read(end - start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    if end < size:
        file.truncate(end)
