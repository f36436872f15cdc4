"""EfficientZero's Atari-100k protocol as one dataclass: the ``game.atari`` config group and the
settings `games.atari.AtariEnv` runs with (`games.atari.AtariSettings` adds the game and the
mode). Kept apart from ``atari.py`` so that the config schema does not import ale-py."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class AtariProtocol:
    frame_skip: int = 4
    repeat_action_probability: float = 0.0  # sticky actions; 0.25 in the sticky preset
    noop_max: int = 30
    resolution: int = 96
    grayscale: bool = False
    frame_stack: int = 4
    terminal_on_life_loss: bool = True  # in training only
    clip_rewards: bool = True  # in training only
    max_episode_frames: int = 108_000
    full_action_space: bool = False

    def __post_init__(self) -> None:
        checks = {
            "frame_skip": self.frame_skip >= 1,
            "repeat_action_probability": 0.0 <= self.repeat_action_probability <= 1.0,
            "noop_max": self.noop_max >= 0,
            "resolution": self.resolution >= 1,
            "frame_stack": self.frame_stack >= 1,
            "max_episode_frames": self.max_episode_frames >= 1,
        }
        for field, ok in checks.items():
            if not ok:
                raise ValueError(f"invalid game.atari.{field}: {getattr(self, field)!r}")
