"""The migration report on constructed scores: framework names, translated gate bounds,
flips with both reasons, the CI guard, and the terminal and HTML renderings."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from unified.analysis.migrate import (
    flips_exceed,
    format_migration,
    framework_name,
    migration_report,
    migration_verdicts,
    render_migration,
)
from unified.report.html_compare import render_migration_html
from unified.sample import Sample
from unified.scores import Score


def _line(backend, sid, value, metric="faithfulness", threshold=7.0):
    return Score.from_raw(
        metric, backend, sid, value, raw_range=(0, 10), threshold=threshold, reason=f"{backend}: {value} <because>"
    )


def _run():
    """deepeval on 0–10; ragas = deepeval − 2 (a shift of scale) except on two samples, where
    ragas disagrees about which side of the bound they are on."""
    old = {f"s{i}": float(v) for i, v in enumerate([9, 8.5, 8, 7.5, 7, 6, 5, 4, 3, 2])}
    new = {sid: v - 2 for sid, v in old.items()}
    new["s1"] = 1.0  # 8.5 on deepeval (pass) -> bottom on ragas: pass → fail
    new["s7"] = 9.0  # 4 on deepeval (fail) -> top on ragas: fail → pass
    scores = [_line("deepeval", s, v) for s, v in old.items()]
    scores += [_line("ragas", s, v, threshold=5.0) for s, v in new.items()]
    scores.append(Score.failure("faithfulness", "ragas", "s10", "HTTP 500"))
    scores.append(_line("deepeval", "s10", 6.0))
    samples = {sid: Sample(user_input=f"question {sid}?", id=sid) for sid in old}
    return scores, samples


def test_framework_names_come_from_the_registry():
    assert framework_name("faithfulness", "deepeval") == "FaithfulnessMetric"
    assert framework_name("faithfulness", "ragas") == "Faithfulness"
    assert framework_name("faithfulness", "native") == "faithfulness"
    assert framework_name("context_precision", "ragas") == "ContextPrecisionWithReference"
    assert framework_name("precision@3", "ragas") == "precision@3"
    assert framework_name("my_custom_thing", "ragas") == "my_custom_thing"


def test_migration_report_translates_the_gate_and_lists_flips():
    scores, samples = _run()
    m = migration_report(scores, samples, "deepeval", "ragas", ["FaithfulnessMetric"], {"faithfulness": 7.0})
    json.dumps(m, allow_nan=False)
    r = m["metrics"]["faithfulness"]
    assert r["names"] == {"deepeval": "FaithfulnessMetric", "ragas": "Faithfulness"}
    assert r["n"] == 10 and r["excluded"] == 1 and r["threshold_source"] == "gate"
    # deepeval passes 5 of 10 at 7 (9, 8.5, 8, 7.5, 7); ragas passes 5 above its gap
    # between 4 (= 6 − 2) and 5 (= 7 − 2): the translated bound is 4.5
    assert r["threshold_from"] == 7.0 and r["threshold_to"] == pytest.approx(4.5)
    assert r["threshold_to_default"] == 5.0
    flips = {f["sample_id"]: f for f in r["flips"]}
    assert set(flips) == {"s1", "s7"} and r["n_flips"] == 2
    assert flips["s1"]["direction"] == "pass → fail" and flips["s7"]["direction"] == "fail → pass"
    assert flips["s1"]["from"] == {"value": 8.5, "passed": True, "reason": "deepeval: 8.5 <because>"}
    assert flips["s1"]["to"]["reason"] == "ragas: 1.0 <because>" and flips["s1"]["question"] == "question s1?"
    assert r["pass_agreement_at_translated"] == pytest.approx(0.8)
    # carrying the bound 7 over unchanged flips every sample that passed by less than 2 points
    # (ragas 7, 1, 6, 5.5, 5, 4, 3, 9, 1, 0 against 7: s1–s4 pass → fail, s7 fail → pass)
    assert r["flips_at_same_threshold"] == 5
    assert r["gate"]["passed_from"] is (r["gate"]["mean_from"] >= 7.0)
    assert r["gate"]["bound_to"] == pytest.approx(4.5)


def test_flips_exceed_guards_a_migration():
    scores, samples = _run()
    m = migration_report(scores, samples, "deepeval", "ragas", gates={"faithfulness": 7.0})
    assert flips_exceed(m, 0, 0.1) and flips_exceed(m, 1, 0.1) and not flips_exceed(m, 2, 0.1)
    assert migration_verdicts(m, 2, 0.1) == ["PASS faithfulness: 2 of 10 samples flip at 7 → 4.5 (max 2)"]
    # the one failed ragas task (1 of 11) fails the guard at the default --max-error-rate 0:
    # flips counted on the samples that scored say nothing about the one that did not
    assert migration_verdicts(m, 2) == [
        "FAIL faithfulness: 1 of 11 ragas tasks failed (9% > --max-error-rate 0); "
        "the flips of the 10 samples that scored on both do not count"
    ]
    assert flips_exceed(m, 2)
    # no gate given: every metric is guarded, at the old backend's own threshold
    plain = migration_report(scores, samples, "deepeval", "ragas")
    assert plain["metrics"]["faithfulness"]["threshold_source"] == "default"
    assert flips_exceed(plain, 0)
    # a gated metric nobody scored on both sides fails the guard (nothing checked must not pass)
    none = migration_report(scores, samples, "deepeval", "ragas", ["context_recall"], {"context_recall": 5})
    r = none["metrics"]["context_recall"]
    assert r["n"] == 0 and r["threshold_to"] == "undefined" and r["pass_agreement_at_translated"] == "undefined"
    assert flips_exceed(none, 100)
    assert any("no sample scored by both" in n for n in r["notes"])


def test_identical_backends_flip_nothing():
    scores = [_line(b, f"s{i}", v) for i, v in enumerate([1, 3, 5, 7, 9]) for b in ("native", "ragas")]
    m = migration_report(scores, None, "native", "ragas")
    r = m["metrics"]["faithfulness"]
    assert r["n_flips"] == 0 and r["flips"] == [] and r["pass_agreement_at_translated"] == 1.0
    assert not flips_exceed(m, 0)


def test_renderings_show_the_summary_and_escape_html():
    scores, samples = _run()
    m = migration_report(scores, samples, "deepeval", "ragas", gates={"faithfulness": 7.0})
    text = render_migration(m, width=160, max_flips=0, max_error_rate=0.1)
    assert "migration deepeval → ragas" in text and "FaithfulnessMetric" in text
    assert "FAIL faithfulness: 2 of 10 samples flip" in text and "samples that flip (2)" in text
    assert format_migration(m) is not None
    page = render_migration_html(m)
    assert page.startswith("<section id='migration'>") and page.endswith("</section>")
    assert "&lt;because&gt;" in page and "<because>" not in page
    assert "<script" not in page
    assert len(re.findall(r"<tr>", page)) == 1 + 1 + 1 + 2  # summary head + row, flips head + 2


@pytest.mark.slow
@pytest.mark.ragas
@pytest.mark.deepeval
def test_compare_then_jury_crosscheck_and_migration_on_real_backends(tmp_path, judge_server, monkeypatch):
    """Real parts: `compare` runs native, ragas and deepeval against the loopback judge on
    the example data; the translations are in crosscheck.json, and the jury, the
    cross-check with the jury and the migration report work on the scores it wrote. The
    fake judge proves plumbing only, not quality."""
    pytest.importorskip("ragas")
    pytest.importorskip("deepeval")
    from pathlib import Path

    from typer.testing import CliRunner

    from unified.analysis.crosscheck import crosscheck
    from unified.analysis.jury import jury_scores
    from unified.cli.app import app

    monkeypatch.chdir(tmp_path)
    data = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"
    out = tmp_path / "cmp"
    r = CliRunner().invoke(
        app,
        [
            str(a)
            for a in (
                "compare",
                data,
                "--backends",
                "native,ragas,deepeval",
                "--metrics",
                "faithfulness",
                "--base-url",
                judge_server.base_url,
                "--model",
                "fake",
                "--embedding",
                judge_server.base_url,
                "--embedding-model",
                "fake",
                "--max-samples",
                "6",
                "--out",
                out,
                "--quiet",
            )
        ],
    )
    assert r.exit_code == 0, r.output
    cc = json.loads((out / "crosscheck.json").read_text())
    for pair in cc["metrics"]["faithfulness"]["pairs"]:
        fwd, back = pair["threshold_translation"]
        assert (fwd["from"], fwd["to"]) == (back["to"], back["from"]) == (pair["a"], pair["b"])
        assert fwd["n"] == pair["n"]
        assert isinstance(fwd["threshold_to"], float) or fwd["notes"]  # a number, or why not
    scores = [Score.model_validate_json(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    jury = jury_scores(scores, "median")
    assert len(jury) == 6 and all(j.backend == "jury" and j.metric == "faithfulness" for j in jury)
    for j in jury:
        members = [s for s in scores if s.sample_id == j.sample_id]
        assert j.details["n_members"] == 3
        assert j.details["n_errors"] == sum(not s.ok for s in members)
        if j.ok:
            ok = sorted(s.value for s in members if s.ok)
            assert j.value == pytest.approx(float(np.median(ok)))
    with_jury = crosscheck(scores + jury)
    assert "jury" in with_jury["backends"]
    json.dumps(with_jury, allow_nan=False)
    m = migration_report(scores, None, "deepeval", "ragas", ["faithfulness"], {"faithfulness": 7.0})
    rep = m["metrics"]["faithfulness"]
    assert rep["names"] == {"deepeval": "FaithfulnessMetric", "ragas": "Faithfulness"}
    assert rep["n"] + rep["excluded"] <= 6
    assert flips_exceed(m, 0) == (rep["n_flips"] > 0 or rep["n"] == 0)
