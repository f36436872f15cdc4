"""Value targets from the search tree's own nodes (`mbrl.selfplay.tree_values`): which nodes,
what target, the ring that keeps them, and ``algo.tree_value_weight`` end to end on Piglet."""

import numpy as np
import pytest
import torch

import search
from mbrl.checkpoint import load_checkpoint
from mbrl.selfplay.tree_values import PositionTable, TreeNodes, tree_node_values
from mbrl.train import train
from search.tree import NO_PARENT
from tests.mbrl.test_stochastic_muzero import piglet_model
from tests.mbrl.test_train import scalars


def piglet_search(num_simulations=32, policy="puct"):
    """A searched batch of Piglet positions: ``(game, model, states, output)``."""
    game, model = piglet_model()
    rng = np.random.default_rng(1)
    states = [game.new_state()]
    while len(states) < 6:
        step = game.apply(states[-1], int(rng.integers(0, 2)), rng)
        states.append(game.new_state() if step.state.is_terminal() else step.state)
    near_end = game.new_state()
    for _ in range(9):  # nine heads: stopping wins, so the tree holds an end
        near_end = game.apply_chance(game.apply_decision(near_end, 0).state, 1)
    states.append(near_end)
    obs = np.stack([game.observation(s) for s in states])
    legal = np.stack([game.legal_mask(s) for s in states])
    settings = search.SearchSettings(policy=policy, num_simulations=num_simulations)
    output = search.run(
        model.search_root(states, obs), model.recurrent_fn, settings, legal_mask=legal, keys=0
    )
    return game, model, states, output


def reference_expectimax(tree, is_decision, A, b, node):
    """The expectimax value of one node, recursively from its definition (independent of the
    one-sweep implementation): the best move where all are tried, the raw value at other
    decision nodes, the raw value corrected by each visited outcome at a chance node."""
    index = tree.children_index[b, node]
    raw = float(tree.raw_values[b, node])

    def below(slot):
        child = int(index[slot])
        return child, reference_expectimax(tree, is_decision, A, b, child)

    if is_decision[b, node]:
        legal = tree.children_legal[b, node, :A]
        if not legal.any() or (index[:A][legal] < 0).any():
            return raw
        return max(
            tree.children_rewards[b, node, a] + tree.children_discounts[b, node, a] * below(a)[1]
            for a in np.flatnonzero(legal)
        )
    probs = tree.children_prior_probs[b, node]
    correction = 0.0
    for code in np.flatnonzero(index >= 0):
        child, value = below(code)
        correction += (
            probs[code]
            * tree.children_discounts[b, node, code]
            * (value - tree.raw_values[b, child])
        )
    return raw + correction


@pytest.mark.parametrize("min_visits", [1, 2, 4])
def test_every_decision_node_is_listed_and_valued_by_expectimax_once_all_moves_are_tried(
    min_visits,
):
    game, _, states, output = piglet_search()
    tree, is_decision = output.tree, output.embeddings.is_decision_node
    roots, nodes, targets = tree_node_values(tree, is_decision, game.num_actions, min_visits)
    listed = dict(zip(zip(roots.tolist(), nodes.tolist(), strict=True), targets, strict=True))
    A = game.num_actions
    valued = partial = deeper = 0
    for b in range(len(states)):
        for node in range(tree.node_visits.shape[1]):
            used = node == 0 or tree.parents[b, node] != NO_PARENT
            assert ((b, node) in listed) == bool(used and is_decision[b, node])
            if (b, node) not in listed:
                continue
            legal = tree.children_legal[b, node, :A]
            tried = legal & (tree.children_visits[b, node, :A] > 0)
            if tree.node_visits[b, node] < min_visits or not tried.any():
                assert np.isnan(listed[b, node])
                continue
            if (tried != legal).any():  # a move untried: the max would only be a lower bound
                assert np.isnan(listed[b, node])
                partial += 1
                continue
            expected = reference_expectimax(tree, is_decision, A, b, node)
            assert listed[b, node] == pytest.approx(expected, abs=1e-5)
            # not the search's mean backed-up value (that averages in the rejected moves)
            deeper += abs(expected - tree.node_values[b, node]) > 1e-3
            valued += 1
    assert valued > 2 * len(states)  # well beyond the roots
    assert partial > 0 and deeper > 0  # both rules were put to the test
    assert (nodes == 0).sum() == len(states)


