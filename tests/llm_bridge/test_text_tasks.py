"""make_task: the Countdown-24 split and its optional verifier-only training prompts."""

from llm_bridge.tasks.text_tasks import make_task


def test_extra_training_prompts_never_share_a_test_multiset_and_leave_the_test_split_alone():
    plain = make_task("countdown24")
    extended = make_task("countdown24", extra_train=300)
    assert extended.test == plain.test and extended.train == plain.train
    assert not plain.extra and 200 < len(extended.extra) <= 300
    assert {p.numbers for p in extended.extra}.isdisjoint({p.numbers for p in extended.test})
    assert {p.target for p in extended.extra} - set(range(10, 100)) == set()
    assert 24 not in {p.target for p in extended.extra}
    assert extended.round_prompts() == extended.train + extended.extra
