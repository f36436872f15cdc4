"""Replay: position storage, sampling with priorities, and target building."""

from mbrl.replay.buffer import ReplayBuffer, Sample

__all__ = ["ReplayBuffer", "Sample"]
