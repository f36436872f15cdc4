"""Training data for each LM method, built from decodes: pre-training, search distillation,
SFT on verified samples (STaR / ReST-EM) and GRPO. Pure data building; `llm_bridge.train_text`
runs the rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from llm_bridge.decoding import Decoded
from llm_bridge.examples import SequenceExample, collate, next_token_example
from llm_bridge.objectives import sampled_log_probs
from llm_bridge.text_env import TextEnv


def pretrain_examples(
    env: TextEnv, items: Sequence[Any], solutions_per_item: int
) -> list[SequenceExample]:
    """Teacher forcing on solver solutions (up to ``solutions_per_item`` distinct ones each)."""
    examples = []
    for item in items:
        prompt = env.prompt_ids(item)
        for completion in env.task.reference(item, solutions_per_item):
            ids = [*prompt, *env.tokenizer.encode(completion), env.tokenizer.eos_id]
            examples.append(next_token_example(ids, len(prompt)))
    return examples


def distill_examples(env: TextEnv, items: Sequence[Any], decoded: Decoded) -> list[SequenceExample]:
    """Search distillation: at every searched decision, cross-entropy to the search policy over
    the candidates; the value head learns the verifier's outcome. Targets on the decoded
    completion share its sequence; targets off it (other verified branches, with value 1, or
    well-visited interior nodes) are sequences of their own."""
    examples = []
    for item, ids, reward, targets in zip(
        items, decoded.ids, decoded.rewards, decoded.targets, strict=True
    ):
        prompt_length = len(env.prompt_ids(item))
        on_path = [t for t in targets if tuple(ids[: len(t.ids)]) == tuple(t.ids)]
        examples.append(
            SequenceExample(
                list(ids),
                [len(t.ids) - 1 for t in on_path],
                [t.candidates.tolist() for t in on_path],
                [t.policy.tolist() for t in on_path],
                value=float(reward),
                value_from=prompt_length - 1,
            )
        )
        for t in targets:
            if tuple(ids[: len(t.ids)]) != tuple(t.ids):  # off the path: its own sequence
                value = float("nan") if t.value is None else t.value
                examples.append(
                    SequenceExample(
                        list(t.ids),
                        [len(t.ids) - 1],
                        [t.candidates.tolist()],
                        [t.policy.tolist()],
                        value=value,  # 1 on a verified branch; none for a visited node
                        value_from=len(t.ids) - 1,
                        value_to=len(t.ids),
                    )
                )
    return examples


def verified_examples(
    env: TextEnv, items: Sequence[Any], decoded: Decoded, samples_per_item: int
) -> list[SequenceExample]:
    """STaR / ReST-EM: teacher forcing on the distinct samples the verifier accepted.
    ``decoded`` holds ``samples_per_item`` consecutive samples per item."""
    examples, seen = [], set()
    for k, (ids, reward) in enumerate(zip(decoded.ids, decoded.rewards, strict=True)):
        if reward > 0 and tuple(ids) not in seen:
            seen.add(tuple(ids))
            prompt_length = len(env.prompt_ids(items[k // samples_per_item]))
            examples.append(next_token_example(ids, prompt_length, value=1.0))
    return examples


def grpo_examples(
    env: TextEnv,
    items: Sequence[Any],
    decoded: Decoded,
    samples_per_item: int,
    network: torch.nn.Module,
) -> list[SequenceExample]:
    """Group-relative advantages ``(r - mean) / (std + eps)`` within each item's samples; groups
    where every sample scored the same carry no signal and are dropped. Old log-probs come from
    ``network`` as it sampled (before this round's updates)."""
    examples = []
    rewards = decoded.rewards.reshape(len(items), samples_per_item)
    for i, item in enumerate(items):
        group = rewards[i]
        if group.std() == 0:
            continue
        advantages = (group - group.mean()) / (group.std() + 1e-4)
        prompt_length = len(env.prompt_ids(item))
        for j in range(samples_per_item):
            ids = decoded.ids[i * samples_per_item + j]
            examples.append(next_token_example(ids, prompt_length, advantage=float(advantages[j])))
    _attach_log_probs(network, examples)
    return examples


@torch.no_grad()
def _attach_log_probs(network: torch.nn.Module, examples: list[SequenceExample], chunk: int = 256):
    for start in range(0, len(examples), chunk):
        part = examples[start : start + chunk]
        batch = collate(part)
        log_probs = sampled_log_probs(network(batch["ids"]).logits, batch)
        for row, example in enumerate(part):
            example.old_log_prob = log_probs[row, example.positions].tolist()
