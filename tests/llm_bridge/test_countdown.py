"""Countdown rules, solver, puzzle sets, character grammar and step actions."""

import random
from fractions import Fraction

import pytest

from llm_bridge.tasks.countdown import (
    Puzzle,
    allowed_next,
    apply_step,
    completion_numbers,
    countdown24_puzzles,
    general_countdown_puzzles,
    legal_step_mask,
    literal,
    solutions,
    solve,
    split_puzzles,
    step_action_width,
    verify,
)
from llm_bridge.tokenizer import COUNTDOWN_ALPHABET, EOS


@pytest.fixture(scope="module")
def puzzles():
    return countdown24_puzzles()


def test_countdown24_has_1362_sorted_solvable_puzzles(puzzles):
    assert len(puzzles) == 1362
    assert puzzles == sorted(puzzles)
    assert all(p.target == 24 and len(p.numbers) == 4 for p in puzzles)
    assert Puzzle((1, 1, 1, 1)) not in puzzles


def test_prompt_format_round_trips():
    puzzle = Puzzle((6, 1, 4, 3))
    assert puzzle.numbers == (1, 3, 4, 6)
    assert puzzle.prompt == "1 3 4 6>24:"
    assert Puzzle.from_prompt("1 3 4 6>24:") == puzzle
    assert Puzzle.from_prompt("2 5>10:\n1 3 4 6>24:") == puzzle  # the last puzzle counts
    assert set(puzzle.prompt) <= set(COUNTDOWN_ALPHABET)
    with pytest.raises(ValueError, match="no Countdown prompt"):
        Puzzle.from_prompt("1 3 4 6 = 24")


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("x12 3>5:", ((3, 12), 5)),  # digits after a letter
        ("1  3 4 6>24: \t", ((3, 4, 6), 24)),  # after a double space; trailing whitespace
        ("worked: 2 5>10:\n 7 8>15:", ((7, 8), 15)),
        ("1 3 >24:", None),
        ("7>24:", None),
        ("1 3>24", None),
        ("1 3>2\u0664:", None),  # a non-ASCII digit
    ],
)
def test_the_puzzle_is_read_from_the_end_of_the_prompt(prompt, expected):
    if expected is None:
        with pytest.raises(ValueError, match="no Countdown prompt"):
            Puzzle.from_prompt(prompt)
    else:
        assert Puzzle.from_prompt(prompt) == Puzzle(*expected)


@pytest.mark.parametrize("prompt", ["7" * 1_000_000, "1 " * 500_000 + ">24:"])
def test_a_huge_prompt_is_refused_at_once_with_a_short_message(prompt):
    with pytest.raises(ValueError, match="no Countdown prompt") as refused:
        Puzzle.from_prompt(prompt)  # a regular expression took minutes on these
    assert len(str(refused.value)) < 200


def test_puzzle_rejects_bad_numbers():
    with pytest.raises(ValueError, match="two or more"):
        Puzzle((5,))
    with pytest.raises(ValueError, match="non-negative"):
        Puzzle((1, -2))


def test_literals_write_rationals_with_a_bar():
    assert literal(Fraction(12)) == "12"
    assert literal(Fraction(6, 8)) == "3|4"


def test_known_solvable_and_unsolvable_puzzles():
    assert solve((1, 1, 1, 1)) is None
    assert solve((3, 3, 8, 8)) == ["8/3=8|3", "3-8|3=1|3", "8/1|3=24"]  # 8/(3-8/3)
    assert solve((1, 3, 4, 6)) == ["3/4=3|4", "1-3|4=1|4", "6/1|4=24"]  # 6/(1-3/4)
    assert solve((1, 2, 3, 4)) is not None


def test_one_three_four_six_needs_fractions():
    found = solutions((1, 3, 4, 6), limit=1000)
    assert found and all(any("|" in step for step in steps) for steps in found)


def test_every_canonical_solution_verifies(puzzles):
    for puzzle in puzzles:
        steps = solve(puzzle.numbers)
        assert steps is not None and len(steps) == 3
        assert verify(puzzle, ",".join(steps)) == (True, "ok"), puzzle


def test_solutions_are_distinct_valid_and_limited():
    puzzle = Puzzle((1, 2, 3, 4))
    found = solutions(puzzle.numbers, limit=25)
    assert len(found) == 25
    assert len({tuple(steps) for steps in found}) == 25
    assert all(verify(puzzle, ",".join(steps)).correct for steps in found)
    shuffled = solutions(puzzle.numbers, limit=25, rng=random.Random(0))
    assert shuffled == solutions(puzzle.numbers, limit=25, rng=random.Random(0))
    assert shuffled != found


def test_split_is_disjoint_covering_and_about_the_fraction(puzzles):
    train, test = split_puzzles(puzzles, test_fraction=0.2, seed=0)
    assert not {p.numbers for p in train} & {p.numbers for p in test}
    assert sorted(train + test) == puzzles
    assert 0.15 < len(test) / len(puzzles) < 0.25


