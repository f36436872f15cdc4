"""A slow, readable, object-per-node reference of Stochastic MuZero search as mctx runs it.

Stochastic MuZero (Antonoglou et al., ICLR 2022) alternates two kinds of node: a *decision* node
(a state: the agent picks one of ``A`` actions) and a *chance* node (an afterstate: nature picks
one of ``C`` outcome codes). This module re-implements, in float64 Python and from a written
description only, the semantics of ``mctx.stochastic_muzero_policy`` (mctx 0.0.71), so that the
golden records in ``tests/data/mctx_stochastic_golden`` can be checked without JAX:

* one tree of ``N + 1`` node slots per root, node 0 the root (a decision node); the node first
  created by simulation ``i`` is node ``i + 1``; every simulation creates or re-evaluates exactly
  one node, of either kind;
* one edge index space of width ``A + C``: an action ``a`` from a decision node is edge ``a``, the
  outcome ``c`` from a chance node is edge ``A + c`` (``action_from_parent`` uses this convention);
* decision -> chance edges have reward 0 and discount 1; the chance node's value is the afterstate
  value; chance -> decision edges carry the model's reward and discount;
* decision nodes select by PUCT with the Q transform over their ``A`` children only (root invalid
  actions masked at the root only); chance nodes select ``argmax_c p(c) / (N(c) + 1)``, with no
  noise and ties to the lowest code;
* every expansion calls *both* model functions, as mctx does: the decision function with the
  parent's state embedding and the raw edge index, the chance function with the parent's
  afterstate embedding and ``edge - A``; the node keeps the state embedding from the chance
  function and the afterstate embedding from the decision function, and only the outputs of the
  function that matches the parent's kind are used. With the record's table model an out-of-range
  call returns embedding ``-1``, so a decision node stores ``(state, -1)`` and a chance node
  ``(-1, afterstate)``; the root stores ``(root state, afterstate[root state, 0])`` because mctx
  fills the root's afterstate slot by calling the decision function with action 0.

Every argmax records its relative decision margin ``(best - runner-up) / max(1, |best|)``, so
a test can tell a genuine disagreement from a near-tie that float32 rounding (or mctx's
``1e-7 * U(0, 1)`` tie-break noise at decision nodes) may break either way.
"""

from __future__ import annotations

import dataclasses
import math
from typing import NamedTuple

import numpy as np

from tests.search.reference import FLOAT32_TINY, MinMax, ParentAndSiblings

FLOAT32_MIN = float(np.finfo(np.float32).min)  # mctx's logit for an invalid root action


# ----------------------------------------------------------------------------- model seam


class DecisionStep(NamedTuple):
    """The decision function's answer for (state, action): the afterstate and its outputs."""

    afterstate: int  # afterstate embedding (-1 when the call was out of range)
    afterstate_value: float
    chance_logits: np.ndarray  # [C]


class ChanceStep(NamedTuple):
    """The chance function's answer for (afterstate, code): the next state and its outputs."""

    state: int  # state embedding (-1 when the call was out of range)
    reward: float
    discount: float
    prior_logits: np.ndarray  # [A]
    value: float


@dataclasses.dataclass(frozen=True)
class TableModel:
    """The golden records' MDP: ``S`` states, ``S'`` afterstates, ``A`` actions, ``C`` codes.

    ``afterstate [S, A]`` int, ``prior_logits [S, A]``, ``value [S]``, ``afterstate_value
    [S']``, ``chance_logits [S', C]``, ``next_state [S', C]`` int, ``reward [S', C]``,
    ``discount [S', C]``. Calls with an index out of range (mctx makes them: it runs both
    functions on every expansion) return embedding -1 and zero outputs.
    """

    afterstate: np.ndarray
    prior_logits: np.ndarray
    value: np.ndarray
    afterstate_value: np.ndarray
    chance_logits: np.ndarray
    next_state: np.ndarray
    reward: np.ndarray
    discount: np.ndarray

    @classmethod
    def from_record(cls, record: dict) -> TableModel:
        return cls(**{f.name: record[f.name] for f in dataclasses.fields(cls)})

    @property
    def num_actions(self) -> int:
        return self.prior_logits.shape[1]

    @property
    def num_chance_outcomes(self) -> int:
        return self.chance_logits.shape[1]

    def decision(self, state: int, action: int) -> DecisionStep:
        num_states, num_actions = self.afterstate.shape
        if not (0 <= state < num_states and 0 <= action < num_actions):
            return DecisionStep(-1, 0.0, np.zeros(self.num_chance_outcomes))
        after = int(self.afterstate[state, action])
        return DecisionStep(
            after, float(self.afterstate_value[after]), self.chance_logits[after].astype(float)
        )

    def chance(self, afterstate: int, code: int) -> ChanceStep:
        num_afterstates, num_codes = self.next_state.shape
        if not (0 <= afterstate < num_afterstates and 0 <= code < num_codes):
            return ChanceStep(-1, 0.0, 0.0, np.zeros(self.num_actions), 0.0)
        state = int(self.next_state[afterstate, code])
        return ChanceStep(
            state,
            float(self.reward[afterstate, code]),
            float(self.discount[afterstate, code]),
            self.prior_logits[state].astype(float),
            float(self.value[state]),
        )


