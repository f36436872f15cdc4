"""Videos of played episodes, to see what a policy does rather than only what it scores.

``write_video`` writes an MPEG-4 (``mp4v``) file with OpenCV, already a dependency; only when
OpenCV cannot open that writer (a build without a video backend) does it fall back to an animated
GIF with Pillow. Files are written to a temporary name in the target folder and renamed into
place, so a reader never sees a half-written video. ``record_episode`` plays one Atari episode and
keeps the emulator's raw 210x160 RGB screen after every agent step, not the agent's 96x96 stacks.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import cv2
import numpy as np

from games import TimeStep
from mbrl.atomic_file import check_file_target, write_atomically

log = logging.getLogger(__name__)

_SUFFIXES = (".mp4", ".gif")


def _check_frames(frames: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The frames as a list of ``uint8 [H, W, 3]`` arrays of one shape, or a ValueError."""
    if len(frames) == 0:
        raise ValueError("no frames to write: got an empty sequence; need at least one frame")
    checked = []
    for i, frame in enumerate(frames):
        frame = np.asarray(frame)
        if frame.dtype != np.uint8 or frame.ndim != 3 or frame.shape[2] != 3:
            raise ValueError(
                f"frame {i} has shape {frame.shape} and dtype {frame.dtype}; frames must be "
                "uint8 RGB arrays of shape (H, W, 3)"
            )
        if checked and frame.shape != checked[0].shape:
            raise ValueError(
                f"frame {i} has shape {frame.shape} but frame 0 has {checked[0].shape}; all "
                "frames must have the same shape"
            )
        checked.append(frame)
    return checked


def check_video_path(path: str | os.PathLike) -> Path:
    """``path``, after refusing one that cannot take a video (checked before recording)."""
    path = Path(path)
    if path.suffix.lower() not in _SUFFIXES:
        raise ValueError(f"video path must end in .mp4 or .gif, got {str(path)!r}")
    return check_file_target(path, f"video path {str(path)!r}")


def write_video(frames: Sequence[np.ndarray], path: str | os.PathLike, fps: float = 30) -> Path:
    """Write RGB ``frames`` (each ``uint8 [H, W, 3]``) to ``path`` (``.mp4`` or ``.gif``) at
    ``fps`` frames per second; returns the path written, which ends in ``.gif`` when an ``.mp4``
    was asked for but OpenCV could not open an ``mp4v`` writer."""
    frames = _check_frames(frames)
    path = check_video_path(path)
    if not fps > 0:
        raise ValueError(f"fps must be > 0, got {fps}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() == ".mp4":
        if write_atomically(path, lambda tmp: _write_mp4(frames, tmp, fps)):
            return path
        log.warning("OpenCV could not open an mp4v writer for %s; writing a GIF instead", path)
        path = path.with_suffix(".gif")
    write_atomically(path, lambda tmp: _write_gif(frames, tmp, fps))
    return path


def _write_mp4(frames: list[np.ndarray], tmp: Path, fps: float) -> bool:
    height, width = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(tmp), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
    try:
        if not writer.isOpened():
            return False
        for frame in frames:
            writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))  # OpenCV writes BGR
    finally:
        writer.release()
    return True


def _write_gif(frames: list[np.ndarray], tmp: Path, fps: float) -> None:
    try:
        from PIL import Image
    except ImportError as error:
        raise RuntimeError(
            f"cannot write {tmp.name}: OpenCV has no mp4v video writer here and Pillow, needed "
            "for the GIF fallback, is not installed; install pillow or an OpenCV build with FFmpeg"
        ) from error
    images = [Image.fromarray(frame) for frame in frames]
    duration_ms = max(10, round(1000 / fps))  # GIF delays are in 10 ms steps
    images[0].save(
        tmp, format="GIF", save_all=True, append_images=images[1:], duration=duration_ms, loop=0
    )


def record_episode(
    env, act: Callable[[TimeStep], np.ndarray], *, seed: int, max_steps: int
) -> tuple[list[np.ndarray], float]:
    """Play one episode of a ``games.atari.AtariEnv`` with ``batch_size`` 1 until it ends or
    ``max_steps`` agent steps; ``act(timestep) -> actions [1]``.

    Returns the raw RGB screen after every agent step (``uint8 [210, 160, 3]`` each, the reset
    screen not included) and the summed reward. The reward is the env's: clipped, and the episode
    cut at a life loss, unless the env uses evaluation settings (``settings.evaluation()``).
    """
    if env.batch_size != 1:
        raise ValueError(f"record_episode needs an env with batch_size 1, got {env.batch_size}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps}")
    timestep = env.reset(seeds=[seed])
    frames = []
    total_reward = 0.0
    for _ in range(max_steps):
        timestep = env.step(act(timestep))
        total_reward += float(timestep.reward[0])
        frames.append(env.ales[0].getScreenRGB())
        if timestep.done[0]:
            break
    return frames, total_reward
