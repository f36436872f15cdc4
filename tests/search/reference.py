"""A slow, readable, object-per-node reference MCTS (one root at a time) for parity tests.

Written in the style of OpenSpiel's ``python/algorithms/mcts.py``: every node is a `Node`
object with a dict of children. It implements the semantics of `search` (mctx's conventions,
plus EfficientZero's tree-wide min-max and value prefix) from their written description, in
float64 Python, without calling anything in ``search``:

* node ids as mctx: the root is 0, the node created by simulation ``i`` is ``i + 1``; a
  simulation that re-evaluates an existing node at ``max_depth`` leaves slot ``i + 1`` unused;
* the root starts with one visit and the model's value; backup ``G <- r + discount * G`` and
  running means ``V <- (V * n + G) / (n + 1)`` up to the root;
* PUCT (MuZero) and Gumbel MuZero (sequential halving at the root, deterministic interior
  selection, completed Q values) action selection, ties to the lowest action index;
* four Q transforms: by parent and siblings, fixed min-max, tree-wide min-max and completed by
  mix value.

Every argmax records its decision margin (best score minus the runner-up), so a test can tell a
genuine disagreement from a near-tie that float32 rounding may legitimately break either way.

The model is a per-root function ``model(embedding, action, is_reset) -> (Transition,
new_embedding)``; ``is_reset`` is only meaningful in value-prefix mode (False otherwise).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

FLOAT32_TINY = float(np.finfo(np.float32).tiny)


# ----------------------------------------------------------------------------- model seam


class Transition(NamedTuple):
    """What the model says about one new node (one root, scalars and ``[A]`` arrays)."""

    reward: float  # edge reward, or the node's value prefix in value-prefix mode
    discount: float
    prior_logits: Any  # [A]
    value: float
    legal: Any = None  # [A] bool or None (= all legal)


# ----------------------------------------------------------------------------- Q transforms


@dataclasses.dataclass(frozen=True)
class ParentAndSiblings:
    epsilon: float = 1e-8


@dataclasses.dataclass(frozen=True)
class MinMax:
    min_value: float
    max_value: float


@dataclasses.dataclass(frozen=True)
class TreeMinMax:
    floor: float = 0.01
    unvisited: str = "parent_mean"  # or "min"


@dataclasses.dataclass(frozen=True)
class CompletedByMixValue:
    value_scale: float = 0.1
    maxvisit_init: float = 50.0
    rescale_values: bool = True
    use_mixed_value: bool = True
    epsilon: float = 1e-8


# ----------------------------------------------------------------------------- the tree


class Node:
    """One search node; the edge into it (reward, discount, action) is stored on the node."""

    def __init__(self, node_id, parent, action, depth, embedding):
        self.id = node_id
        self.parent = parent
        self.action = action  # action from the parent (None for the root)
        self.depth = depth
        self.embedding = embedding
        self.children: dict[int, Node] = {}
        self.visit_count = 0
        self.value = 0.0  # running mean of backed-up returns (player-to-move view)
        self.raw_value = 0.0  # the model's value
        self.reward = 0.0  # reward of the edge parent -> self
        self.discount = 0.0  # discount of the edge parent -> self
        self.value_prefix = 0.0
        self.is_reset = False
        self.legal: list[bool] = []
        self.logits: list[float] = []  # legal logits shifted so their max is 0; -inf if illegal
        self.prior: list[float] = []  # softmax over legal actions, 0 if illegal

    def set_policy(self, logits, legal):
        legal = [True] * len(logits) if legal is None else [bool(x) for x in legal]
        assert any(legal), "every node needs a legal action"
        top = max(float(x) for x, ok in zip(logits, legal, strict=True) if ok)
        self.legal = legal
        self.logits = [
            float(x) - top if ok else -math.inf for x, ok in zip(logits, legal, strict=True)
        ]
        exps = [math.exp(x) if ok else 0.0 for x, ok in zip(self.logits, legal, strict=True)]
        total = sum(exps)
        self.prior = [e / total for e in exps]

    @property
    def num_actions(self):
        return len(self.legal)

    def q(self):
        """Q of the edge into this node, from the parent's point of view."""
        return self.reward + self.discount * self.value

    def child_visits(self, a):
        child = self.children.get(a)
        return 0 if child is None else child.visit_count

    def child_q(self, a):
        child = self.children.get(a)
        return 0.0 if child is None else child.q()


