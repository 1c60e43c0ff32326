"""The one rule for reading a pass bound, and the one pass test.

Every bound is on the 0–10 scale unless it says otherwise.

RAGAS and DeepEval users type bounds on 0–1 (``threshold=0.7``); here every score is on
0–10, so ``0.7`` would be a gate that almost nothing fails — a wrong score without a word.
Every place that takes a bound (``--fail-under``, ``--config``, a metric's
``[threshold=…]``, ``assert_scores(thresholds=…)``, the pytest marker, migrate's gates)
reads it through :func:`read_bound`:

* ``b`` with ``0 < b <= 1`` is refused with "did you mean 10·b?" — it is ambiguous
  (1.0 is "perfect" on 0–1 and "almost anything passes" on 0–10);
* ``b@0-1`` states the framework scale and becomes ``10·b`` (``b`` must be in [0, 1]);
* ``b@0-10`` states our scale and is kept as written (the way to mean 0.5 or 1 on 0–10);
* ``0`` and ``1 < b <= 10`` are plain 0–10 bounds.

A score passes when ``value ≥ bound`` (``passed``): the same test for every backend, gate,
report and assertion. Which bound a task has is decided once, by ``MetricRef.bound`` and the
backend registry (``unified.adapters.registry.threshold_for``).
"""

from __future__ import annotations

import math

SCALE_SUFFIXES = {"0-1": 10.0, "0-10": 1.0}


class BoundScaleError(ValueError):
    """A bound that is not a number, is off the scale, or could be on either scale."""


def read_bound(value: object, where: str) -> float:
    """``value`` (a number, or text like ``"7"``, ``"0.7@0-1"``, ``"1@0-10"``) -> a bound on 0–10.

    ``where`` names the bound in the error (``"--fail-under faithfulness"``). Raises
    :class:`BoundScaleError` for a non-number, a bound outside its scale, or an unmarked
    bound in (0, 1]."""
    text = str(value).strip()
    number, sep, scale = text.partition("@")
    factor = SCALE_SUFFIXES.get(scale.strip().replace("–", "-")) if sep else None
    if sep and factor is None:
        raise BoundScaleError(f"{where}: scale '@{scale}' must be @0-1 or @0-10")
    b = _number(number, where)
    top = 10.0 / (factor or 1.0)
    if not 0.0 <= b <= top:
        raise BoundScaleError(f"{where}: bound {number.strip()} is outside {'0–1' if factor == 10.0 else '0–10'}")
    if factor is None and 0.0 < b <= 1.0:
        raise BoundScaleError(
            f"{where}: bound {b:g} looks like a 0–1 framework bound, but scores here are on 0–10 — "
            f"did you mean {b * 10:g}? Write {b:g}@0-1 for the framework scale or {b:g}@0-10 to keep {b:g} on 0–10"
        )
    return b * (factor or 1.0)


def _number(text: str, where: str) -> float:
    try:
        b = float(text)
    except ValueError:
        raise BoundScaleError(f"{where}: bound '{text.strip()}' is not a number") from None
    if math.isnan(b):
        raise BoundScaleError(f"{where}: bound is NaN")
    return b


def passed(value: float | None, bound: float | None) -> bool | None:
    """The one pass test: ``value ≥ bound`` on 0–10; None when either is missing (a failed
    task has no verdict, a score without a bound has none either)."""
    if value is None or bound is None:
        return None
    return value >= bound
