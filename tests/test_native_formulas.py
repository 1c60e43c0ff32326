"""The native formulas as plain functions, on hand-computed cases."""

from __future__ import annotations

import pytest

from unified.adapters.native import formulas as F


def test_average_precision_by_rank():
    assert F.average_precision([True, False, True]) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert F.average_precision([False, True]) == pytest.approx(0.5)
    assert F.average_precision([False, False]) == 0.0  # nothing useful: 0, not NaN
    with pytest.raises(ValueError):
        F.average_precision([])


def test_claim_f1():
    assert F.claim_f1(2, 1, 1) == pytest.approx(2 / 3)
    assert F.claim_f1(0, 2, 0) == 0.0
    with pytest.raises(ValueError, match="neither"):
        F.claim_f1(0, 0, 0)


def test_shares_and_agreement():
    assert F.share([1, 0.5, 0]) == pytest.approx(0.5)
    assert F.share_at_least([2, 1.5, 0.5, 0], 1.0) == 0.5
    assert F.agreement([2, 0, 1], [2, 2, 1], 2.0) == pytest.approx(1 - 2 / 6)
    assert F.agreement([1, 0], [1, 0], 1.0) == 1.0
    assert F.mean_pair([1, 0], None) == [1, 0]
    with pytest.raises(ValueError):
        F.mean_pair(None, None)


def test_cosine():
    assert F.cosine([1, 0], [0.6, 0.8]) == pytest.approx(0.6)
    assert F.cosine([1, 0], [-1, 0]) == pytest.approx(-1.0)  # callers clip at 0
    assert F.cosine([0, 0], [1, 0]) == 0.0
