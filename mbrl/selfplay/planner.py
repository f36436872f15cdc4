"""One batched search per move, configured once: PUCT (AlphaZero) or Gumbel (Gumbel AlphaZero)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import search
from mbrl.selfplay.game_model import GameModel

SEARCH_POLICIES = ("puct", "gumbel")
# PUCT's value normalisation: mctx's (unvisited children score the minimum) or
# EfficientZero/LightZero's tree-wide min-max with unvisited children at the parent's mean Q.
# Neither makes 32 simulations try a winning move whose prior is below ~1%; Gumbel's root, which
# visits every considered action, does. Gumbel always uses completed Q.
PUCT_QTRANSFORMS = ("parent_and_siblings", "tree_min_max")
_GOLDEN = 0x9E3779B97F4A7C15


@dataclass(frozen=True)
class SearchSettings:
    policy: str = "puct"
    num_simulations: int = 32
    dirichlet_alpha: float = 0.3
    dirichlet_fraction: float = 0.25
    dirichlet_legal_only: bool = True
    pb_c_init: float = 1.25
    pb_c_base: float = 19652.0
    max_num_considered_actions: int = 16
    gumbel_scale: float = 1.0
    qtransform: str = "parent_and_siblings"

    def __post_init__(self):
        if self.qtransform not in PUCT_QTRANSFORMS:
            raise ValueError(
                f"search.qtransform must be one of {PUCT_QTRANSFORMS}, got {self.qtransform!r}"
            )
        if self.policy not in SEARCH_POLICIES:
            raise ValueError(f"search.policy must be one of {SEARCH_POLICIES}, got {self.policy!r}")
        if self.num_simulations < 1:
            raise ValueError(f"search.num_simulations must be >= 1, got {self.num_simulations}")


def plan(
    model: GameModel,
    states: list,
    settings: SearchSettings,
    *,
    keys: np.ndarray | int = 0,
    deterministic: bool = False,
    inputs: tuple[np.ndarray, np.ndarray] | None = None,
) -> search.SearchOutput:
    """Search from every state in ``states`` at once (none may be terminal); ``inputs`` are the
    roots' ``(obs, legal)`` when the caller already has them."""
    root, legal = model.root(states, inputs)
    return search_roots(
        root, legal, model.recurrent_fn, settings, keys=keys, deterministic=deterministic
    )


def search_roots(
    root: search.RootOutput,
    legal: np.ndarray,
    recurrent_fn,
    settings: SearchSettings,
    *,
    keys: np.ndarray | int = 0,
    deterministic: bool = False,
    temperature: float = 1.0,
    value_prefix_horizon: int | None = None,
) -> search.SearchOutput:
    """The configured search from given roots (the true game's or a learned model's)."""
    common = dict(
        num_simulations=settings.num_simulations,
        legal_mask=legal,
        seed=keys,
        deterministic=deterministic,
        value_prefix_horizon=value_prefix_horizon,
    )
    if settings.policy == "gumbel":
        return search.gumbel_muzero_policy(
            root,
            recurrent_fn,
            max_num_considered_actions=settings.max_num_considered_actions,
            gumbel_scale=settings.gumbel_scale,
            **common,
        )
    return search.muzero_policy(
        root,
        recurrent_fn,
        dirichlet_alpha=settings.dirichlet_alpha,
        dirichlet_fraction=settings.dirichlet_fraction,
        dirichlet_legal_only=settings.dirichlet_legal_only,
        pb_c_init=settings.pb_c_init,
        pb_c_base=settings.pb_c_base,
        temperature=temperature,
        qtransform=search.qtransform_tree_min_max()
        if settings.qtransform == "tree_min_max"
        else None,
        **common,
    )


_OPENING_STREAM = 0x6F70  # separates the openings' random stream from the search's keys


def opening_rng(seed: int, game_id: int) -> np.random.Generator:
    """The random stream of one game's random opening (``random_opening_moves``), keyed by
    (run seed, game number) like ``root_keys``: it does not depend on the game's slot."""
    return np.random.default_rng([seed, game_id, _OPENING_STREAM])


def root_keys(seed: int, game_ids: np.ndarray, moves: np.ndarray) -> np.ndarray:
    """Per-root search keys from (run seed, game number, move number): a game's noise does not
    depend on which slot of the batch it occupies."""
    # Arrays (not numpy scalars) so the wrapping multiplications raise no overflow warning.
    base = np.full(len(game_ids), seed & 0xFFFFFFFFFFFFFFFF, np.uint64) * np.uint64(_GOLDEN)
    keys = base ^ (np.asarray(game_ids, np.uint64) * np.uint64(0xBF58476D1CE4E5B9))
    return keys ^ (np.asarray(moves, np.uint64) * np.uint64(0x94D049BB133111EB))