# ----------------------------------------------------------------------------- helpers


def argmax_with_margin(scores: dict[int, float]) -> tuple[int, float]:
    """Argmax (lowest action on ties) over ``{action: score}`` and the gap to the runner-up."""
    best = None
    for a in sorted(scores):
        if best is None or scores[a] > scores[best]:
            best = a
    others = [s for a, s in scores.items() if a != best]
    margin = scores[best] - max(others) if others else math.inf
    return best, margin


def considered_visit_sequence(m: int, num_simulations: int) -> list[int]:
    """Sequential halving (mctx ``get_sequence_of_considered_visits``)."""
    if m <= 1:
        return list(range(num_simulations))
    log2max = math.ceil(math.log2(m))
    sequence: list[int] = []
    visits = [0] * m
    num_considered = m
    while len(sequence) < num_simulations:
        extra = max(1, int(num_simulations / (log2max * num_considered)))
        for _ in range(extra):
            sequence.extend(visits[:num_considered])
            for i in range(num_considered):
                visits[i] += 1
        num_considered = max(2, num_considered // 2)
    return sequence[:num_simulations]


def softmax_legal(logits: list[float], legal: list[bool]) -> list[float]:
    top = max(x for x, ok in zip(logits, legal, strict=True) if ok)
    exps = [math.exp(x - top) if ok else 0.0 for x, ok in zip(logits, legal, strict=True)]
    total = sum(exps)
    return [e / total for e in exps]


# ----------------------------------------------------------------------------- search


@dataclasses.dataclass
class Result:
    """The reference's outputs for one root, with the tree also laid out as mctx arrays."""

    nodes: list  # node id -> Node, or None for an unused slot
    visit_counts: np.ndarray
    action_weights: np.ndarray
    root_value: float
    qvalues: np.ndarray
    action: int
    min_margin: float  # smallest decision margin seen (inf if no decision had two candidates)
    tree_min_max: tuple[float, float]
    num_actions: int

    def arrays(self) -> dict[str, np.ndarray]:
        """Node/children arrays in the layout of `search.tree.Tree` (unused slots cleared)."""
        n, a = len(self.nodes), self.num_actions
        out = dict(
            node_visits=np.zeros(n, np.int64),
            parents=np.full(n, -1, np.int64),
            action_from_parent=np.full(n, -1, np.int64),
            node_depth=np.zeros(n, np.int64),
            node_values=np.zeros(n),
            raw_values=np.zeros(n),
            value_prefix=np.zeros(n),
            is_reset=np.zeros(n, bool),
            children_index=np.full((n, a), -1, np.int64),
            children_visits=np.zeros((n, a), np.int64),
            children_values=np.zeros((n, a)),
            children_rewards=np.zeros((n, a)),
            children_discounts=np.zeros((n, a)),
            children_prior_probs=np.zeros((n, a)),
            children_legal=np.zeros((n, a), bool),
        )
        for node in self.nodes:
            if node is None:
                continue
            i = node.id
            out["node_visits"][i] = node.visit_count
            out["parents"][i] = -1 if node.parent is None else node.parent.id
            out["action_from_parent"][i] = -1 if node.action is None else node.action
            out["node_depth"][i] = node.depth
            out["node_values"][i] = node.value
            out["raw_values"][i] = node.raw_value
            out["value_prefix"][i] = node.value_prefix
            out["is_reset"][i] = node.is_reset
            out["children_prior_probs"][i] = node.prior
            out["children_legal"][i] = node.legal
            for action, child in node.children.items():
                out["children_index"][i, action] = child.id
                out["children_visits"][i, action] = child.visit_count
                out["children_values"][i, action] = child.value
                out["children_rewards"][i, action] = child.reward
                out["children_discounts"][i, action] = child.discount
        return out


class ReferenceMCTS:
    """One search of one root. Use `run_muzero` / `run_gumbel` below."""

    def __init__(
        self,
        model: Callable,
        *,
        policy: str,
        qtransform,
        num_simulations: int,
        max_depth: int | None = None,
        pb_c_init: float = 1.25,
        pb_c_base: float = 19652.0,
        value_prefix_horizon: int | None = None,
        root_gumbel=None,
        max_num_considered_actions: int = 16,
    ):
        assert policy in ("muzero", "gumbel")
        self.model = model
        self.policy = policy
        self.qtransform = qtransform
        self.num_simulations = num_simulations
        self.max_depth = num_simulations if max_depth is None else max_depth
        self.pb_c_init = pb_c_init
        self.pb_c_base = pb_c_base
        self.horizon = value_prefix_horizon or 0
        self.root_gumbel = None if root_gumbel is None else [float(g) for g in root_gumbel]
        self.m = max_num_considered_actions
        self.min_margin = math.inf
        self.tree_min = math.inf
        self.tree_max = -math.inf

    # -- bookkeeping

    def _argmax(self, scores):
        action, margin = argmax_with_margin(scores)
        self.min_margin = min(self.min_margin, margin)
        return action

    # -- Q transforms: a list of A numbers for the children of `node`

    def transformed_q(self, node: Node, parent_mean_q: float) -> list[float]:
        qt = self.qtransform
        actions = range(node.num_actions)
        visited = [a in node.children for a in actions]
        if isinstance(qt, ParentAndSiblings):
            qs = [node.child_q(a) for a in actions]
            pool = [node.value] + [q for q, v in zip(qs, visited, strict=True) if v]
            low, high = min(pool), max(pool)
            return [
                (q - low) / max(high - low, qt.epsilon) if v else 0.0
                for q, v in zip(qs, visited, strict=True)
            ]
        if isinstance(qt, MinMax):
            return [
                (node.child_q(a) - qt.min_value) / (qt.max_value - qt.min_value)
                if visited[a]
                else 0.0
                for a in actions
            ]
        if isinstance(qt, TreeMinMax):
            low, high = self.tree_min, self.tree_max
            if high < low:  # nothing backed up yet
                return [0.0] * node.num_actions
            scores = []
            for a in actions:
                if visited[a]:
                    q = node.child_q(a)
                elif qt.unvisited == "parent_mean":
                    q = parent_mean_q
                else:
                    q = low
                scores.append(min(1.0, max(0.0, (q - low) / max(high - low, qt.floor))))
            return scores
        if isinstance(qt, CompletedByMixValue):
            return self.completed_q(node)
        raise TypeError(qt)

    def mixed_value(self, node: Node) -> float:
        sum_n = sum(node.child_visits(a) for a in range(node.num_actions))
        if sum_n == 0:
            return node.raw_value
        probs = {a: max(node.prior[a], FLOAT32_TINY) for a in node.children}
        weighted = sum(probs[a] * node.child_q(a) for a in probs) / sum(probs.values())
        return (node.raw_value + sum_n * weighted) / (sum_n + 1)

    def completed_q(self, node: Node) -> list[float]:
        qt = self.qtransform
        value = self.mixed_value(node) if qt.use_mixed_value else node.raw_value
        qs = [node.child_q(a) if a in node.children else value for a in range(node.num_actions)]
        if qt.rescale_values:
            low, high = min(qs), max(qs)
            qs = [(q - low) / max(high - low, qt.epsilon) for q in qs]
        max_n = max(node.child_visits(a) for a in range(node.num_actions))
        return [q * (qt.maxvisit_init + max_n) * qt.value_scale for q in qs]

    def parent_mean_q(self, node: Node, is_root: bool, parent_q: float) -> float:
        """EfficientZero's ``compute_mean_q``."""
        qs = [child.q() for child in node.children.values()]
        if is_root and qs:
            return sum(qs) / len(qs)
        return (parent_q + sum(qs)) / (len(qs) + 1)

    # -- action selection

    def puct(self, node: Node, parent_mean_q: float) -> int:
        qs = self.transformed_q(node, parent_mean_q)
        n_s = node.visit_count
        pb_c = self.pb_c_init + math.log((n_s + self.pb_c_base + 1) / self.pb_c_base)
        scores = {
            a: qs[a] + math.sqrt(n_s) * pb_c * node.prior[a] / (1 + node.child_visits(a))
            for a in range(node.num_actions)
            if node.legal[a]
        }
        return self._argmax(scores)

    def gumbel_considered(self, root: Node, considered_visit: int, completed: list[float]) -> int:
        scores = {
            a: max(-1e9, self.root_gumbel[a] + root.logits[a] + completed[a])  # logits: max 0
            for a in range(root.num_actions)
            if root.legal[a] and root.child_visits(a) == considered_visit
        }
        assert scores, "the sequential-halving schedule left no action to consider"
        return self._argmax(scores)

    def gumbel_root(self, root: Node, sim: int) -> int:
        num_considered = min(self.m, sum(root.legal))
        considered_visit = considered_visit_sequence(num_considered, self.num_simulations)[sim]
        return self.gumbel_considered(root, considered_visit, self.transformed_q(root, 0.0))

    def gumbel_interior(self, node: Node) -> int:
        completed = self.transformed_q(node, 0.0)
        improved = softmax_legal(
            [lg + q for lg, q in zip(node.logits, completed, strict=True)], node.legal
        )
        sum_n = sum(node.child_visits(a) for a in range(node.num_actions))
        scores = {
            a: improved[a] - node.child_visits(a) / (1 + sum_n)
            for a in range(node.num_actions)
            if node.legal[a]
        }
        return self._argmax(scores)

    # -- the search

    def _evaluate(
        self, parent: Node, action: int, node: Node | None, node_id: int, depth: int
    ) -> Node:
        """Calls the model for edge (parent, action); creates the node or re-evaluates it."""
        is_reset = self.horizon > 0 and depth % self.horizon == 0
        step, embedding = self.model(parent.embedding, action, is_reset)
        if node is None:
            node = Node(node_id, parent, action, depth, embedding)
            parent.children[action] = node
        else:  # max_depth re-evaluation: keeps its children, value reset to the new raw value
            node.embedding = embedding
        node.set_policy(step.prior_logits, step.legal)
        node.visit_count += 1
        node.raw_value = node.value = float(step.value)
        node.discount = float(step.discount)
        if self.horizon > 0:
            node.value_prefix = float(step.reward)
            node.is_reset = is_reset
            node.reward = (
                node.value_prefix if parent.is_reset else node.value_prefix - parent.value_prefix
            )
        else:
            node.reward = float(step.reward)
        return node

    def _backup(self, leaf: Node):
        g = leaf.value
        node = leaf
        while node.parent is not None:
            parent = node.parent
            g = node.reward + node.discount * g
            parent.value = (parent.value * parent.visit_count + g) / (parent.visit_count + 1)
            parent.visit_count += 1
            q = node.q()  # with the child's updated value
            self.tree_min = min(self.tree_min, q)
            self.tree_max = max(self.tree_max, q)
            node = parent

    def _simulate(self, root: Node, sim: int):
        node, depth, parent_q = root, 0, 0.0
        mean_q = 0.0
        track_mean = (
            isinstance(self.qtransform, TreeMinMax) and self.qtransform.unvisited == "parent_mean"
        )
        while True:
            if track_mean:
                mean_q = self.parent_mean_q(node, depth == 0, parent_q)
            if self.policy == "gumbel":
                action = self.gumbel_root(root, sim) if depth == 0 else self.gumbel_interior(node)
            else:
                action = self.puct(node, mean_q)
            child = node.children.get(action)
            depth += 1
            if child is None or depth >= self.max_depth:
                break
            parent_q = mean_q * float(np.sign(child.discount))
            node = child
        leaf = self._evaluate(node, action, child, sim + 1, depth)
        self._backup(leaf)
        return leaf

    def run(self, prior_logits, value, embedding, legal_mask=None):
        root = Node(0, None, None, 0, embedding)
        root.set_policy(prior_logits, legal_mask)
        root.visit_count = 1
        root.raw_value = root.value = float(value)
        root.is_reset = True  # value prefix 0
        nodes = [root] + [None] * self.num_simulations
        for sim in range(self.num_simulations):
            leaf = self._simulate(root, sim)
            if leaf.id == sim + 1:
                nodes[sim + 1] = leaf
        return root, nodes


def _root_outputs(search: ReferenceMCTS, root: Node, nodes: list, action: int, weights) -> Result:
    num_actions = root.num_actions
    return Result(
        nodes=nodes,
        visit_counts=np.array([root.child_visits(a) for a in range(num_actions)]),
        action_weights=np.asarray(weights, float),
        root_value=root.value,
        qvalues=np.array([root.child_q(a) for a in range(num_actions)]),
        action=action,
        min_margin=search.min_margin,
        tree_min_max=(search.tree_min, search.tree_max),
        num_actions=num_actions,
    )


def noised_root_logits(prior_logits, noise, fraction):
    """AlphaZero exploration as mctx mixes it: over all actions, before any masking."""
    logits = np.asarray(prior_logits, float)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    mixed = (1 - fraction) * probs + fraction * np.asarray(noise, float)
    return np.log(np.maximum(mixed, FLOAT32_TINY))


def run_muzero(
    model,
    prior_logits,
    value,
    embedding,
    *,
    num_simulations,
    legal_mask=None,
    qtransform=None,
    max_depth=None,
    pb_c_init=1.25,
    pb_c_base=19652.0,
    value_prefix_horizon=None,
    dirichlet_noise=None,
    dirichlet_fraction=0.0,
    temperature=1.0,
    action_gumbel=None,
) -> Result:
    """MuZero (PUCT) search of one root. ``action_gumbel`` None = most visited action."""
    if dirichlet_fraction > 0:
        prior_logits = noised_root_logits(prior_logits, dirichlet_noise, dirichlet_fraction)
    search = ReferenceMCTS(
        model,
        policy="muzero",
        qtransform=qtransform or ParentAndSiblings(),
        num_simulations=num_simulations,
        max_depth=max_depth,
        pb_c_init=pb_c_init,
        pb_c_base=pb_c_base,
        value_prefix_horizon=value_prefix_horizon,
    )
    root, nodes = search.run(prior_logits, value, embedding, legal_mask)
    visits = np.array([root.child_visits(a) for a in range(root.num_actions)], float)
    weights = visits / visits.sum()
    if action_gumbel is None or temperature == 0:
        action = int(np.argmax(visits))  # ties: lowest index, exactly as integers compare
    else:
        log_w = [math.log(max(w, FLOAT32_TINY)) for w in weights]
        top = max(log_w)
        action = search._argmax(
            {
                a: float(action_gumbel[a]) + (log_w[a] - top) / max(temperature, FLOAT32_TINY)
                for a in range(root.num_actions)
                if root.legal[a]
            }
        )
    return _root_outputs(search, root, nodes, action, weights)


def run_gumbel(
    model,
    prior_logits,
    value,
    embedding,
    *,
    num_simulations,
    gumbel,
    legal_mask=None,
    qtransform=None,
    max_depth=None,
    max_num_considered_actions=16,
    value_prefix_horizon=None,
) -> Result:
    """Gumbel MuZero search of one root with the given root Gumbel noise ``[A]``."""
    search = ReferenceMCTS(
        model,
        policy="gumbel",
        qtransform=qtransform or CompletedByMixValue(),
        num_simulations=num_simulations,
        max_depth=max_depth,
        value_prefix_horizon=value_prefix_horizon,
        root_gumbel=gumbel,
        max_num_considered_actions=max_num_considered_actions,
    )
    root, nodes = search.run(prior_logits, value, embedding, legal_mask)
    completed = search.transformed_q(root, 0.0)
    most_visits = max(root.child_visits(a) for a in range(root.num_actions))
    action = search.gumbel_considered(root, most_visits, completed)
    weights = softmax_legal(
        [lg + q for lg, q in zip(root.logits, completed, strict=True)], root.legal
    )
    return _root_outputs(search, root, nodes, action, weights)
