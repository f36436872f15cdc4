"""make_task: the Countdown-24 split and its optional verifier-only training prompts."""

from llm_bridge.tasks.text_tasks import make_task


def test_extra_training_prompts_never_share_a_test_multiset_and_leave_the_test_split_alone():
    plain = make_task("countdown24")
    extended = make_task("countdown24", extra_train=300)
    assert extended.test == plain.test
    assert len(extended.train) > len(plain.train)
    assert {p.numbers for p in extended.train}.isdisjoint({p.numbers for p in extended.test})
    assert {p.target for p in extended.train if p not in plain.train} - set(range(10, 100)) == set()
    assert 24 not in {p.target for p in extended.train if p not in plain.train}
