"""The descent of Stochastic MuZero search (Antonoglou et al., ICLR 2022) as numba kernels.

Stochastic MuZero alternates two kinds of node in one tree: a *decision* node (a state: the agent
picks one of ``A`` actions) and a *chance* node (an afterstate: nature picks one of ``C`` outcome
codes). The tree is the ordinary `search.tree.Tree`, ``W = A + C`` edge slots wide, as in mctx:

* edge ``a < A`` of a decision node is action ``a``; edge ``A + c`` of a chance node is code
  ``c``. A decision node stores its action logits in slots ``[0, A)`` and marks ``[A, W)``
  illegal; a chance node stores its chance logits in ``[A, W)`` and marks ``[0, A)`` illegal. So
  the `PRIOR_PROBS` row of either kind is the softmax over its own slots, and every per-node
  rule of the deterministic search (priors, Q transforms, PUCT, Gumbel's root and interior
  rules) applies unchanged to the first ``A`` slots of a decision node;
* ``node_is_decision [B, N+1]`` bool is the kind flag (True for the root and every state). The
  kinds alternate, so a child's kind is the negation of its parent's;
* decision -> chance edges have reward 0 and discount 1 (the chance node's value is the afterstate
  value); chance -> decision edges carry the model's reward and discount, so in two-player games
  the sign flips on chance edges only;
* as in the deterministic search, simulation ``i`` creates node ``i + 1`` (of either kind), or,
  at ``max_depth``, re-evaluates the existing child and leaves slot ``i + 1`` unused.

Per simulation, `simulate_serial` (or `_parallel`) descends every tree to the edge to expand and
says, per root, which model function that edge needs (`expands_afterstate`); the orchestrator
(`search.stochastic_search`) calls each function once on its subset of roots, and the
deterministic search's `search.kernels.expand_and_backup_*` stores and backs up the outputs.
"""

from __future__ import annotations

import numba
import numpy as np

from search.borrow import borrow
from search.kernels import FASTMATH, root_considered_visit, select_action, write_prior_probs
from search.tree import DISCOUNTS, INDEX, PRIOR_PROBS, ROOT_INDEX, UNVISITED, VISITS


@numba.njit(cache=True, inline="always")
def chance_edge(counts, stats, b, node, num_actions):
    """Stochastic MuZero's chance selection as mctx runs it: the code that is most
    under-sampled relative to its probability, ``argmax_c p(c) / (N(c) + 1)``, with ties to the
    lowest code. Deterministic (no noise, no Q values). Returns the edge ``A + c``."""
    best_edge = num_actions
    best_score = -np.inf
    for edge in range(num_actions, counts.shape[3]):
        score = np.float64(stats[b, node, PRIOR_PROBS, edge]) / (
            counts[b, node, VISITS, edge] + 1.0
        )
        if score > best_score:
            best_score = score
            best_edge = edge
    return best_edge


@numba.njit(cache=True, fastmath=FASTMATH, inline="always")
def descend(tree, node_is_decision, b, params, considered_visit, qvalues):
    """Descends tree ``b`` from the root to an unexpanded edge (or to ``max_depth``; depth counts
    decision and chance edges alike). Returns ``(parent, edge, child, depth)``; ``child`` is
    `UNVISITED` for a new edge.

    Decision nodes choose by the policy's rule (`search.kernels.select_action`: PUCT, or
    Gumbel's sequential halving at the root and its deterministic rule below) over the ``A``
    action slots only, since ``qvalues`` is an ``[A]`` work row."""
    counts, stats = tree.children_counts, tree.children_stats
    num_actions = qvalues.shape[0]
    node = ROOT_INDEX
    depth = 0
    parent_q = 0.0
    while True:
        if not tree.prior_probs_ready[b, node]:  # a leaf until now
            write_prior_probs(stats, tree.children_legal, b, node)
            tree.prior_probs_ready[b, node] = True
        if node_is_decision[b, node]:
            edge, mean_q = select_action(
                tree, b, node, depth, params, considered_visit, parent_q, qvalues
            )
        else:
            edge, mean_q = chance_edge(counts, stats, b, node, num_actions), parent_q
        child = counts[b, node, INDEX, edge]
        depth += 1
        if child == UNVISITED or depth >= params.max_depth:
            return node, edge, child, depth
        # The mean Q is in this node's view; the child sees it through the edge's sign.
        parent_q = mean_q * np.sign(stats[b, node, DISCOUNTS, edge])
        node = child


@numba.njit(cache=True, fastmath=FASTMATH)
def _simulate_one(
    tree,
    node_is_decision,
    b,
    params,
    sim,
    considered_table,
    num_considered,
    pending,
    expands_afterstate,
    scratch,
):
    # Borrowed here, not in the drivers: numba's parfor lowering rejects borrowed records.
    tree, pending, scratch = borrow((tree, pending, scratch))
    considered_visit = root_considered_visit(params, considered_table, num_considered, b, sim)
    parent, edge, child, depth = descend(
        tree, node_is_decision, b, params, considered_visit, scratch[b]
    )
    pending.parent_index[b] = parent
    pending.action[b] = edge
    pending.node_index[b] = sim + 1 if child == UNVISITED else child
    pending.depth[b] = depth
    pending.is_reset[b] = False
    # A decision node's edge leads to an afterstate (the decision function); a chance node's
    # edge leads to a state (the chance, or dynamics, function).
    expands_afterstate[b] = node_is_decision[b, parent]


@numba.njit(cache=True)
def simulate_serial(
    tree,
    node_is_decision,
    params,
    sim,
    considered_table,
    num_considered,
    pending,
    expands_afterstate,
    scratch,
):
    """`descend` for every root; writes ``pending`` and ``expands_afterstate`` ``[B]`` bool.
    ``considered_table`` and ``num_considered`` are Gumbel's root schedule, as in
    `search.kernels.simulate_serial`; ``scratch`` is ``[B, A]`` float64."""
    for b in range(pending.parent_index.shape[0]):
        _simulate_one(
            tree,
            node_is_decision,
            b,
            params,
            sim,
            considered_table,
            num_considered,
            pending,
            expands_afterstate,
            scratch,
        )


@numba.njit(cache=True, parallel=True)
def simulate_parallel(
    tree,
    node_is_decision,
    params,
    sim,
    considered_table,
    num_considered,
    pending,
    expands_afterstate,
    scratch,
):
    # Not inlined, as in `search.kernels.simulate_parallel`: parfor loses inlined record writes.
    for b in numba.prange(pending.parent_index.shape[0]):
        _simulate_one(
            tree,
            node_is_decision,
            b,
            params,
            sim,
            considered_table,
            num_considered,
            pending,
            expands_afterstate,
            scratch,
        )
