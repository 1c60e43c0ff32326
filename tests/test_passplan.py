"""How one encode's texts are cut into forward passes (issue 27, speed): every text once,
neighbours by length, the cheapest cut under the documented cost, and a share for an
idle core when a pass is big enough to be worth splitting."""

import itertools
import random

import pytest

from unified.judge.passplan import PASS_OVERHEAD, plan_passes


def _cost(lengths, plan, overhead=PASS_OVERHEAD):
    return sum(overhead + len(p) * max(lengths[i] for i in p) for p in plan)


def _brute_force_best(lengths, overhead, max_texts):
    """The cheapest cut by trying every cut of the sorted lengths (small inputs only)."""
    s = sorted(lengths)
    best = None
    for cuts in itertools.product([False, True], repeat=len(s) - 1):
        runs, lo = [], 0
        for i, cut in enumerate(cuts, start=1):
            if cut:
                runs.append(s[lo:i])
                lo = i
        runs.append(s[lo:])
        if all(len(r) <= max_texts for r in runs):
            c = sum(overhead + len(r) * r[-1] for r in runs)
            best = c if best is None else min(best, c)
    return best


def test_every_text_once_each_pass_in_ascending_length():
    lengths = [12, 3, 40, 7, 7, 25, 90, 15, 3, 61]
    plan = plan_passes(lengths)
    assert sorted(i for p in plan for i in p) == list(range(len(lengths)))
    for p in plan:
        assert [lengths[i] for i in p] == sorted(lengths[i] for i in p)


@pytest.mark.parametrize("seed", range(6))
def test_the_cut_is_the_cheapest_one(seed):
    rng = random.Random(seed)
    lengths = [rng.choice([rng.randint(5, 25), rng.randint(40, 120)]) for _ in range(11)]
    plan = plan_passes(lengths, overhead=30, max_texts=4)
    assert all(len(p) <= 4 for p in plan)
    assert _cost(lengths, plan, overhead=30) == _brute_force_best(lengths, 30, 4)


def test_short_and_long_texts_do_not_share_a_pass():
    # one pass would pad 20 short sentences to 120 word pieces: 60 + 22 * 120 = 2700;
    # two passes cost 60 + 20 * 15 + 60 + 2 * 120 = 660
    lengths = [15] * 20 + [120, 118]
    plan = plan_passes(lengths)
    assert sorted(len(p) for p in plan) == [2, 20]
    # equal lengths: the fixed cost says one pass
    assert len(plan_passes([15] * 20)) == 1


def test_an_idle_worker_gets_half_of_a_big_pass_but_not_of_a_small_one():
    big = [20] * 40
    assert len(plan_passes(big, idle=1)) == 1
    halves = plan_passes(big, idle=2)
    assert sorted(len(p) for p in halves) == [20, 20]
    # 4 texts of 10 word pieces: 40 padded pieces, less than two fixed costs; not split
    assert len(plan_passes([10] * 4, idle=2)) == 1
    # a single text cannot be split
    assert plan_passes([300], idle=4) == [[0]]
    assert plan_passes([], idle=2) == []


def test_a_long_single_text_does_not_stop_another_pass_from_being_split():
    # the long text's pass is the costliest but cannot be split; the short ones' can
    plan = plan_passes([20] * 10 + [256], idle=3)
    assert sorted(len(p) for p in plan) == [1, 5, 5]
    assert sorted(i for p in plan for i in p) == list(range(11))