def test_split_is_deterministic_and_order_independent(puzzles):
    shuffled = list(puzzles)
    random.Random(1).shuffle(shuffled)
    assert split_puzzles(shuffled, seed=3) == split_puzzles(puzzles, seed=3)
    assert split_puzzles(puzzles, seed=3) != split_puzzles(puzzles, seed=4)


def test_split_keeps_a_multiset_on_one_side_across_targets():
    puzzles = [Puzzle((1, 2, 3, 4), target) for target in range(1, 30)]
    train, test = split_puzzles(puzzles, seed=0)
    assert not train or not test


@pytest.mark.parametrize(
    ("completion", "reason"),
    [
        ("3/4=3|4,1-3|4=1|4,6/1|4=24", "ok"),
        ("3+4=8,1+6=7,8*7=56", "wrong arithmetic 3+4=8"),
        ("3+3=6,1+4=5,6*5=30", "number 3 not available"),
        ("7+1=8,3*4=12,12+6=18", "number 7 not available"),
        ("3*4=12,12*6=72", "unused numbers 1 72"),
        ("3*4=12,12*6=72,72-1=71", "final 71 != 24"),
        ("1-3=0,4*6=24,24+0=24", "negative result 1-3"),
        ("6/3=2,1-1=0,2/0=0", "number 1 not available"),
        ("6*4=24,3-1=2,24+2=26,26-1=25", "extra step '26-1=25'"),
        ("3/4=0.75", "malformed step '3/4=0.75'"),
        ("3/4=6|8,1-6|8=1|4,6/1|4=24", "wrong arithmetic 3/4=6|8"),
        ("6 * 4 = 24", "malformed step '6 * 4 = 24'"),
        ("", "malformed step ''"),
        ("3/4=3|4,", "malformed step ''"),
        ("٣/4=3|4", "malformed step '٣/4=3|4'"),
    ],
)
def test_verify_gives_the_first_problem(completion, reason):
    assert verify(Puzzle((1, 3, 4, 6)), completion).reason == reason


def test_verify_rejects_division_by_zero():
    verdict = verify(Puzzle((2, 2, 5)), "2-2=0,5/0=1")
    assert verdict == (False, "division by zero 5/0")


def test_verify_never_raises_on_junk():
    rng = random.Random(0)
    alphabet = COUNTDOWN_ALPHABET + "x()\n٣"
    for length in range(60):
        text = "".join(rng.choice(alphabet) for _ in range(length))
        assert verify(Puzzle((1, 3, 4, 6)), text).correct is False
    assert not verify(Puzzle((1, 3, 4, 6)), "9" * 10_000 + "+1=2").correct


def walk(puzzle, rng, steer=None):
    """Characters chosen at random among the allowed ones until <eos>; returns the text."""
    text = ""
    while True:
        allowed = allowed_next(puzzle, text)
        assert allowed, f"grammar dead end after {text!r}"
        char = steer(text, allowed) if steer else rng.choice(sorted(allowed))
        if char == EOS:
            return text
        text += char


def test_grammar_allows_every_canonical_solution(puzzles):
    for puzzle in puzzles[::7]:
        completion = ",".join(solve(puzzle.numbers))
        for end in range(len(completion)):
            assert completion[end] in allowed_next(puzzle, completion[:end])
        assert allowed_next(puzzle, completion) == {EOS}


def test_grammar_random_walks_are_well_formed(puzzles):
    rng = random.Random(0)
    for puzzle in rng.sample(puzzles, 100) + general_countdown_puzzles(count=20):
        completion = walk(puzzle, rng)
        assert set(completion) <= set(COUNTDOWN_ALPHABET)
        assert verify(puzzle, completion).well_formed, completion


def grammar_accepts(puzzle, text):
    return all(text[end] in allowed_next(puzzle, text[:end]) for end in range(len(text))) and (
        EOS in allowed_next(puzzle, text)
    )


def test_grammar_accepts_exactly_the_well_formed_completions(puzzles):
    # verify is the slow reference: mutated solutions are accepted by the grammar iff verify
    # finds them well formed.
    rng = random.Random(0)
    accepted = 0
    for puzzle in rng.sample(puzzles, 150):
        text = list(",".join(rng.choice(solutions(puzzle.numbers, limit=20))))
        for _ in range(rng.randint(0, 2)):
            position = rng.randrange(len(text) + 1)
            kind = rng.choice(["insert", "replace", "delete"])
            if kind != "insert" and position < len(text):
                del text[position]
            if kind != "delete":
                text.insert(position, rng.choice(COUNTDOWN_ALPHABET))
        completion = "".join(text)
        accepts = grammar_accepts(puzzle, completion)
        assert accepts == verify(puzzle, completion).well_formed, completion
        accepted += accepts
    assert 20 < accepted < 130  # both outcomes are exercised


