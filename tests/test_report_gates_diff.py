"""Regression gates and the paired bootstrap diff, on hand-written run folders."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from unified.analysis.gates import GateError, check_gates, parse_gates
from unified.analysis.stats import UNDEFINED, bootstrap_ci
from unified.report.diff import diff_runs
from unified.scores import Aggregate, Cost, Score


def _agg(metric: str, backend: str, mean: float | None, errors: int = 0) -> Aggregate:
    return Aggregate(
        metric=metric,
        backend=backend,
        count=10,
        scored=10 - errors,
        errors=errors,
        mean=mean,
        median=mean,
        stdev=None,
        pass_rate=None,
        cost=Cost(),
    )


def test_parse_gates():
    assert parse_gates("faithfulness=7,context_recall=6") == {"faithfulness": 7.0, "context_recall": 6.0}
    assert parse_gates(["precision@3=5", "mrr=2.5"]) == {"precision@3": 5.0, "mrr": 2.5}
    assert parse_gates(None) == {}
    with pytest.raises(GateError, match="unknown metric 'faithfulnes'.*did you mean 'faithfulness'"):
        parse_gates("faithfulnes=7")
    with pytest.raises(GateError, match="must be metric=bound"):
        parse_gates("faithfulness")
    with pytest.raises(GateError, match="not a number"):
        parse_gates("faithfulness=high")
    with pytest.raises(GateError, match="0–10"):
        parse_gates("faithfulness=70")
    # a repeated gate kept the last, laxer bound without a word (mrr=10,mrr=0 passed)
    with pytest.raises(GateError, match="mrr is gated twice"):
        parse_gates("mrr=10,mrr=0")
    with pytest.raises(GateError, match="gated twice"):
        parse_gates(["mrr=10", "mrr=0"])


def test_check_gates_lines_and_exit_status():
    aggs = [
        _agg("faithfulness", "native", 6.42),
        _agg("faithfulness", "ragas", 7.5),
        _agg("context_recall", "native", 6.0),
        _agg("precision@3", "native", 4.0),
        _agg("mrr", "native", None, errors=10),
    ]
    ok, lines = check_gates(aggs, parse_gates("faithfulness=7,context_recall=6"))
    assert not ok
    assert "FAIL faithfulness (native): mean 6.42 < 7.00 (short by 0.58)" in lines
    assert "PASS faithfulness (ragas): mean 7.50 >= 7.00" in lines
    assert "PASS context_recall (native): mean 6.00 >= 6.00" in lines  # the bound itself passes
    ok, lines = check_gates(aggs, {"precision_at_k": 3.0})  # canonical gate covers every @k
    assert ok and lines == ["PASS precision@3 (native): mean 4.00 >= 3.00"]
    ok, lines = check_gates(aggs, {"mrr": 1.0})
    assert not ok and lines == ["FAIL mrr (native): no successful score (10 errors)"]
    ok, lines = check_gates(aggs, {"ndcg@10": 1.0})
    assert not ok and "no score in this run" in lines[0]


def _write_run(
    path: Path, values: dict[str, float | None], metric="faithfulness", backend="native", hashed=True
) -> Path:
    """A run folder's scores; ``hashed``: each score carries its sample's content hash,
    as every run written today does (an older run has none)."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "scores.jsonl", "w") as f:
        for sid, v in values.items():
            s = (
                Score.failure(metric, backend, sid, "boom")
                if v is None
                else Score.from_raw(metric, backend, sid, v, raw_range=(0, 10))
            )
            if hashed:
                s = s.model_copy(update={"sample_hash": f"h-{sid}"})
            f.write(s.model_dump_json() + "\n")
    return path


def test_diff_says_when_pairs_rest_on_the_sample_id_alone(tmp_path):
    old = _write_run(tmp_path / "old", {"x": 5.0, "y": 6.0, "z": 7.0}, hashed=False)
    new = _write_run(tmp_path / "new", {"x": 5.5, "y": 6.0, "z": 7.0})
    (r,) = diff_runs(old, new, n_boot=200)
    assert r["n_paired"] == 3
    assert "3 pair(s) matched by sample id only" in " ".join(r["notes"])
    (same,) = diff_runs(new, new, n_boot=200)
    assert not any("sample id only" in n for n in same["notes"])


