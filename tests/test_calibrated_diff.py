"""`unified-eval calibrate` then `--calibration`, and `unified-eval diff`'s statistics and
configuration differences, on real run folders scored against the loopback judge with
human labels from ARES rows."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
import scipy.stats as ss
from judge_server import JudgeServer
from support import as_read
from typer.testing import CliRunner

from unified.analysis.calibrated import Calibration, CalibrationError
from unified.analysis.stats import holm
from unified.cli.app import app
from unified.report.diff import diff_runs
from unified.scores import Score

# the shared human-labelled data sits beside the checkout (a worktree is one level deeper)
ARES = next(
    (
        p / "shared" / "data" / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.jsonl"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "data" / "ares").is_dir()
    ),
    Path("ares-not-found.jsonl"),
)
METRICS = "faithfulness,answer_relevancy"
runner = CliRunner()

pytestmark = pytest.mark.skipif(not ARES.exists(), reason="the ARES labels are not present")


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A labelled run (A), the same configuration again with a calibration file (B), and a
    run with another judge configuration (C: single judge)."""
    tmp = tmp_path_factory.mktemp("cal")
    data = tmp / "ares.jsonl"
    data.write_text("".join(ARES.read_text(encoding="utf-8").splitlines(True)[:30]), encoding="utf-8")
    with JudgeServer() as srv:
        judge = ("--base-url", srv.base_url, "--model", "loopback", "--cache", tmp / "cache.sqlite", "-q")
        assert invoke("run", data, "--metrics", METRICS, "--out", tmp / "a", *judge).exit_code == 0
        fit = invoke("calibrate", tmp / "a", "--out", tmp / "cal.json")
        b = invoke("run", data, "--metrics", METRICS, "--out", tmp / "b", "--calibration", tmp / "cal.json", *judge)
        c = invoke("run", data, "--metrics", METRICS, "--out", tmp / "c", "--single-judge", *judge)
        refused = invoke(
            "run",
            data,
            "--metrics",
            METRICS,
            "--out",
            tmp / "d",
            "--single-judge",
            "--calibration",
            tmp / "cal.json",
            *judge,
        )
        other = invoke(
            "run", data, "--metrics", "context_relevancy", "--out", tmp / "e", "--calibration", tmp / "cal.json", *judge
        )
        # folder f: calibrated, then resumed with a file covering faithfulness only, then without a file
        full = json.loads((tmp / "cal.json").read_text())
        (tmp / "faith.json").write_text(
            json.dumps({**full, "entries": [e for e in full["entries"] if e["metric"] == "faithfulness"]})
        )
        f_runs, f_lines = [], []
        for extra in (("--calibration", tmp / "cal.json"), ("--calibration", tmp / "faith.json"), ()):
            f_runs.append(invoke("run", data, "--metrics", METRICS, "--out", tmp / "f", *extra, *judge))
            f_lines.append(_lines(tmp / "f" / "scores.jsonl"))
    return {
        "tmp": tmp,
        "fit": fit,
        "b": b,
        "c": c,
        "refused": refused,
        "other": other,
        "f_runs": f_runs,
        "f_lines": f_lines,
    }