# ----------------------------------------------------------------------------- the tree


def softmax(logits) -> list[float]:
    """Softmax that gives exactly 0 to ``-inf`` and ``finfo(float32).min`` logits."""
    top = max(logits)
    exps = [math.exp(x - top) for x in logits]
    total = sum(exps)
    return [e / total for e in exps]


class Node:
    """One node; the edge into it (reward, discount, edge index) is stored on the node."""

    def __init__(self, node_id, parent, edge, is_decision):
        self.id = node_id
        self.parent = parent
        self.edge = edge  # mctx's action_from_parent: a, or A + c (None for the root)
        self.is_decision = is_decision
        self.state_embedding = -1
        self.afterstate_embedding = -1
        self.children: dict[int, Node] = {}  # edge index -> child
        self.visit_count = 0
        self.value = 0.0
        self.raw_value = 0.0
        self.reward = 0.0  # of the edge parent -> self
        self.discount = 0.0
        self.logits: list[float] = []  # [A + C], the padding entries are -inf
        self.probs: list[float] = []  # softmax over this node's own A actions or C codes

    def set_logits(self, own_logits, num_actions, num_codes):
        """Pads the node's own logits to width A + C with -inf, as mctx stores them."""
        own = [float(x) for x in own_logits]
        if self.is_decision:
            self.logits = own + [-math.inf] * num_codes
        else:
            self.logits = [-math.inf] * num_actions + own
        self.probs = softmax(own)

    def q(self):
        """Q of the edge into this node, from the parent's point of view."""
        return self.reward + self.discount * self.value

    def child_visits(self, edge):
        child = self.children.get(edge)
        return 0 if child is None else child.visit_count


def argmax_relative_margin(scores: dict[int, float]) -> tuple[int, float]:
    """Argmax (lowest index on ties) and ``(best - runner-up) / max(1, |best|)``."""
    best = min(scores, key=lambda k: (-scores[k], k))
    others = [s for k, s in scores.items() if k != best]
    if not others:
        return best, math.inf
    return best, (scores[best] - max(others)) / max(1.0, abs(scores[best]))


# ----------------------------------------------------------------------------- search


@dataclasses.dataclass
class Result:
    """The reference's outputs for one root, with the tree also laid out as mctx arrays."""

    nodes: list  # node id -> Node, or None for an unused slot
    visit_counts: np.ndarray  # [A]
    action_weights: np.ndarray  # [A]
    root_value: float
    qvalues: np.ndarray  # [A]
    action: int
    min_margin: float  # smallest decision margin seen (inf if no decision had two candidates)
    num_actions: int
    num_chance_outcomes: int

    def arrays(self) -> dict[str, np.ndarray]:
        """Node arrays ``[N + 1]`` and children arrays ``[N + 1, A + C]`` (unused slots as
        mctx leaves them: zeros, -1 for parents, children index and action_from_parent)."""
        n, width = len(self.nodes), self.num_actions + self.num_chance_outcomes
        out = dict(
            node_visits=np.zeros(n, np.int64),
            node_values=np.zeros(n),
            raw_values=np.zeros(n),
            parents=np.full(n, -1, np.int64),
            action_from_parent=np.full(n, -1, np.int64),
            is_decision_node=np.zeros(n, bool),
            state_embedding=np.zeros(n, np.int64),
            afterstate_embedding=np.zeros(n, np.int64),
            children_index=np.full((n, width), -1, np.int64),
            children_visits=np.zeros((n, width), np.int64),
            children_values=np.zeros((n, width)),
            children_prior_logits=np.zeros((n, width)),
            children_rewards=np.zeros((n, width)),
            children_discounts=np.zeros((n, width)),
        )
        for node in self.nodes:
            if node is None:
                continue
            i = node.id
            out["node_visits"][i] = node.visit_count
            out["node_values"][i] = node.value
            out["raw_values"][i] = node.raw_value
            out["parents"][i] = -1 if node.parent is None else node.parent.id
            out["action_from_parent"][i] = -1 if node.edge is None else node.edge
            out["is_decision_node"][i] = node.is_decision
            out["state_embedding"][i] = node.state_embedding
            out["afterstate_embedding"][i] = node.afterstate_embedding
            out["children_prior_logits"][i] = node.logits
            for edge, child in node.children.items():
                out["children_index"][i, edge] = child.id
                out["children_visits"][i, edge] = child.visit_count
                out["children_values"][i, edge] = child.value
                out["children_rewards"][i, edge] = child.reward
                out["children_discounts"][i, edge] = child.discount
        return out