def test_a_true_chance_node_is_worth_the_expectation_of_its_outcomes():
    """The chance correction in `expectimax_values` assumes that an afterstate's raw value is
    the exact expectation of its outcomes' rewards and raw values, as `ChanceGameModel` says."""
    _, _, states, output = piglet_search(num_simulations=64)
    tree, is_decision = output.tree, output.embeddings.is_decision_node
    checked = 0
    for b in range(len(states)):
        for node in range(1, tree.node_visits.shape[1]):
            if tree.parents[b, node] == NO_PARENT or is_decision[b, node]:
                continue
            probs, index = tree.children_prior_probs[b, node], tree.children_index[b, node]
            possible = probs > 1e-6
            if (index[possible] < 0).any():
                continue
            children = index[possible]
            expected = (
                probs[possible]
                * (
                    tree.children_rewards[b, node, possible]
                    + tree.children_discounts[b, node, possible] * tree.raw_values[b, children]
                )
            ).sum()
            assert tree.raw_values[b, node] == pytest.approx(expected, abs=1e-5)
            checked += 1
    assert checked > 0


def test_a_plain_tree_counts_every_node_as_a_decision():
    _, _, _, output = piglet_search()
    with_flags = tree_node_values(output.tree, np.ones_like(output.tree.parents, bool), 2, 2)
    without = tree_node_values(output.tree, None, 2, 2)
    for a, b in zip(with_flags, without, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_node_positions_skip_finished_games():
    game, model, _, output = piglet_search()
    roots, nodes, _ = tree_node_values(
        output.tree, output.embeddings.is_decision_node, game.num_actions, 1
    )
    stored = output.embeddings.state
    obs, live, kept = model.node_positions(stored, roots, nodes)
    picked = [stored[b][n] for b, n in zip(roots.tolist(), nodes.tolist(), strict=True)]
    assert len(obs) == len(live) == len(kept) == sum(not s.is_terminal() for s in picked)
    assert len(kept) < len(picked)  # the search found ends (a won stop)
    for row, index in enumerate(kept.tolist()):
        assert live[row] is picked[index]
        np.testing.assert_array_equal(obs[row], game.observation(picked[index]))
    empty, none, _ = model.node_positions(stored, roots[:0], nodes[:0])
    assert empty.shape == (0, *game.obs_shape) and none == []


# -- the table --------------------------------------------------------------------------------


def pig_positions(count, start=0, value=None):
    """``count`` distinct Piglet positions (player 0 to move, scores ``start + i`` and 0)."""
    from games.chance import ChanceGame

    game = ChanceGame("pig", {"winscore": 100, "diceoutcomes": 2, "piglet": True})
    states = []
    for score in range(start, start + count):
        state = game.new_state()
        for _ in range(score):  # heads every time, then stop; the opponent stops at once
            state = game.apply_chance(game.apply_decision(state, 0).state, 1)
        if score:
            state = game.apply_decision(game.apply_decision(state, 1).state, 1).state
        states.append(state)
    obs = np.stack([game.observation(s) for s in states])
    values = np.arange(start, start + count, dtype=np.float32) if value is None else value
    return game, TreeNodes(obs, states, np.asarray(values, np.float32))


def table(capacity=5):
    game, _ = pig_positions(1)
    return PositionTable(capacity, game.obs_shape, lambda h: game.replay(h)[0])


def test_the_table_keeps_one_entry_per_position_with_its_latest_target():
    positions = table()
    _, nodes = pig_positions(3)
    positions.add(nodes)
    positions.add(nodes._replace(value=np.array([np.nan, 10.0, np.nan], np.float32)))
    assert len(positions) == 3 and positions.valued == 3 and positions.targets_added == 4
    assert positions.value[:3].tolist() == [0.0, 10.0, 2.0]  # NaN keeps the old target
    _, unvalued = pig_positions(1, start=3, value=[np.nan])
    positions.add(unvalued)
    assert len(positions) == 4 and positions.valued == 3
    _, value = positions.sample_targets(300, np.random.default_rng(0))
    assert set(value.tolist()) == {0.0, 10.0, 2.0}  # never the position without a target
    counts = np.unique(value, return_counts=True)[1]
    assert counts.min() > 70  # each position equally often, not by how often it was found
    states = positions.sample_states(200, np.random.default_rng(0))
    assert {id(s) for s in states} == {id(s) for s in positions.states[:4]}


def test_a_full_table_evicts_the_position_found_longest_ago():
    positions = table(capacity=3)
    positions.add(pig_positions(3)[1])
    positions.add(pig_positions(1, start=1, value=[7.0])[1])  # known: updated, not re-added
    assert sorted(positions.value.tolist()) == [0.0, 2.0, 7.0]
    positions.add(pig_positions(2, start=3)[1])  # two new: the two found first go
    assert len(positions) == 3 and sorted(positions.value.tolist()) == [2.0, 3.0, 4.0]
    assert len(positions.slot_of) == 3
    with pytest.raises(ValueError, match="holds no target"):
        table().sample_targets(2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="capacity >= 1"):
        table(capacity=0)


@pytest.mark.parametrize("capacity", [2, 5, 8])
def test_the_table_resumes_with_its_newest_positions_at_any_capacity(capacity):
    positions = table(capacity=5)
    positions.add(pig_positions(4, value=[0.0, 1.0, np.nan, 3.0])[1])
    positions.add(pig_positions(2, start=4)[1])  # 6 found, 5 kept: 1..5
    resumed = table(capacity)
    resumed.load_state_dict(positions.state_dict())
    kept = min(capacity, 5)
    assert len(resumed) == kept and resumed.targets_added == positions.targets_added
    newest = [1.0, np.nan, 3.0, 4.0, 5.0][-kept:]
    np.testing.assert_array_equal(resumed.value[:kept], newest)
    for slot in range(kept):  # the states come back from their histories
        assert str(resumed.states[slot]) == str(positions.states[(slot + 5 - kept + 1) % 5])
    resumed.add(pig_positions(1, start=1, value=[9.0])[1])  # and goes on from there
    assert 9.0 in resumed.value or capacity < 5


def test_the_table_refuses_a_foreign_or_corrupt_state():
    positions = table()
    positions.add(pig_positions(3)[1])
    state = positions.state_dict()
    with pytest.raises(ValueError, match=r"3 observations of shape \(304,\), 3 values and 2 hist"):
        table().load_state_dict({**state, "histories": state["histories"][:2]})
    infinite = state["value"].clone()
    infinite[0] = float("inf")
    with pytest.raises(ValueError, match="infinite targets"):
        table().load_state_dict({**state, "value": infinite})
    bad = [list(h) for h in state["histories"]]
    bad[1] = [0, 7]
    with pytest.raises(ValueError, match="position 1 plays chance outcome 7 illegally"):
        table().load_state_dict({**state, "histories": bad})


# -- end to end -------------------------------------------------------------------------------


def piglet_overrides(run_dir, *extra):
    return [f"run_dir={run_dir}", "game=piglet", "algo=chance_alphazero", *extra]


def test_the_true_chance_agent_trains_on_its_trees_and_resumes_them(tiny_config, tmp_path):
    from mbrl.train import build

    overrides = piglet_overrides(
        tmp_path,
        "algo.tree_value_weight=1.0",
        "algo.tree_value_searches=4",
        "trainer.log_every=4",
        "optim.lr=0.01",
        # a target needs every move tried: Gumbel's root tries both of Pig's
        "search.policy=gumbel",
        "search.num_simulations=8",
    )
    cfg = tiny_config(*overrides, "trainer.max_steps=40", "trainer.checkpoint_every=20")
    summary = train(cfg)
    assert summary["steps"] == 40
    losses = scalars(tmp_path, "train/tree_value_loss")
    assert len(losses) >= 5 and sum(losses[-3:]) < sum(losses[:3]), losses
    assert scalars(tmp_path, "selfplay/positions_searched")[-1] == 4 * 40
    found = scalars(tmp_path, "replay/positions")[-1]
    assert scalars(tmp_path, "replay/positions_valued")[-1] > 50 and found > 100
    data_state = load_checkpoint(tmp_path)["SelfPlayDataModule"]
    assert len(data_state["tree_values"]["histories"]) == found
    step = load_checkpoint(tmp_path / "checkpoints" / "step000020.ckpt")
    assert step["SelfPlayDataModule"]["tree_values"] is None  # like the episodes: last.ckpt only
    # a rebuilt run restores the table exactly from the checkpoint, the states included
    _, data, _ = build(tiny_config(*overrides, "trainer.max_steps=40"), tmp_path / "other")
    data.load_state_dict(data_state)
    table = data.positions
    np.testing.assert_array_equal(table.value[: len(table)], data_state["tree_values"]["value"])
    for state, obs in zip(table.states[: len(table)], table.obs, strict=False):
        np.testing.assert_array_equal(obs, data.actors.actor.model.game.observation(state))
    batch = data.sample_batch()
    assert batch["tree_obs"].shape == (len(batch["obs"]), *batch["obs"].shape[1:])
    assert torch.isfinite(batch["tree_value"]).all()
    resumed = train(tiny_config(*overrides, "trainer.max_steps=50"))
    assert resumed["resumed_from"] and resumed["steps"] == 50


def test_a_run_with_training_keys_this_version_does_not_know_still_plays(tiny_config, tmp_path):
    from mbrl.checkpoint import METADATA_KEY
    from mbrl.loading import load_agent

    train(tiny_config(*piglet_overrides(tmp_path / "run"), "trainer.max_steps=4"))
    checkpoint = load_checkpoint(tmp_path / "run")
    checkpoint[METADATA_KEY]["config"]["algo"]["tree_value_backup"] = "one_ply"  # a newer key
    torch.save(checkpoint, tmp_path / "newer.ckpt")
    loaded = load_agent(tmp_path / "newer.ckpt")
    assert loaded.search_model().game.name == "pig"


@pytest.mark.parametrize(
    "extra, message",
    [
        (["algo.tree_value_weight=-1"], r"tree_value_weight must be >= 0 \(0 = off\), got -1"),
        (["algo.tree_value_min_visits=0"], "tree_value_min_visits must be >= 1, got 0"),
        (["algo.tree_value_searches=-1"], "tree_value_searches must be >= 0, got -1"),
        (["algo.tree_value_searches=4"], "tree_value_searches=4 .* needs algo.tree_value_weight"),
        (
            ["algo.tree_value_weight=1", "algo=stochastic_muzero"],
            r"tree_value_weight=1.0 .*algo=chance_alphazero\); algo=stochastic_muzero",
        ),
        (
            ["algo.tree_value_weight=1", "backend=ray"],
            "needs backend=embedded .* got backend=ray",
        ),
    ],
)
def test_bad_tree_value_settings_are_refused_in_one_line(tiny_config, tmp_path, extra, message):
    with pytest.raises(ValueError, match=message):
        train(tiny_config(*piglet_overrides(tmp_path), *extra))
