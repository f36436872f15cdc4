"""On-policy distillation: the student samples completions, a teacher gives its distribution at
every decision the student made, and the student is pulled towards it on its own states
(`llm_bridge.objectives.OnPolicyDistillObjective`), so it learns to recover from its own
mistakes instead of only imitating paths it would not take (Agarwal et al. 2024, GKD).

Teachers, both exact over the decision's candidate set (the student's top-k grammar-allowed
tokens), whose size is small:

- ``search``: the improved policy of a search rooted at the student's state (the search of
  `llm_bridge.decoding`, with the verifier at the leaves): expert iteration on the student's
  distribution. Its forward passes are the student's, counted by the same adapter.
- a stronger checkpoint (a wider model, or a later round): its next-token distribution
  restricted to the candidates; one forward pass per decision scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llm_bridge.decoding import Decoded, TreeSearchSettings, masked_softmax, search_roots
from llm_bridge.examples import SequenceExample
from llm_bridge.text_env import TextEnv, TextNode

SEARCH_TEACHER = "search"
_CHUNK = 512  # decisions per batched teacher call


def search_teacher(
    env: TextEnv, decisions: list[TextNode], settings: TreeSearchSettings, seed: int
) -> list[np.ndarray]:
    """The search's improved policy (``action_weights``, [K]) at each decision node: searches
    rooted at the student's states, batched, sharing the env's cache of evaluated prefixes."""
    policies = []
    for start in range(0, len(decisions), _CHUNK):
        roots = decisions[start : start + _CHUNK]
        keys = np.arange(start, start + len(roots), dtype=np.int64) + seed * 1_000_003
        policies.extend(search_roots(env, roots, settings, keys).action_weights)
    return [np.asarray(p, np.float32) for p in policies]


def checkpoint_teacher(teacher_adapter, decisions: list[TextNode]) -> list[np.ndarray]:
    """A teacher model's next-token distribution over each decision's candidates (0 on padded
    slots); ``teacher_adapter.forward_passes`` counts one pass per decision."""
    policies = []
    for start in range(0, len(decisions), _CHUNK):
        part = decisions[start : start + _CHUNK]
        _, output = teacher_adapter.start([node.state.ids for node in part])
        logits = output.logits.numpy()
        for node, row in zip(part, logits, strict=True):
            candidate_logits = row[np.where(node.legal, node.candidates, 0)]
            policies.append(masked_softmax(candidate_logits, node.legal).astype(np.float32))
    return policies


def on_policy_examples(
    env: TextEnv,
    items: Sequence[Any],
    decoded: Decoded,
    decisions: list[list[TextNode]],
    teacher_policies: list[np.ndarray],
    samples_per_item: int,
) -> list[SequenceExample]:
    """One example per sample: at each of its decisions the teacher's distribution over the
    decision's candidates (``teacher_policies`` in the order of the flattened ``decisions``),
    and the sample's reward as the value head's target."""
    examples, flat = [], iter(teacher_policies)
    for row, (ids, path) in enumerate(zip(decoded.ids, decisions, strict=True)):
        prompt_length = len(env.prompt_ids(items[row // samples_per_item]))
        policies = [next(flat) for _ in path]
        examples.append(
            SequenceExample(
                ids=list(ids),
                positions=[len(node.state.ids) - 1 for node in path],
                candidates=[node.candidates.tolist() for node in path],
                policy=[p.tolist() for p in policies],
                value=float(decoded.rewards[row]),
                value_from=prompt_length - 1,
            )
        )
    return examples
