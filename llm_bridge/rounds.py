"""Training data for each LM method, built from decodes: pre-training, search distillation,
SFT on the searches' verified solutions, SFT on verified samples (STaR / ReST-EM), GRPO and
REINFORCE. Pure data building; `llm_bridge.train_text` runs the rounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from llm_bridge.decoding import Decoded, SearchTarget
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


def distill_examples(
    env: TextEnv,
    items: Sequence[Any],
    decoded: Decoded,
    searches_per_item: int = 1,
    *,
    solving_searches_only: bool = False,
    unsolved_targets: bool = True,
    teacher_force_solutions: bool = False,
) -> list[SequenceExample]:
    """Search distillation: at every searched decision, cross-entropy to the search policy over
    the candidates; the value head learns the verifier's outcome.

    ``decoded`` holds ``searches_per_item`` consecutive searches per item. Each item yields one
    sequence per distinct decoded completion (value: its reward) and per distinct verified
    completion found anywhere in a solving tree (value 1), so every solution the search found is
    imitated whole. A decision's target, averaged over the searches that reached it, sits on the
    first of those sequences that passes through it; one on none of them (a well-visited node
    off every path) is a one-position sequence of its own.

    ``solving_searches_only``: an item some search solved takes decision targets only from the
    searches that solved it. For `decode_distinct`'s searches, where a later search steers away
    from the solutions found before it, a failed one's targets would teach avoiding them.
    ``unsolved_targets=False``: an item no search solved trains the value head only (its
    searches' targets rest on the value head's guesses, with no verified leaf behind them).
    ``teacher_force_solutions``: on a verified completion, every position that is no searched
    decision of its item (the tokens the grammar forced: the arithmetic) learns its next token,
    as in SFT."""
    _check_rows(decoded, items, searches_per_item)
    examples = []
    for i, item in enumerate(items):
        rows = range(i * searches_per_item, (i + 1) * searches_per_item)
        solving = [row for row in rows if decoded.solutions and decoded.solutions[row]]
        if solving:
            targeted = solving if solving_searches_only else rows
        else:
            targeted = rows if unsolved_targets else []
        examples.extend(
            _item_examples(
                len(env.prompt_ids(item)), decoded, rows, targeted, teacher_force_solutions
            )
        )
    return examples


def _check_rows(decoded: Decoded, items: Sequence[Any], per_item: int) -> None:
    if per_item < 1 or len(decoded.ids) != len(items) * per_item:
        raise ValueError(
            f"{len(decoded.ids)} decodes do not make {per_item} per item for {len(items)} items"
        )


def _item_examples(
    prompt_length: int,
    decoded: Decoded,
    rows: Sequence[int],
    targeted: Sequence[int],
    teacher_force: bool,
) -> list[SequenceExample]:
    """One item's examples from its searches ``rows``, with decision targets from ``targeted``
    (and next-token targets on verified completions, if ``teacher_force``)."""
    values: dict[tuple[int, ...], float] = {}  # sequence -> value target, in order found
    targets: dict[tuple[int, ...], list[SearchTarget]] = {}  # decision prefix -> its targets
    for row in rows:
        values.setdefault(tuple(decoded.ids[row]), float(decoded.rewards[row]))
        for solution in decoded.solutions[row] if decoded.solutions else ():
            values.setdefault(solution, 1.0)
    for row in targeted:
        for target in decoded.targets[row]:
            targets.setdefault(target.ids, []).append(target)
    placed: dict[tuple[int, ...], list[tuple[int, ...]]] = {ids: [] for ids in values}
    examples = []
    for prefix, group in targets.items():
        home = next((ids for ids in values if ids[: len(prefix)] == prefix), None)
        if home is not None:
            placed[home].append(prefix)
            continue
        value = next((t.value for t in group if t.value is not None), float("nan"))
        # value 1 on a verified branch, none for a visited node; at this prefix only
        examples.append(_example(prefix, [prefix], targets, value, len(prefix) - 1, len(prefix)))
    on_paths = [
        _example(ids, sorted(prefixes, key=len), targets, values[ids], prompt_length - 1)
        for ids, prefixes in placed.items()
        if prefixes or not np.isnan(values[ids])
    ]
    if teacher_force:
        on_paths = [_teacher_forced(e, targets, prompt_length) for e in on_paths]
    return on_paths + examples


def _teacher_forced(
    example: SequenceExample, targets: dict[tuple[int, ...], list], prompt_length: int
) -> SequenceExample:
    """A verified completion's example plus next-token targets at every position that is no
    searched decision of its item (the tokens the grammar forced: the arithmetic)."""
    if example.value != 1.0:
        return example
    ids = example.ids
    merged = {  # position -> (candidate ids, target probabilities)
        t: (candidates, policy)
        for t, candidates, policy in zip(
            example.positions, example.candidates, example.policy, strict=True
        )
    }
    for t in range(prompt_length - 1, len(ids) - 1):
        if tuple(ids[: t + 1]) not in targets:
            merged[t] = ([ids[t + 1]], [1.0])
    positions = sorted(merged)
    return replace(
        example,
        positions=positions,
        candidates=[merged[t][0] for t in positions],
        policy=[merged[t][1] for t in positions],
    )


def _example(
    ids: tuple[int, ...],
    prefixes: list[tuple[int, ...]],
    targets: dict[tuple[int, ...], list[SearchTarget]],
    value: float,
    value_from: int,
    value_to: int | None = None,
) -> SequenceExample:
    """``ids`` with the mean search policy at each decision after one of ``prefixes``."""
    return SequenceExample(
        list(ids),
        [len(prefix) - 1 for prefix in prefixes],
        [targets[prefix][0].candidates.tolist() for prefix in prefixes],
        [np.mean([t.policy for t in targets[prefix]], axis=0).tolist() for prefix in prefixes],
        value=value,
        value_from=value_from,
        value_to=value_to,
    )


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


def search_verified_examples(
    env: TextEnv, items: Sequence[Any], decoded: Decoded, searches_per_item: int
) -> list[SequenceExample]:
    """Rejection fine-tuning with the search as the sampler: teacher forcing on every distinct
    verified completion the item's searches found anywhere in their trees (value 1), where SFT
    on verified samples has only the samples; each distinct failed decoded completion trains
    the value head alone (value 0), which the next round's searches steer by. ``decoded`` holds
    ``searches_per_item`` consecutive searches per item."""
    _check_rows(decoded, items, searches_per_item)
    examples = []
    for i, item in enumerate(items):
        prompt_length = len(env.prompt_ids(item))
        rows = range(i * searches_per_item, (i + 1) * searches_per_item)
        solved = {s for row in rows for s in (decoded.solutions[row] if decoded.solutions else ())}
        failed = {tuple(decoded.ids[row]) for row in rows if decoded.rewards[row] <= 0}
        for ids in sorted(solved):
            examples.append(next_token_example(ids, prompt_length, value=1.0))
        for ids in sorted(failed - solved):  # a solution an earlier search found scores 0 later
            examples.append(
                SequenceExample(list(ids), [], [], [], value=0.0, value_from=prompt_length - 1)
            )
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


def reinforce_examples(
    env: TextEnv,
    items: Sequence[Any],
    decoded: Decoded,
    samples_per_item: int,
    baseline: str,
) -> list[SequenceExample]:
    """Every sample, its reward as the value target; with the ``group_mean`` baseline the
    advantage is ``r - mean`` over the item's samples, otherwise ``r`` (the ``value`` baseline
    is subtracted per token by `llm_bridge.objectives.ReinforceObjective`). Unlike GRPO no group
    is dropped: under a learned baseline, an all-failed group still says "less of this"."""
    examples = []
    rewards = decoded.rewards.reshape(len(items), samples_per_item)
    for i, item in enumerate(items):
        centre = rewards[i].mean() if baseline == "group_mean" else 0.0
        prompt_length = len(env.prompt_ids(item))
        for j in range(samples_per_item):
            ids, reward = decoded.ids[i * samples_per_item + j], float(rewards[i, j])
            examples.append(
                next_token_example(ids, prompt_length, value=reward, advantage=reward - centre)
            )
    return examples


@torch.no_grad()
def _attach_log_probs(network: torch.nn.Module, examples: list[SequenceExample], chunk: int = 256):
    for start in range(0, len(examples), chunk):
        part = examples[start : start + chunk]
        batch = collate(part)
        log_probs = sampled_log_probs(network(batch["ids"]).logits, batch)
        for row, example in enumerate(part):
            example.old_log_prob = log_probs[row, example.positions].tolist()
