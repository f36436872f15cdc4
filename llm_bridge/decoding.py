"""Decoding methods over a `TextEnv`, batched across prompts, all counted in forward passes.

Every method decodes B prompts in lockstep and reports the model's forward passes (sequences
evaluated), so methods are compared at matched compute:

- ``greedy``: the top candidate at every decision.
- ``sample``: one sample from the candidates' softmax at ``temperature``.
- ``best_of_n``: ``n`` samples per prompt; the verifier picks a correct one if any.
- ``beam``: beam search of ``width`` by summed log-probability; the best finished beam wins
  (no verifier, as beam search is used in practice).
- ``mcts`` / ``gumbel``: one batched `search/` per decision (PUCT or Gumbel MuZero) with the
  verifier's reward at the leaves and the value head inside; the most visited (PUCT) or the
  Gumbel-selected action is played, and a completion the verifier accepted anywhere in a search
  tree is returned at once (the verifier is exact, so the search has solved the prompt).

Search methods also return their policy targets (`SearchTarget`) for distillation: the search
policy at each decision played, and, once a search finds verified completions, targets at every
node on the way to them (each action's share of the verified leaves below it), and those
completions themselves (`Decoded.solutions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

import search
from llm_bridge.text_env import TextEnv, TextNode
from search import SearchSettings

METHODS = ("greedy", "sample", "best_of_n", "beam", "mcts", "gumbel")
_SEARCH_POLICY = {"mcts": "puct", "gumbel": "gumbel"}  # search methods: their search.policy
MAX_SEARCHES_FACTOR = 4  # decode_distinct with a pass budget: at most this many times `searches`


@dataclass
class SearchTarget:
    """One searched decision: the prefix ``ids`` and the search policy over its candidates."""

    ids: tuple[int, ...]
    candidates: np.ndarray  # [K] int64 token ids (-1 = padding)
    policy: np.ndarray  # [K] float32, sums to 1 over legal candidates
    value: float | None = None  # a value target for this prefix off the decoded path, if known


@dataclass
class Decoded:
    """Per prompt: the completion, its reward and the token ids; plus the passes spent."""

    completions: list[str]
    rewards: np.ndarray  # [B] float
    ids: list[tuple[int, ...]]  # prompt + completion (+ eos) token ids
    forward_passes: int
    targets: list[list[SearchTarget]] = field(default_factory=list)  # search methods only
    # Search methods: every distinct verified completion (token ids) in the tree that solved
    # the prompt, the returned one first; empty for prompts the search did not solve.
    solutions: list[list[tuple[int, ...]]] = field(default_factory=list)

    @property
    def accuracy(self) -> float:
        return float((self.rewards > 0).mean()) if len(self.rewards) else 0.0


@dataclass
class TreeSearchSettings(SearchSettings):
    """`SearchSettings` with decoding's defaults, plus what only decoding uses. The policy
    (PUCT or Gumbel) comes from the decoding method, ``mcts`` or ``gumbel``."""

    num_simulations: int = 16
    max_num_considered_actions: int = 8  # gumbel
    dirichlet_fraction: float = 0.0  # decoding explores through the tree, not noise
    dirichlet_legal_only: bool = False
    # PUCT: the played action is sampled from visits ** (1 / temperature); 0 = the most visited.
    # Distillation's repeated searches of a prompt use noise and temperature to find other
    # solutions.
    temperature: float = 0.0
    # Distillation: also take the visit distribution of every interior node visited at least
    # this often (sub-problems off the played path); 0 = only the decisions played.
    tree_target_visits: int = 0


def decode(
    env: TextEnv,
    items: Sequence[Any],
    method: str,
    *,
    budget: int = 1,
    seed: int = 0,
    temperature: float = 1.0,
    settings: TreeSearchSettings | None = None,
    first_row: int = 0,
) -> Decoded:
    """Run ``method`` on ``items``. ``budget`` is n for best-of-n, the width for beam and the
    simulations per decision for mcts/gumbel (ignored by greedy and sample).

    ``first_row``: ``items`` are rows ``first_row, first_row + 1, ...`` of a larger batch (a
    shard, `llm_bridge.ray_decoding`): a search's keys follow the row, so a shard searches as
    that batch would; samples draw from a stream of their own (``[seed, first_row]``)."""
    if method not in METHODS:
        raise ValueError(f"unknown decoding method {method!r}; choose one of {METHODS}")
    before = env.adapter.forward_passes
    targets, solutions = [], []  # search methods only
    if method == "greedy":
        nodes = _rollout(env, items, None, 1.0)
    elif method == "sample":
        nodes = _rollout(env, items, _sampling_rng(seed, first_row), temperature)
    elif method == "best_of_n":
        nodes = _best_of_n(env, items, budget, _sampling_rng(seed, first_row), temperature)
    elif method == "beam":
        nodes = _beam(env, items, budget)
    else:
        settings = replace(
            settings or TreeSearchSettings(),
            num_simulations=budget,
            policy=_SEARCH_POLICY[method],
        )
        roots = env.reset(items)
        nodes, targets, solutions = _search_decode(env, roots, settings, seed, first_row)
    return _decoded(nodes, env.adapter.forward_passes - before, targets, solutions)


def sample_decisions(
    env: TextEnv, items: Sequence[Any], seed: int, temperature: float = 1.0
) -> tuple[Decoded, list[list[TextNode]]]:
    """``decode(method="sample")``, and per item the nodes where a token was sampled, in order
    (tokens the grammar forced are no decision): the student's states, for on-policy
    distillation (`llm_bridge.on_policy`)."""
    before = env.adapter.forward_passes
    decisions: list[list[TextNode]] = []
    nodes = _rollout(env, items, _sampling_rng(seed, 0), temperature, decisions)
    return _decoded(nodes, env.adapter.forward_passes - before, [], []), decisions


def _sampling_rng(seed: int, first_row: int) -> np.random.Generator:
    return np.random.default_rng(seed if first_row == 0 else [seed, first_row])


def decode_distinct(
    env: TextEnv,
    items: Sequence[Any],
    method: str,
    *,
    searches: int,
    budget: int,
    seed: int = 0,
    settings: TreeSearchSettings | None = None,
    pass_budget: int = 0,
    first_row: int = 0,
) -> Decoded:
    """``searches`` searches of every item, one after another, each looking for a solution the
    earlier ones did not find: completions already found earn reward 0 in later searches, so a
    search that solves its prompt adds a new solution (where repeated searches from the same
    prior mostly find the same one again). Later searches reuse every node the earlier ones
    evaluated, so they cost passes only for new prefixes, as searches batched together would.

    With ``pass_budget`` > 0, more searches (up to ``MAX_SEARCHES_FACTOR * searches``) follow
    while the next one, costed as the one before, keeps the total within ``pass_budget`` forward
    passes: as the model grows confident its searches reuse more of the tree, so a fixed
    compute budget buys more of them. ``searches`` always run, whatever they cost.

    Rows are item-major, as ``decode`` of each item repeated S times, S being the searches run
    (``len(rows) // len(items)``): row ``i * S + k`` is item i's k-th search. A row's reward is
    1 only for a solution new to it; ``solutions`` holds the new ones. ``first_row``: the
    first item's index in a larger batch, as for `decode`."""
    if method not in ("mcts", "gumbel"):
        raise ValueError(f"decode_distinct needs a search method (mcts, gumbel), got {method!r}")
    if searches < 1:
        raise ValueError(f"searches must be >= 1, got {searches}")
    if pass_budget < 0:
        raise ValueError(f"pass_budget must be >= 0 (0 = off), got {pass_budget}")
    if not isinstance(env, TextEnv):
        raise ValueError(
            f"decode_distinct needs token actions (a TextEnv), got {type(env).__name__}"
        )
    settings = replace(
        settings or TreeSearchSettings(), num_simulations=budget, policy=_SEARCH_POLICY[method]
    )
    before = env.adapter.forward_passes
    roots = env.reset(items)
    known: list[set[tuple[int, ...]]] = [set() for _ in items]
    most = searches if pass_budget == 0 else MAX_SEARCHES_FACTOR * searches
    runs, last_cost = [], 0
    for k in range(most):
        spent = env.adapter.forward_passes - before
        if k >= searches and spent + last_cost > pass_budget:
            break  # the next search, costed as the last, would not fit
        if k > 0:
            roots = env.restart(known)
        # Seeds as without a budget, so its first `searches` match; an extra search's seed is
        # another round's (seed + 1), harmless since that round searches with another model.
        search_seed = seed * searches + k
        nodes, targets, solutions = _search_decode(env, roots, settings, search_seed, first_row)
        for found, new in zip(known, solutions, strict=True):
            found.update(new)
        runs.append((nodes, targets, solutions))
        last_cost = env.adapter.forward_passes - before - spent
    rows = [(i, k) for i in range(len(items)) for k in range(len(runs))]
    return _decoded(
        [runs[k][0][i] for i, k in rows],
        env.adapter.forward_passes - before,
        [runs[k][1][i] for i, k in rows],
        [runs[k][2][i] for i, k in rows],
    )


def _decoded(nodes: list[TextNode], forward_passes: int, targets, solutions) -> Decoded:
    return Decoded(
        completions=[n.completion for n in nodes],
        rewards=np.array([n.reward for n in nodes], np.float64),
        ids=[n.state.ids for n in nodes],
        forward_passes=forward_passes,
        targets=targets,
        solutions=solutions,
    )


def masked_softmax(logits: np.ndarray, legal: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Softmax over the ``legal`` entries of ``logits`` at ``temperature``; 0 elsewhere."""
    z = np.where(legal, logits / max(temperature, 1e-6), -np.inf)
    z = np.exp(z - z.max(-1, keepdims=True))
    return z / z.sum(-1, keepdims=True)


def _rollout(
    env: TextEnv,
    items,
    rng: np.random.Generator | None,
    temperature: float,
    decisions: list[list[TextNode]] | None = None,
):
    """Greedy (``rng`` None) or sampled decoding to the end of every prompt. ``decisions``,
    if given, receives per prompt the nodes where a token was chosen, in order."""
    nodes = env.reset(items)
    if decisions is not None:
        decisions[:] = [[] for _ in nodes]
    while live := [i for i, n in enumerate(nodes) if not n.terminal]:
        parents = [nodes[i] for i in live]
        if decisions is not None:
            for i in live:
                decisions[i].append(nodes[i])
        if rng is None:
            actions = [int(np.argmax(np.where(p.legal, p.prior_logits, -np.inf))) for p in parents]
        else:
            actions = [
                int(
                    rng.choice(len(p.legal), p=masked_softmax(p.prior_logits, p.legal, temperature))
                )
                for p in parents
            ]
        for i, child in zip(live, env.step(parents, actions), strict=True):
            nodes[i] = child
    return nodes


def _best_of_n(env: TextEnv, items, n: int, rng: np.random.Generator, temperature: float):
    if n < 1:
        raise ValueError(f"best_of_n needs n >= 1, got {n}")
    samples = _rollout(env, [item for item in items for _ in range(n)], rng, temperature)
    best = []
    for i in range(len(items)):
        group = samples[i * n : (i + 1) * n]
        best.append(max(group, key=lambda node: node.reward))  # the first verified, if any
    env.items = list(items)
    return best


def _beam(env: TextEnv, items, width: int):
    """Keeps ``width`` beams per prompt; every child scored costs one forward pass."""
    if width < 1:
        raise ValueError(f"beam width must be >= 1, got {width}")
    roots = env.reset(items)
    beams = [[(0.0, root)] for root in roots]  # per prompt: (log-prob, node)
    while any(not node.terminal for beam in beams for _, node in beam):
        parents, actions, scores, owners = [], [], [], []
        for b, beam in enumerate(beams):
            for score, node in beam:
                if node.terminal:
                    continue
                log_probs = np.log(masked_softmax(node.prior_logits, node.legal) + 1e-30)
                for a in np.flatnonzero(node.legal):
                    parents.append(node)
                    actions.append(int(a))
                    scores.append(score + float(log_probs[a]))
                    owners.append(b)
        children = env.step(parents, actions)
        pool = [[(s, n) for s, n in beam if n.terminal] for beam in beams]
        for b, score, child in zip(owners, scores, children, strict=True):
            pool[b].append((score, child))
        beams = [sorted(p, key=lambda pair: -pair[0])[:width] for p in pool]
    return [beam[0][1] for beam in beams]


def _root_seeds(seed: int, rows: Sequence[int], move: int) -> np.ndarray:
    """Per-root keys, so a prompt's noise does not depend on its batch position."""
    return np.array([(seed * 1_000_003 + row) * 1009 + move for row in rows], np.int64)


def _search_decode(
    env: TextEnv, starts: list[TextNode], settings: TreeSearchSettings, seed: int, first_row: int
):
    """Searches from ``starts`` (one root per item, rows ``first_row + i`` of the batch) to the
    end: ``(final nodes, targets, solutions)`` per item."""
    nodes = list(starts)
    targets: list[list[SearchTarget]] = [[] for _ in starts]
    solutions: list[list[tuple[int, ...]]] = [[] for _ in starts]
    move = 0
    while live := [i for i, n in enumerate(nodes) if not n.terminal]:
        roots = [nodes[i] for i in live]
        rows = [first_row + i for i in live]
        output = search_roots(env, roots, settings, _root_seeds(seed, rows, move))
        for j, (i, root) in enumerate(zip(live, roots, strict=True)):
            leaves = _verified_leaves(output.embeddings[j])
            if leaves:  # solved: return the first verified completion stored
                nodes[i] = leaves[0]
                targets[i].extend(_solved_targets(output, j))
                solutions[i] = [leaf.state.ids for leaf in leaves]
                continue
            targets[i].append(
                SearchTarget(root.state.ids, root.candidates, output.action_weights[j])
            )
            if settings.tree_target_visits > 0:
                targets[i].extend(_visited_targets(output, j, settings.tree_target_visits))
            child = output.tree.children_index[j, search.ROOT_INDEX, output.action[j]]
            nodes[i] = (
                output.embeddings[j][child]
                if child != search.UNVISITED
                else env.step([root], [int(output.action[j])])[0]
            )
        move += 1
    return nodes, targets, solutions


def search_roots(env: TextEnv, roots: list[TextNode], settings: TreeSearchSettings, keys):
    """One batched search from ``roots`` (any nodes of ``env``), per-root ``keys``."""
    root = search.RootOutput(
        prior_logits=np.stack([r.prior_logits for r in roots]),
        value=np.array([r.value for r in roots], np.float32),
        embedding=list(roots),
    )
    legal = np.stack([r.legal for r in roots])
    return search.run(
        root,
        env.recurrent_fn,
        settings,
        legal_mask=legal,
        keys=keys,
        temperature=settings.temperature,
    )


def _verified_leaves(row_nodes: list) -> list[TextNode]:
    """The distinct verified completions stored in one tree, in storage order."""
    found: dict[tuple[int, ...], TextNode] = {}
    for node in row_nodes:
        if node is not None and node.terminal and node.reward > 0:
            found.setdefault(node.state.ids, node)
    return list(found.values())


def _visited_targets(output, j: int, min_visits: int) -> list[SearchTarget]:
    """Visit distributions of the interior nodes of tree ``j`` searched at least ``min_visits``
    times (below the root, whose target is the search's own)."""
    storage, tree = output.embeddings[j], output.tree
    targets = []
    for index in np.flatnonzero(tree.node_visits[j] >= min_visits):
        node = storage[index]
        if index == search.ROOT_INDEX or node is None or node.terminal:
            continue
        visits = tree.children_visits[j, index].astype(np.float32)
        if visits.sum() > 0:
            targets.append(SearchTarget(node.state.ids, node.candidates, visits / visits.sum()))
    return targets


def _solved_targets(output, j: int) -> list[SearchTarget]:
    """Targets at every node on a path to a verified leaf of tree ``j``: each action's share of
    the verified leaves below it. With an exact verifier these actions are proven optimal
    (value 1, the most there is), whatever the visit counts say after few simulations; and the
    sub-problems along the way (e.g. three numbers left) recur in other prompts."""
    storage, tree = output.embeddings[j], output.tree
    counts: dict[int, np.ndarray] = {}
    seen: set[int] = set()
    for index, node in enumerate(storage):
        if node is None or not (node.terminal and node.reward > 0):
            continue
        if id(node) in seen:
            continue  # the same (cached) leaf reached twice is one solution
        seen.add(id(node))
        while tree.parents[j, index] != search.NO_PARENT:
            parent = int(tree.parents[j, index])
            action = int(tree.action_from_parent[j, index])
            counts.setdefault(parent, np.zeros(len(storage[parent].candidates), np.float32))
            counts[parent][action] += 1
            index = parent
    return [
        SearchTarget(storage[node].state.ids, storage[node].candidates, hits / hits.sum(), 1.0)
        for node, hits in sorted(counts.items(), key=lambda pair: len(storage[pair[0]].state.ids))
    ]