def test_grammar_rejects_a_wrong_result_digit():
    puzzle = Puzzle((1, 3, 4, 6))
    assert allowed_next(puzzle, "6*4=") == {"2"}
    assert allowed_next(puzzle, "6*4=2") == {"4"}
    assert allowed_next(puzzle, "6*4=25") == frozenset()
    assert allowed_next(puzzle, "3/4=") == {"3"}
    assert allowed_next(puzzle, "3/4=3") == {"|"}


def test_grammar_tells_short_literals_from_long_ones():
    puzzle = Puzzle((1, 3, 12, 13))
    assert allowed_next(puzzle, "") == {"1", "3"}
    assert allowed_next(puzzle, "1") == {"2", "3", "+", "*", "/"}  # no b <= 1 for "1-"
    # 3 - b needs b <= 3: only 1 (the single 3 is already in use).
    assert allowed_next(puzzle, "3-") == {"1"}
    assert allowed_next(puzzle, "3-1") == {"="}
    assert allowed_next(puzzle, "13-") == {"1", "3"}
    assert allowed_next(puzzle, "13-1") == {"2", "="}
    assert allowed_next(puzzle, "1-") == frozenset()


def test_grammar_respects_multiplicity_and_zero():
    assert allowed_next(Puzzle((3, 3, 8, 8)), "3-") == {"3"}
    assert allowed_next(Puzzle((5, 6)), "6-") == {"5"}
    zero = Puzzle((2, 2, 5))
    assert allowed_next(zero, "2-2=0,") == {"0", "5"}
    assert allowed_next(zero, "2-2=0,5") == {"+", "-", "*"}  # 5/0 is illegal
    assert allowed_next(zero, "2-2=0,0") == {"+", "*", "/"}  # 0-5 is negative


def test_grammar_ends_with_comma_or_eos():
    puzzle = Puzzle((1, 3, 4, 6))
    assert allowed_next(puzzle, "6*4=24") == {","}
    assert allowed_next(puzzle, "6*4=24,3-1=2,24+2=26") == {EOS}  # wrong final: verify's job
    assert allowed_next(puzzle, "6*4=24,3-1=2,24+2=26,") == frozenset()
    assert allowed_next(puzzle, "6*4=25,") == frozenset()
    assert allowed_next(puzzle, "x") == frozenset()


def test_completion_numbers_after_complete_steps():
    puzzle = Puzzle((1, 3, 4, 6))
    assert completion_numbers(puzzle, "") == (1, 3, 4, 6)
    assert completion_numbers(puzzle, "3/4=3|4,") == (Fraction(3, 4), 1, 6)
    assert completion_numbers(puzzle, "3/4=3|4,1-3|4=1|4") == (Fraction(1, 4), 6)
    assert completion_numbers(puzzle, "3/4=1") is None


def test_step_action_width_counts_pairs_times_six():
    assert step_action_width(4) == 36
    assert step_action_width(2) == 6


def test_apply_step_matches_arithmetic():
    numbers = (Fraction(1), Fraction(3), Fraction(4), Fraction(6))
    # Pairs in colex order (0,1), (0,2), (1,2), ...; ops a+b, a-b, b-a, a*b, a/b, b/a.
    assert apply_step(numbers, 0) == ((4, 4, 6), "1+3=4")
    assert apply_step(numbers, 2) == ((2, 4, 6), "3-1=2")
    assert apply_step(numbers, 2 * 6 + 4) == ((Fraction(3, 4), 1, 6), "3/4=3|4")
    assert apply_step((Fraction(1, 4), Fraction(6)), 5) == ((24,), "6/1|4=24")
    for action in range(36):
        if legal_step_mask(numbers, 36)[action]:
            after, text = apply_step(numbers, action)
            assert list(after) == sorted(after) and len(after) == 3
            assert completion_numbers(Puzzle((1, 3, 4, 6)), text) == after


def test_masks_exclude_negatives_division_by_zero_and_missing_pairs():
    mask = legal_step_mask((Fraction(0), Fraction(2), Fraction(5)), 36)
    assert mask[:6] == [True, False, True, True, True, False]  # 0-2 < 0 and 2/0 are illegal
    assert mask[3 * 6 :] == [False] * 18  # pairs with index 3 do not exist in a 3-number state
    equal = legal_step_mask((Fraction(3), Fraction(3)), 6)
    assert equal == [True] * 6  # 3-3 = 0 is not negative
    with pytest.raises(ValueError, match="illegal"):
        apply_step((Fraction(0), Fraction(2)), 5)


def test_general_puzzles_are_seeded_distinct_and_solvable():
    first = general_countdown_puzzles(num_numbers=5, count=30, seed=7)
    assert first == general_countdown_puzzles(num_numbers=5, count=30, seed=7)
    assert first != general_countdown_puzzles(num_numbers=5, count=30, seed=8)
    assert len(set(first)) == 30
    for puzzle in first:
        assert len(puzzle.numbers) == 5 and 10 <= puzzle.target < 100
        steps = solve(puzzle.numbers, puzzle.target)
        assert steps is not None and verify(puzzle, ",".join(steps)).correct
