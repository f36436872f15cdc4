"""Replay: finished episodes stored position by position, sampled as unroll targets."""

from mbrl.replay.episodes import Episode, EpisodeReplay, Unroll

__all__ = ["Episode", "EpisodeReplay", "Unroll"]