def _lines(path: Path) -> list[dict]:
    return [as_read(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]


def test_calibrate_fits_a_map_and_prints_its_cross_validated_error(runs):
    assert runs["fit"].exit_code == 0, runs["fit"].output
    assert "cross-validated Brier" in runs["fit"].output and "vs value/10" in runs["fit"].output
    data = json.loads((runs["tmp"] / "cal.json").read_text())
    entries = {(e["metric"], e["backend"]): e for e in data["entries"]}
    assert set(entries) == {("faithfulness", "native"), ("answer_relevancy", "native")}
    a_rows = [d for d in _lines(runs["tmp"] / "a" / "scores.jsonl") if d["metric"] == "faithfulness"]
    e = entries[("faithfulness", "native")]
    assert e["labelled"] == 30 and e["config_hash"] == a_rows[0]["config_hash"]
    assert len(e["labels_fingerprint"]) == 16 and e["config"]["judge"]["model"] == "loopback"
    assert all(x <= y for x, y in zip(e["map"]["y"], e["map"]["y"][1:]))  # monotone
    assert isinstance(e["cv"]["brier_calibrated"], float)


def test_calibrated_values_are_monotone_in_value(runs):
    assert runs["b"].exit_code == 0, runs["b"].output
    rows = _lines(runs["tmp"] / "b" / "scores.jsonl")
    for metric in METRICS.split(","):
        pts = sorted((d["value"], d["calibrated"]) for d in rows if d["metric"] == metric and d["value"] is not None)
        assert pts and all(0 <= c <= 10 for _, c in pts)
        assert all(c1 <= c2 + 1e-9 for (_, c1), (_, c2) in zip(pts, pts[1:]))
    # the same values as the run it was fitted on (same configuration, same cache): the map is the file's
    cal = Calibration.load(runs["tmp"] / "cal.json")
    cal.active = cal.entries
    for d in rows:
        if d["value"] is not None:
            assert cal.apply({**d, "calibrated": None})["calibrated"] == pytest.approx(d["calibrated"])


def test_calibration_on_another_configuration_or_metric_is_refused(runs):
    r = runs["refused"]
    assert r.exit_code == 2 and "under another configuration (single_judge: False → True)" in r.output
    assert not (runs["tmp"] / "d" / "scores.jsonl").exists()  # refused before anything was scored
    o = runs["other"]
    assert o.exit_code == 2 and "none of them" in o.output and "context_relevancy (native)" in o.output
    with pytest.raises(CalibrationError, match="does not exist"):
        Calibration.load(runs["tmp"] / "missing.json")
    (runs["tmp"] / "bad.json").write_text("{}")
    with pytest.raises(CalibrationError, match="not a calibration file"):
        Calibration.load(runs["tmp"] / "bad.json")


def test_diff_names_configuration_differences_before_any_number(runs):
    tmp = runs["tmp"]
    r = invoke("diff", tmp / "a", tmp / "c", "--json", tmp / "d.json")
    assert r.exit_code == 0, r.output
    out = r.output
    assert out.index("the runs' configurations differ:") < out.index("Δ")
    assert "single_judge: False → True — faithfulness (native), answer_relevancy (native)" in out
    assert "p (Holm)" in out and "n for 80% power" in out and "95% CI" in out
    rows = json.loads((tmp / "d.json").read_text())
    assert all("single_judge: False → True" in r["config_changes"] for r in rows)
    same = invoke("diff", tmp / "a", tmp / "b")
    assert "same configuration for every (metric, backend)" in same.output
    missing = invoke("diff", tmp / "a", tmp / "nope")
    assert missing.exit_code == 2 and f"{tmp / 'nope'} does not exist" in missing.output


def _write(path: Path, metric: str, values: dict[str, float]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with open(path / "scores.jsonl", "w") as f:
        for sid, v in values.items():
            f.write(Score.from_raw(metric, "native", sid, v, raw_range=(0, 10)).model_dump_json() + "\n")
    return path


def test_diff_p_values_holm_and_power(tmp_path):
    rng = random.Random(4)
    base = {f"s{i}": rng.uniform(2, 7) for i in range(12)}
    shifted = {k: min(10.0, v + 1.0 + rng.uniform(-0.5, 0.5)) for k, v in base.items()}
    noise = {k: min(10.0, max(0.0, v + rng.uniform(-1, 1))) for k, v in base.items()}
    a = tmp_path / "a"
    b = tmp_path / "b"
    _write(a, "faithfulness", base)
    _write(b, "faithfulness", shifted)
    with open(a / "scores.jsonl", "a") as fa, open(b / "scores.jsonl", "a") as fb:
        for sid in base:
            fa.write(
                Score.from_raw("context_recall", "native", sid, base[sid], raw_range=(0, 10)).model_dump_json() + "\n"
            )
            fb.write(
                Score.from_raw("context_recall", "native", sid, noise[sid], raw_range=(0, 10)).model_dump_json() + "\n"
            )
    rows = {r["metric"]: r for r in diff_runs(a, b, n_boot=500)}
    for metric, after in (("faithfulness", shifted), ("context_recall", noise)):
        d = np.array([after[s] - base[s] for s in base])
        exact = ss.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
        assert rows[metric]["p"] == pytest.approx(exact, abs=1e-12)
    adjusted = holm([rows["faithfulness"]["p"], rows["context_recall"]["p"]])
    assert [rows["faithfulness"]["p_holm"], rows["context_recall"]["p_holm"]] == pytest.approx(adjusted)
    assert rows["faithfulness"]["p_holm"] < 0.01 < rows["context_recall"]["p_holm"]
    assert rows["faithfulness"]["n_for_80_power"] < rows["context_recall"]["n_for_80_power"]
    # hand-written folders have no manifest: the diff says it cannot compare configurations
    assert rows["faithfulness"]["config_changes"] == [
        "configuration unknown: A has no run.json",
        "configuration unknown: B has no run.json",
    ]


def test_a_resumed_folder_keeps_no_calibrated_value_the_run_did_not_ask_for(runs):
    # found in review: lines kept the calibrated values of an earlier run's file — values
    # of a pair the new file does not cover, or of a run without --calibration — and the
    # cross-check "on calibrated values" was computed from them without a word
    assert [r.exit_code for r in runs["f_runs"]] == [0, 0, 0], [r.output for r in runs["f_runs"]]
    full, faith_only, none = runs["f_lines"]
    scored = [d for d in full if d["value"] is not None]
    assert scored and all(d.get("calibrated") is not None for d in scored)
    by_metric = {m: [d.get("calibrated") for d in faith_only if d["metric"] == m] for m in METRICS.split(",")}
    assert all(c is not None for c in by_metric["faithfulness"] if c is not None) and any(by_metric["faithfulness"])
    assert by_metric["answer_relevancy"] and all(c is None for c in by_metric["answer_relevancy"])
    assert all(d.get("calibrated") is None for d in none)
    assert "calibrated values of earlier runs are removed" in runs["f_runs"][2].output
