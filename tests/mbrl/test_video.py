"""Episode videos: mp4 round trip, the GIF fallback, input checks and Atari recording."""

import sys

import cv2
import numpy as np
import pytest

from games.atari import AtariEnv, AtariSettings
from mbrl.evaluation import video
from mbrl.evaluation.video import record_episode, write_video


def _frames(count=10, height=210, width=160):
    frames = np.zeros((count, height, width, 3), np.uint8)
    for i in range(count):
        frames[i, :, : 10 * (i + 1)] = 200
    return list(frames)


def _read_back(path):
    capture = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(frame)
    capture.release()
    return frames


def test_write_video_round_trip(tmp_path):
    path = write_video(_frames(), tmp_path / "episode.mp4", fps=15)
    assert path == tmp_path / "episode.mp4"
    frames = _read_back(path)
    assert len(frames) == 10 and frames[0].shape == (210, 160, 3)
    assert [p.name for p in tmp_path.iterdir()] == ["episode.mp4"]  # no temporary left behind


def test_write_video_keeps_rgb_order(tmp_path):
    red = np.zeros((64, 64, 3), np.uint8)
    red[..., 0] = 255
    (frame,) = _read_back(write_video([red], tmp_path / "red.mp4"))
    blue, green, red_channel = frame[32, 32]  # OpenCV reads BGR
    assert red_channel > 200 and blue < 50 and green < 50


def test_write_video_overwrites_atomically(tmp_path):
    path = tmp_path / "episode.mp4"
    write_video(_frames(3), path)
    write_video(_frames(5), path)
    assert len(_read_back(path)) == 5
    assert [p.name for p in tmp_path.iterdir()] == ["episode.mp4"]


class _ClosedWriter:
    def __init__(self, *args):
        pass

    def isOpened(self):
        return False

    def release(self):
        pass


def test_falls_back_to_gif_when_opencv_cannot_open_the_writer(tmp_path, monkeypatch):
    image = pytest.importorskip("PIL.Image")
    monkeypatch.setattr(video.cv2, "VideoWriter", _ClosedWriter)
    path = write_video(_frames(), tmp_path / "episode.mp4")
    assert path == tmp_path / "episode.gif"
    with image.open(path) as gif:
        assert gif.n_frames == 10 and gif.size == (160, 210)
    assert [p.name for p in tmp_path.iterdir()] == ["episode.gif"]


def test_gif_fallback_without_pillow_raises_clearly(tmp_path, monkeypatch):
    monkeypatch.setattr(video.cv2, "VideoWriter", _ClosedWriter)
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(RuntimeError, match="Pillow"):
        write_video(_frames(2), tmp_path / "episode.mp4")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("frames", "message"),
    [
        ([], "empty"),
        ([np.zeros((8, 8, 3), np.float32)], "float32"),
        ([np.zeros((8, 8), np.uint8)], r"\(8, 8\)"),
        ([np.zeros((8, 8, 4), np.uint8)], r"\(8, 8, 4\)"),
        ([np.zeros((8, 8, 3), np.uint8), np.zeros((8, 9, 3), np.uint8)], "same shape"),
    ],
)
def test_write_video_rejects_bad_frames(tmp_path, frames, message):
    with pytest.raises(ValueError, match=message):
        write_video(frames, tmp_path / "bad.mp4")
    assert list(tmp_path.iterdir()) == []


def test_write_video_rejects_bad_path_or_fps(tmp_path):
    with pytest.raises(ValueError, match=r"\.avi"):
        write_video(_frames(1), tmp_path / "episode.avi")
    with pytest.raises(ValueError, match="fps"):
        write_video(_frames(1), tmp_path / "episode.mp4", fps=0)


def test_record_episode_keeps_the_raw_screen_after_every_step():
    env = AtariEnv(AtariSettings(game="pong"), batch_size=1, seed=0)

    def noop(timestep):
        return np.zeros(1, np.int64)

    frames, total_reward = record_episode(env, noop, seed=0, max_steps=20)
    assert len(frames) == 20
    assert all(f.shape == (210, 160, 3) and f.dtype == np.uint8 for f in frames)
    assert isinstance(total_reward, float)
    again, _ = record_episode(env, noop, seed=0, max_steps=20)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again, strict=True))
    with pytest.raises(ValueError, match="batch_size 1"):
        record_episode(
            AtariEnv(AtariSettings(game="pong"), batch_size=2), noop, seed=0, max_steps=1
        )