def test_diff_paired_delta_ci_and_movers(tmp_path):
    rng = random.Random(3)
    a_vals = {f"s{i}": rng.uniform(2, 6) for i in range(200)}  # +3 stays inside 0–10
    # B = A + 0.5 everywhere, except s7 which jumps by 3 and s9 which drops by 2
    b_vals = {k: v + 0.5 for k, v in a_vals.items()}
    b_vals["s7"] = a_vals["s7"] + 3.0
    b_vals["s9"] = a_vals["s9"] - 2.0
    a_vals["only_a"] = 5.0
    b_vals["failed_b"], a_vals["failed_b"] = None, 5.0
    a = _write_run(tmp_path / "a", a_vals)
    b = _write_run(tmp_path / "b", b_vals)
    rows = diff_runs(a, b, n_boot=1000, seed=1)
    assert len(rows) == 1
    r = rows[0]
    assert r["n_paired"] == 200 and r["only_a"] == 1 and r["failed"] == 1
    true_delta = (0.5 * 198 + 3.0 - 2.0) / 200
    assert r["delta"] == pytest.approx(true_delta)
    lo, hi = r["ci95"]
    assert lo < true_delta < hi and lo > 0  # a consistent +0.5 shift is detected
    assert [m["sample_id"] for m in r["movers"][:2]] == ["s7", "s9"]
    assert r["movers"][0]["delta"] == pytest.approx(3.0)
    assert diff_runs(a, b, n_boot=1000, seed=1) == rows  # seeded: reproducible


def test_bootstrap_ci_edge_cases():
    # issue 13: one bootstrap (unified.analysis.stats.bootstrap_ci) for diff and crosscheck; the
    # interval of one value is "undefined" with a reason, no longer None
    one = bootstrap_ci(np.mean, [1.0])
    assert one == UNDEFINED and "n=1" in one.reason
    lo, hi = bootstrap_ci(np.mean, [2.0, 2.0, 2.0])
    assert lo == hi == 2.0
    # many resamples are drawn in chunks; the interval brackets the mean of a wide sample
    d = [float(i % 11) - 5 for i in range(5000)]
    lo, hi = bootstrap_ci(np.mean, d, n=500, seed=0)
    assert lo < sum(d) / len(d) < hi


def test_diff_says_why_a_figure_is_undefined(tmp_path):
    a = _write_run(tmp_path / "a", {"x": 5.0, "y": None})
    b = _write_run(tmp_path / "b", {"x": 6.0, "y": 4.0})
    (r,) = diff_runs(a, b, n_boot=200)
    assert r["n_paired"] == 1 and r["delta"] == pytest.approx(1.0)
    assert r["ci95"] == UNDEFINED
    assert r["notes"] == [
        "ci95 undefined: n=1 < 2 rows to resample",
        "p undefined: n=1 < 3 paired samples",
        "n_for_80_power undefined: n=1 < 3 paired samples",
    ]
    assert r["p"] == r["p_holm"] == r["n_for_80_power"] == UNDEFINED
    json.dumps(r, allow_nan=False)


def test_diff_reports_metrics_in_only_one_run(tmp_path):
    a = _write_run(tmp_path / "a", {"x": 5.0, "y": 6.0})
    b = _write_run(tmp_path / "b", {"x": 5.0, "y": 6.0}, metric="context_recall")
    rows = diff_runs(a, b)
    assert {r["metric"] for r in rows} == {"faithfulness", "context_recall"}
    # issue 13: "undefined" with the reason, as the cross-check writes it (it was None)
    assert all(r["delta"] == UNDEFINED and r["n_paired"] == 0 for r in rows)
    assert all(r["notes"][0].startswith("delta undefined: no paired samples") for r in rows)


def test_diff_lists_no_unmoved_sample_as_a_mover(tmp_path):
    # identical runs used to list "q03 +0.0, q04 +0.0, …" as the samples that moved most
    a = _write_run(tmp_path / "a", {"s1": 5.0, "s2": 7.0, "s3": 2.0})
    b = _write_run(tmp_path / "b", {"s1": 5.0, "s2": 8.0, "s3": 2.0})
    (r,) = diff_runs(a, b, n_boot=200)
    assert [m["sample_id"] for m in r["movers"]] == ["s2"]
    (same,) = diff_runs(a, a, n_boot=200)
    assert same["delta"] == 0 and same["movers"] == []
