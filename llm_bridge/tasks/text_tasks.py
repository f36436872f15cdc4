"""Tasks as the decoding environment sees them (`llm_bridge.text_env.TextTask`), by name.

``make_task(name)`` returns ``TaskSplit(task, train, test)``; an unknown name lists the known
ones. Countdown's grammar (`countdown.allowed_next`) keeps every step well formed and its
arithmetic right, so search and sampling only choose which numbers and operators to combine.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from llm_bridge.tasks import countdown
from llm_bridge.verifiers import CountdownVerifier, VerifierStats

TASKS = ("countdown24", "countdown_general")
_FEW_SHOT_NUMBERS = [
    (1, 2, 3, 4),
    (2, 3, 4, 5),
    (3, 3, 8, 8),
    (1, 5, 5, 5),
    (4, 4, 10, 10),
    (2, 2, 6, 7),
    (1, 3, 4, 6),
    (5, 6, 7, 8),
]


class CountdownTask:
    """Puzzles in, step-format completions out, 1.0 for a completion that verifies.

    ``few_shot`` worked examples (fixed solvable puzzles with their solutions, separated by
    spaces) precede the puzzle: a long shared prefix, as real LM prompts have, for the KV-cache
    benchmark; the project's small model is trained without them (``few_shot=0``).
    """

    def __init__(self, grammar: bool = True, few_shot: int = 0):
        self.grammar = grammar
        self.verifier = CountdownVerifier()
        self.stats = VerifierStats()  # every verdict since the last reset, by status
        examples = [countdown.Puzzle(n) for n in _FEW_SHOT_NUMBERS[:few_shot]]
        self.preamble = "".join(
            f"{p.prompt}{','.join(countdown.solve(p.numbers))} " for p in examples
        )

    def prompt(self, item: countdown.Puzzle) -> str:
        return self.preamble + item.prompt

    def allowed_next(self, item: countdown.Puzzle, completion: str) -> frozenset[str] | None:
        return countdown.allowed_next(item, completion) if self.grammar else None

    def reward(self, item: countdown.Puzzle, completion: str) -> float:
        result = self.verifier(item.prompt, completion)
        self.stats.record(result)
        return result.reward

    def step_width(self, item: countdown.Puzzle) -> int:
        return countdown.step_action_width(len(item.numbers))

    def steps(self, item: countdown.Puzzle, completion: str) -> list[tuple[str, bool] | None]:
        """Step-level actions: (pair, operation) -> ``(",a op b=c", last step?)`` or None."""
        numbers = countdown.completion_numbers(item, completion)
        width = self.step_width(item)
        if numbers is None or len(numbers) < 2:
            return [None] * width
        separator = "," if completion else ""
        steps: list[tuple[str, bool] | None] = []
        for action, legal in enumerate(countdown.legal_step_mask(numbers, width)):
            if not legal:
                steps.append(None)
                continue
            remaining, text = countdown.apply_step(numbers, action)
            steps.append((separator + text, len(remaining) == 1))
        return steps

    def reference(self, item: countdown.Puzzle, limit: int = 1) -> list[str]:
        """Solver solutions as completions (pre-training data)."""
        return [",".join(steps) for steps in countdown.solutions(item.numbers, item.target, limit)]


class TaskSplit(NamedTuple):
    """``train`` and ``test`` split the task's own prompts; ``extra`` holds verifier-only
    training prompts (no solver solutions are used for them): searched or sampled in training
    rounds, never pre-trained on and never evaluated."""

    task: Any
    train: list
    test: list
    extra: tuple | list = ()

    def round_prompts(self) -> list:
        """The prompts a training round decodes: the training split, then the extra ones."""
        return [*self.train, *self.extra]


def make_task(
    name: str,
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    grammar: bool = True,
    num_numbers: int = 5,
    count: int = 2000,
    extra_train: int = 0,
) -> TaskSplit:
    """``countdown24``: the 1,362 solvable four-number puzzles, split by multiset; with
    ``extra_train``, up to that many four-number puzzles with other targets (10-99) become the
    split's ``extra`` prompts (only those whose multisets hash to the training side, so none
    shares a test puzzle's numbers): more prompts for methods that need only a verifier.
    ``countdown_general``: ``count`` puzzles of ``num_numbers`` numbers and targets 10..99."""
    if name == "countdown24":
        puzzles = countdown.countdown24_puzzles()
    elif name == "countdown_general":
        puzzles = countdown.general_countdown_puzzles(
            num_numbers=num_numbers, count=count, seed=seed
        )
    else:
        raise ValueError(f"unknown task {name!r}; choose one of {TASKS}")
    train, test = countdown.split_puzzles(puzzles, test_fraction, seed)
    extra = []
    if extra_train > 0:
        others = [t for t in range(10, 100) if t != 24]
        generated = countdown.general_countdown_puzzles(
            4, targets=others, count=extra_train, seed=seed
        )
        extra = countdown.split_puzzles(generated, test_fraction, seed)[0]
    return TaskSplit(CountdownTask(grammar), train, test, extra)


def task_from_spec(spec: dict) -> TaskSplit:
    """The task and split a checkpoint was trained on (``train_text.task_spec``)."""
    return make_task(
        spec["name"], test_fraction=spec["test_fraction"], seed=spec["split_seed"], **spec["params"]
    )
