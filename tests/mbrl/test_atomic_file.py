"""`write_atomically`: the target holds the old file or the new one, never half of one."""

import os
import stat

import pytest

from mbrl.atomic_file import remove_temporaries, write_atomically


def test_a_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "model.bin"
    assert write_atomically(target, lambda tmp: tmp.write_bytes(b"new"))
    assert target.read_bytes() == b"new"
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]


def test_the_file_gets_the_usual_permissions_not_mkstemp_s_private_ones(tmp_path):
    target = tmp_path / "last.ckpt"
    mask = os.umask(0o022)
    try:
        write_atomically(target, lambda tmp: tmp.write_bytes(b"x"))
    finally:
        os.umask(mask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


def test_a_failing_write_keeps_the_old_file(tmp_path):
    target = tmp_path / "last.ckpt"
    target.write_bytes(b"old")

    def half_then_crash(tmp):
        tmp.write_bytes(b"ha")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomically(target, half_then_crash)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]


def test_a_writer_that_declines_keeps_the_old_file(tmp_path):
    target = tmp_path / "video.mp4"
    target.write_bytes(b"old")
    assert write_atomically(target, lambda tmp: False) is False
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["video.mp4"]


def test_temporaries_of_a_killed_write_are_removed(tmp_path):
    (tmp_path / ".last.tmp.abc123.ckpt").write_bytes(b"half")
    (tmp_path / "last.ckpt").write_bytes(b"whole")
    removed = remove_temporaries(tmp_path)
    assert [p.name for p in removed] == [".last.tmp.abc123.ckpt"]
    assert [p.name for p in tmp_path.iterdir()] == ["last.ckpt"]
