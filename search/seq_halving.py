"""Sequential halving schedule of Gumbel MuZero's root (Danihelka et al. 2022, section 3)."""

from __future__ import annotations

import functools
import math

import numpy as np


def considered_visit_sequence(max_num_considered_actions: int, num_simulations: int) -> list[int]:
    """For each simulation, the visit count an action must have to be considered at the root.

    The budget is split into ``ceil(log2(m))`` phases; each phase gives every remaining action
    the same number of visits, then halves the number of remaining actions (at least 2).
    Same schedule as mctx's ``get_sequence_of_considered_visits``.
    """
    if max_num_considered_actions <= 1:
        return list(range(num_simulations))
    log2max = math.ceil(math.log2(max_num_considered_actions))
    sequence: list[int] = []
    visits = [0] * max_num_considered_actions
    num_considered = max_num_considered_actions
    while len(sequence) < num_simulations:
        num_extra_visits = max(1, int(num_simulations / (log2max * num_considered)))
        for _ in range(num_extra_visits):
            sequence.extend(visits[:num_considered])
            for i in range(num_considered):
                visits[i] += 1
        num_considered = max(2, num_considered // 2)
    return sequence[:num_simulations]


@functools.lru_cache(maxsize=64)
def considered_visit_table(max_num_considered_actions: int, num_simulations: int) -> np.ndarray:
    """``[m + 1, N]`` int32: row ``k`` is the schedule when only ``k`` actions can be considered."""
    table = np.array(
        [
            considered_visit_sequence(m, num_simulations)
            for m in range(max_num_considered_actions + 1)
        ],
        dtype=np.int32,
    )
    table.setflags(write=False)
    return table
