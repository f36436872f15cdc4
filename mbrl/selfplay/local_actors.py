"""The embedded backend's actors: one self-play actor in the learner's process.

Every backend offers the data module the same few calls (``RayActors`` in
``mbrl.distributed`` is the other): ``publish`` the learner's weights, ``collect`` (play until
at least one more batch of moves has been delivered), ``poll`` (take what is ready without
waiting), counters, and the checkpoint state. Finished episodes go to ``deliver``, which the
data module sets to its replay's ``add``; the positions of the search trees (only here,
``algo.tree_value_weight``) go to ``deliver_tree_nodes``, and ``search_positions`` searches
from positions the learner picks.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import torch

from mbrl.selfplay.actor import SelfPlayActor


class LocalActors:
    asynchronous = False  # moves are played only when the learner needs them

    def __init__(self, actor: SelfPlayActor, network: torch.nn.Module):
        self.actor = actor
        self.network = network  # the actor's copy of the learner's network
        self.deliver: Callable = lambda episodes: None
        self.deliver_tree_nodes: Callable = lambda nodes: None

    @property
    def moves_played(self) -> int:
        return self.actor.moves_played

    def to(self, device) -> None:
        self.network.to(device)

    def publish(self, learner_network: torch.nn.Module) -> None:
        self.network.load_state_dict(learner_network.state_dict())

    def collect(self, needed: int, temperature: float) -> None:
        """One step of every game."""
        self.actor.temperature = temperature
        self.deliver(self.actor.step())
        tree_nodes = self.actor.take_tree_nodes()
        if tree_nodes is not None:
            self.deliver_tree_nodes(tree_nodes)

    def search_positions(self, states: list, keys: int):
        return self.actor.search_positions(states, keys)

    def poll(self, needed: int, temperature: float) -> None:
        """Nothing plays in the background here."""

    def counters(self) -> dict[str, float]:
        return {**self.actor.counters(), **self.actor.timings()}

    def take_returns(self) -> list[float]:
        returns, self.actor.returns = self.actor.returns, []
        return returns

    def stats(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        pass

    # The keys of the embedded loop's checkpoints since the first one: a run moves between
    # backends (the Ray backend writes the same two, plus its other actors).
    def state_dict(self) -> dict:
        return {"actor_network": self.network.state_dict(), "actor": self.actor.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.network.load_state_dict(state["actor_network"])
        self.actor.load_state_dict(state["actor"])
        if state.get("more_actors"):  # written by backend=ray with several actors
            print(
                f"the checkpoint has {1 + len(state['more_actors'])} self-play actors, the "
                "embedded backend one: the games in progress of the others are dropped",
                file=sys.stderr,
            )