class StochasticReferenceMCTS:
    """One search of one root; use `run_stochastic_muzero`."""

    def __init__(
        self,
        model: TableModel,
        *,
        num_simulations: int,
        max_depth: int | None = None,
        qtransform=None,
        pb_c_init: float = 1.25,
        pb_c_base: float = 19652.0,
    ):
        self.model = model
        self.num_actions = model.num_actions
        self.num_codes = model.num_chance_outcomes
        self.num_simulations = num_simulations
        self.max_depth = num_simulations if max_depth is None else max_depth
        self.qtransform = qtransform or ParentAndSiblings()
        self.pb_c_init = pb_c_init
        self.pb_c_base = pb_c_base
        self.min_margin = math.inf

    def _argmax(self, scores):
        best, margin = argmax_relative_margin(scores)
        self.min_margin = min(self.min_margin, margin)
        return best

    # -- decision nodes: PUCT over the A decision children

    def transformed_q(self, node: Node) -> list[float]:
        """The Q transform sees only the A decision edges (never the C padding edges)."""
        qt = self.qtransform
        visited = [a in node.children for a in range(self.num_actions)]
        qs = [node.children[a].q() if visited[a] else 0.0 for a in range(self.num_actions)]
        if isinstance(qt, ParentAndSiblings):
            pool = [node.value] + [q for q, v in zip(qs, visited, strict=True) if v]
            low, high = min(pool), max(pool)
            scale = max(high - low, qt.epsilon)
            return [(q - low) / scale if v else 0.0 for q, v in zip(qs, visited, strict=True)]
        if isinstance(qt, MinMax):
            scale = qt.max_value - qt.min_value
            return [
                (q - qt.min_value) / scale if v else 0.0 for q, v in zip(qs, visited, strict=True)
            ]
        raise TypeError(f"unsupported Q transform {qt!r}")

    def select_decision(self, node: Node, legal) -> int:
        qs = self.transformed_q(node)
        n = node.visit_count
        pb_c = self.pb_c_init + math.log((n + self.pb_c_base + 1) / self.pb_c_base)
        scores = {
            a: qs[a] + math.sqrt(n) * pb_c * node.probs[a] / (1 + node.child_visits(a))
            for a in range(self.num_actions)
            if legal is None or legal[a]
        }
        return self._argmax(scores)

    # -- chance nodes: the most "under-sampled" code, deterministically

    def select_chance(self, node: Node) -> int:
        scores = {
            c: node.probs[c] / (node.child_visits(self.num_actions + c) + 1)
            for c in range(self.num_codes)
        }
        return self.num_actions + self._argmax(scores)

    # -- expansion and backup

    def _evaluate(self, parent: Node, edge: int, node: Node | None, node_id: int) -> Node:
        """Calls both model functions as mctx does; creates the node or re-evaluates it."""
        decision = self.model.decision(parent.state_embedding, edge)
        chance = self.model.chance(parent.afterstate_embedding, edge - self.num_actions)
        if node is None:
            node = Node(node_id, parent, edge, is_decision=not parent.is_decision)
            parent.children[edge] = node
        # else: a max_depth re-evaluation; the node keeps its children, its value is reset.
        node.state_embedding = chance.state
        node.afterstate_embedding = decision.afterstate
        if parent.is_decision:  # the new node is an afterstate (chance node)
            node.set_logits(decision.chance_logits, self.num_actions, self.num_codes)
            node.raw_value = node.value = decision.afterstate_value
            node.reward, node.discount = 0.0, 1.0
        else:  # the new node is a state (decision node)
            node.set_logits(chance.prior_logits, self.num_actions, self.num_codes)
            node.raw_value = node.value = chance.value
            node.reward, node.discount = chance.reward, chance.discount
        node.visit_count += 1
        return node

    @staticmethod
    def _backup(leaf: Node):
        g, node = leaf.value, leaf
        while node.parent is not None:
            parent = node.parent
            g = node.reward + node.discount * g
            parent.value = (parent.value * parent.visit_count + g) / (parent.visit_count + 1)
            parent.visit_count += 1
            node = parent

    def _simulate(self, root: Node, legal, sim: int) -> Node:
        node, depth = root, 0
        while True:
            if node.is_decision:
                edge = self.select_decision(node, legal if depth == 0 else None)
            else:
                edge = self.select_chance(node)
            child = node.children.get(edge)
            depth += 1  # counts decision and chance edges alike
            if child is None or depth >= self.max_depth:
                break
            node = child
        leaf = self._evaluate(node, edge, child, sim + 1)
        self._backup(leaf)
        return leaf

    def run(self, prior_logits, value, state, legal=None) -> tuple[Node, list]:
        root = Node(0, None, None, is_decision=True)
        root.state_embedding = int(state)
        root.afterstate_embedding = self.model.decision(int(state), 0).afterstate
        root.set_logits(prior_logits, self.num_actions, self.num_codes)
        root.visit_count = 1
        root.raw_value = root.value = float(value)
        nodes = [root] + [None] * self.num_simulations
        for sim in range(self.num_simulations):
            leaf = self._simulate(root, legal, sim)
            if leaf.id == sim + 1:
                nodes[sim + 1] = leaf
        return root, nodes


