"""The cached kernel entry points (`search.search.call`): the type key must change whenever
numba's argument types would, or a compiled entry would be handed arrays it was not built for."""

import numpy as np

import search
from search.search import _type_key
from tests.search.problems import make_problem


def test_array_keys_follow_layout_alignment_and_writeability():
    base = np.zeros((6, 4), np.float32)
    readonly = base.copy()
    readonly.setflags(write=False)
    unaligned = np.zeros(6 * 4 * 4 + 1, np.uint8)[1:].view(np.float32)
    variants = [base, np.asfortranarray(base), base[:, ::2], readonly, unaligned.reshape(6, 4)]
    assert len({_type_key(v) for v in variants}) == len(variants)
    assert _type_key(base) == _type_key(np.ones((2, 9), np.float32))  # same numba type


def test_a_tabular_model_with_other_field_types_gets_its_own_key():
    problem = make_problem(3, batch_size=4, num_actions=5)
    model = search.tabular_model(*problem[:6])
    # A new record object with float64 rewards: its own key, not the first record's cached one.
    wider = model._replace(reward=model.reward.astype(np.float64))
    assert _type_key(model) == _type_key(model)
    assert _type_key(wider) != _type_key(model)
    assert _type_key(wider._replace(reward=model.reward)) == _type_key(model)