def root_prior_logits(prior_logits, *, noise, fraction, invalid=None) -> np.ndarray:
    """The root logits mctx searches with ``[A]``: Dirichlet-mixed over all A actions (even when
    ``fraction == 0`` the result is ``log(softmax(logits))``), then masked if a mask is given."""
    logits = np.asarray(prior_logits, float)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    mixed = (1 - fraction) * probs + fraction * np.asarray(noise, float)
    out = np.log(np.maximum(mixed, FLOAT32_TINY))
    if invalid is not None:
        out = np.where(invalid, FLOAT32_MIN, out - out.max())
    return out


def run_stochastic_muzero(
    model: TableModel,
    prior_logits,
    value,
    state,
    *,
    num_simulations,
    invalid=None,
    qtransform=None,
    max_depth=None,
    pb_c_init=1.25,
    pb_c_base=19652.0,
    temperature=1.0,
    action_gumbel=None,
) -> Result:
    """Stochastic MuZero search of one root. ``prior_logits [A]`` are used as given (pass the
    root logits mctx used, see `root_prior_logits`); ``invalid [A]`` bool (True = invalid) or
    None; ``action_gumbel [A]`` the Gumbel noise behind the sampled action (None = most
    visited action)."""
    search = StochasticReferenceMCTS(
        model,
        num_simulations=num_simulations,
        max_depth=max_depth,
        qtransform=qtransform,
        pb_c_init=pb_c_init,
        pb_c_base=pb_c_base,
    )
    legal = None if invalid is None else [not x for x in invalid]
    root, nodes = search.run(prior_logits, value, state, legal)
    num_actions = model.num_actions
    visits = np.array([root.child_visits(a) for a in range(num_actions)], float)
    weights = visits / max(visits.sum(), 1.0)
    if action_gumbel is None:
        action = int(np.argmax(visits))
    else:
        # mctx samples over all A actions, invalid ones included (they have weight 0, so
        # log(tiny) / temperature keeps them out in practice).
        log_w = [math.log(max(w, FLOAT32_TINY)) for w in weights]
        top = max(log_w)
        scale = max(temperature, FLOAT32_TINY)
        action = search._argmax(
            {a: float(action_gumbel[a]) + (log_w[a] - top) / scale for a in range(num_actions)}
        )
    return Result(
        nodes=nodes,
        visit_counts=visits,
        action_weights=weights,
        root_value=root.value,
        qvalues=np.array(
            [root.children[a].q() if a in root.children else 0.0 for a in range(num_actions)]
        ),
        action=action,
        min_margin=search.min_margin,
        num_actions=num_actions,
        num_chance_outcomes=model.num_chance_outcomes,
    )
