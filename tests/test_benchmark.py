"""``unified-eval benchmark``: the table (AUC as sklearn computes it, the cross-fitted bound
never tuned on the rows it scores, the one-line notes for what cannot be measured, the
winner only where the paired interval clears the runner-up) and the command end to end —
two public sets in their original formats and an own labelled file, the embedding and
native backends over the loopback judge, killed with SIGKILL and resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from judge_server import JudgeServer
from sklearn.metrics import roc_auc_score
from support import cli_env

from unified.analysis.benchmark import benchmark_table, entry, folds
from unified.analysis.calibration import best_threshold
from unified.analysis.stats import balanced_accuracy
from unified.analysis.verdict import default_threshold
from unified.sample import Sample
from unified.scores import Score

CLI = Path(sys.executable).parent / "unified-eval"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if not SHARED.is_dir():
    SHARED = Path("/work/shared/data")
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is absent")


def _samples(labels: dict[str, int], name: str = "s") -> dict[str, Sample]:
    return {
        sid: Sample(
            id=sid,
            response="r",
            retrieved_contexts=["c"],
            metadata={"labels": {"faithfulness": y}, "benchmark_set": name},
        )
        for sid, y in labels.items()
    }


def _scores(values: dict[str, float | None], backend: str = "b") -> list[Score]:
    return [
        Score(
            metric="faithfulness",
            backend=backend,
            sample_id=sid,
            value=v,
            error=None if v is not None else "judge said nothing",
        )
        for sid, v in values.items()
    ]


def _data(n: int = 60, seed: int = 1) -> tuple[dict[str, int], dict[str, float]]:
    rng = np.random.default_rng(seed)
    labels = {f"x{i}": int(i % 3 != 0) for i in range(n)}
    values = {sid: float(np.clip(4 + 3 * y + rng.normal(0, 2.5), 0, 10)) for sid, y in labels.items()}
    return labels, values


def test_auc_equals_sklearn_and_bound_is_tuned_on_the_other_fold():
    labels, values = _data()
    e = entry("s", "b", "faithfulness", _scores(values), {k: float(v) for k, v in labels.items()})
    ids = sorted(values)
    y, s = np.array([labels[i] for i in ids]), np.array([values[i] for i in ids])
    assert e["auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    lo, hi = e["auc_ci"]
    assert lo < e["auc"] < hi
    assert e["bound"] == default_threshold("faithfulness")  # the Scores carry none: the metric's
    assert e["ba_default"] == pytest.approx(balanced_accuracy(s >= e["bound"], y))
    fold = folds(ids, {k: float(v) for k, v in labels.items()})
    assert sorted(Counter_of(fold, labels)) == [(0, 0, 10), (0, 1, 20), (1, 0, 10), (1, 1, 20)]  # stratified halves
    verdict = np.zeros(len(ids), dtype=bool)
    for k in (0, 1):
        dev = np.array([fold[i] != k for i in ids])
        t, _ = best_threshold(s[dev], y[dev], prefer=e["bound"])
        assert t == pytest.approx(e["bounds_tuned"][k])
        verdict[~dev] = s[~dev] >= t
    assert e["ba_tuned"] == pytest.approx(balanced_accuracy(verdict, y))
    in_sample = best_threshold(s, y, prefer=e["bound"])[1]
    assert e["ba_tuned"] <= in_sample  # never tuned on the rows it scores: no better than in-sample
    assert 0 <= e["ece"] <= 1 and e["failed"] == 0.0 and e["n"] == 60


def Counter_of(fold: dict[str, int], labels: dict[str, int]) -> list[tuple[int, int, int]]:
    from collections import Counter

    c = Counter((fold[i], labels[i]) for i in fold)
    return [(k[0], k[1], v) for k, v in c.items()]


def test_bad_inputs_are_one_line_notes_never_numbers():
    labels, values = _data(30)
    table = benchmark_table(
        [*_scores(values, "good"), *_scores(dict.fromkeys(values), "broken")]
        + _scores({k: 5.0 for k in labels}, "good")[:0]
        + [Score(metric="faithfulness", backend="good", sample_id=f"one{i}", value=3.0) for i in range(5)],
        {**_samples(labels), **_samples({f"one{i}": 1 for i in range(5)}, "oneclass")},
        ["good", "broken", "absent"],
        ["faithfulness"],
    )
    by = {(e["set"], e["backend"]): e for e in table["entries"]}
    assert "every task failed (30): judge said nothing" == by[("s", "broken")]["note"]
    assert by[("s", "broken")]["failed"] == 1.0 and "auc" not in by[("s", "broken")]
    assert by[("s", "absent")]["note"] == "no row of this set can be scored by this metric on this backend"
    assert (
        by[("oneclass", "good")]["note"] == "labels are all one class (5 rows, all pass)"
        and "auc" not in by[("oneclass", "good")]
    )
    assert isinstance(by[("s", "good")]["auc"], float)
    assert table["entries"][0]["backend"] == "good"  # measured first, notes after


def test_winner_only_where_the_paired_interval_clears_the_runner_up():
    labels, values = _data(80)
    noisy = {k: float(np.clip(5 + np.random.default_rng(hash(k) % 2**32).normal(0, 3), 0, 10)) for k in values}
    near = {k: v + 0.01 for k, v in values.items()}
    samples = _samples(labels)
    clear = benchmark_table([*_scores(values, "a"), *_scores(noisy, "z")], samples, ["a", "z"], ["faithfulness"])
    assert [(e["backend"], e["winner"]) for e in clear["entries"]] == [("a", True), ("z", False)]
    assert clear["entries"][0]["gap_ci"][0] > 0
    tie = benchmark_table([*_scores(values, "a"), *_scores(near, "b")], samples, ["a", "b"], ["faithfulness"])
    assert not any(e["winner"] for e in tie["entries"])


# ------------------------------------------------------------------ end to end


def _own_file(tmp_path: Path) -> Path:
    f = tmp_path / "mine.jsonl"
    rows = [
        {
            "id": f"q{i}",
            "user_input": "What colour is the sky on a clear day?",
            "response": "The sky is blue." if i % 2 else "The sky is bright green with purple stripes.",
            "retrieved_contexts": ["On a clear day the sky is blue."],
            "labels": {"faithfulness": i % 2},
        }
        for i in range(8)
    ]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return f


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []


@needs_shared
@pytest.mark.slow
def test_benchmark_cli_two_public_sets_and_own_file_killed_and_resumed(tmp_path):
    out = tmp_path / "bench"
    ragtruth = SHARED / "labelled" / "ragtruth" / "ragtruth_summary.jsonl"
    ares = SHARED / "ares" / "LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.tsv"
    with JudgeServer(latency=0.25) as srv:
        cmd = [
            str(CLI),
            "benchmark",
            "--set",
            f"ragtruth:{ragtruth}",
            "--set",
            f"ares=ares:{ares}",
            "--labels",
            str(_own_file(tmp_path)),
        ]
        cmd += [
            "--limit",
            "8",
            "-b",
            "native,embedding",
            "-m",
            "faithfulness",
            "--base-url",
            srv.base_url,
            "--model",
            "m",
        ]
        cmd += ["--out", str(out), "--concurrency", "2", "--cache", str(tmp_path / "c.sqlite")]
        proc = subprocess.Popen(cmd, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 90
        while time.monotonic() < end and len(_lines(out / "scores.jsonl")) < 6:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        before = len(_lines(out / "scores.jsonl"))
        assert 6 <= before < 48 and not (out / "benchmark.json").exists()
        done = subprocess.run(cmd, env=cli_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = _lines(out / "scores.jsonl")
    keys = [(x["sample_id"], x["backend"]) for x in lines]
    assert len(keys) == len(set(keys)) == 48  # 3 sets × 8 rows × 2 backends, each once
    table = json.loads((out / "benchmark.json").read_text())
    entries = {(e["set"], e["backend"]): e for e in table["entries"]}
    assert set(entries) == {(s, b) for s in ("ragtruth_summary", "ares", "mine") for b in ("native", "embedding")}
    needed = {"set", "backend", "metric", "n", "auc", "auc_ci", "ba_default", "ba_tuned", "ece", "failed"}
    inputs = {r["id"]: r for r in _lines(out / "benchmark_input.jsonl")}
    for (name, backend), e in entries.items():
        if "note" in e:
            continue
        assert needed <= set(e) and e["n"] == 8 and e["failed"] == 0
        pairs = [
            (x["value"], inputs[x["sample_id"]]["metadata"]["labels"]["faithfulness"])
            for x in lines
            if x["backend"] == backend and x["sample_id"].startswith(name + "/")
        ]
        s, y = zip(*pairs)
        if len(set(s)) > 1:
            assert e["auc"] == pytest.approx(roc_auc_score(y, s), abs=1e-4)  # as printed: 4 places
            assert f"{e['auc']:.3f} [{e['auc_ci'][0]:.3f}, {e['auc_ci'][1]:.3f}]" in done.stdout
    assert entries[("mine", "embedding")]["auc"] == pytest.approx(
        roc_auc_score(
            *zip(
                *[
                    (inputs[x["sample_id"]]["metadata"]["labels"]["faithfulness"], x["value"])
                    for x in lines
                    if x["backend"] == "embedding" and x["sample_id"].startswith("mine/")
                ]
            )
        ),
        abs=1e-4,
    )
    assert "average over sets" in done.stdout and "BA@tuned: two folds stratified by label" in done.stdout
    assert "wall: " in done.stdout and "rows (" in done.stdout
    html = (out / "report.html").read_text()
    assert "<section id='benchmark'>" in html and "AUC against cost per sample" in html


def test_python_benchmark_through_the_batch_api_prices_and_resumes(tmp_path, monkeypatch):
    """``unified.benchmark`` is the ordinary run: judge calls go as Batch API jobs when
    asked, are priced, and a second call into the folder scores nothing again."""
    from judge_batch_server import BatchEndpoints

    import unified
    from unified.judge import JudgeConfig

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    own = _own_file(tmp_path)
    be = BatchEndpoints(delay=0.1)
    with JudgeServer(batch=be) as srv:
        kw = dict(judge=JudgeConfig(base_url=srv.base_url, model="fake", max_retries=1), progress=False, quiet=True)
        kw |= dict(batch={"window": 0.2, "poll_first": 0.05, "poll_max": 0.2}, prices={"fake": (1.0, 4.0)})
        b = unified.benchmark([f"mine=jsonl:{own}"], "faithfulness", ["native"], limit=6, out=tmp_path / "b", **kw)
        assert srv.chat_count == 0 and len(be.jobs) >= 1  # every judge call went as a job
        requests = srv.request_count
        again = unified.benchmark([f"mine=jsonl:{own}"], "faithfulness", ["native"], limit=6, out=tmp_path / "b", **kw)
        assert srv.request_count == requests  # resumed: nothing asked again
    (e,) = b.table["entries"]
    assert (e["set"], e["backend"], e["n"], e["failed"]) == ("mine", "native", 6, 0.0)
    assert e["judge_calls"] > 0 and e["usd"] > 0 and e["input_tokens"] > 0
    assert again.table["entries"][0]["n"] == 6
    on_disk = json.loads((tmp_path / "b" / "benchmark.json").read_text())
    assert on_disk["entries"][0]["auc"] == again.table["entries"][0]["auc"]
    assert len(_lines(tmp_path / "b" / "benchmark_input.jsonl")) == 6


def test_two_judges_compared_by_diff_of_their_benchmark_folders(tmp_path, monkeypatch):
    """A benchmark per judge (here two loopback judges that answer differently), then
    ``diff``: AUC of each over the rows both scored, and the paired interval of B − A."""
    from typer.testing import CliRunner

    import unified
    from unified.benchmarking import diff_benchmarks
    from unified.cli.app import app
    from unified.judge import JudgeConfig

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    spec = f"mine=jsonl:{_own_file(tmp_path)}"
    for seed, name in ((1, "a"), (2, "b")):
        with JudgeServer(seed=seed) as srv:
            judge = JudgeConfig(base_url=srv.base_url, model=f"judge-{name}", max_retries=1)
            unified.benchmark(
                [spec], "faithfulness", ["native"], out=tmp_path / name, judge=judge, progress=False, quiet=True
            )
    (row,) = diff_benchmarks(tmp_path / "a", tmp_path / "b")
    inputs = {
        r["id"]: r["metadata"]["labels"]["faithfulness"] for r in _lines(tmp_path / "a" / "benchmark_input.jsonl")
    }
    for side in ("a", "b"):
        pairs = [(inputs[x["sample_id"]], x["value"]) for x in _lines(tmp_path / side / "scores.jsonl")]
        y, s = zip(*pairs)
        assert row[f"auc_{side}"] == pytest.approx(roc_auc_score(y, s), abs=1e-4)
    assert row["n"] == 8 and (row["set"], row["backend"]) == ("mine", "native")
    assert row["gap"] == pytest.approx(row["auc_b"] - row["auc_a"], abs=2e-4) and row["auc_a"] != row["auc_b"]
    lo, hi = row["gap_ci"]
    assert lo <= row["gap"] <= hi
    out = CliRunner().invoke(app, ["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    assert "agreement with people, B − A" in out.output and "mine" in out.output
    assert diff_benchmarks(tmp_path / "a", tmp_path / "nothing") is None


def test_the_report_hides_a_table_whose_score_lines_changed(tmp_path, monkeypatch):
    """The page shows benchmark.json only while scores.jsonl is what it was computed from:
    a later run into the folder makes it stale, said in its place, never shown as current."""
    import unified
    from unified.judge import JudgeConfig
    from unified.report import Report

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    out = tmp_path / "b"
    with JudgeServer(seed=1) as srv:  # its answers rank these rows: an AUC to plot
        kw = dict(judge=JudgeConfig(base_url=srv.base_url, model="m", max_retries=1), progress=False, quiet=True)
        unified.benchmark([f"mine=jsonl:{_own_file(tmp_path)}"], "faithfulness", ["native"], out=out, **kw)
        page = (out / "report.html").read_text()
        assert "<section id='benchmark'>" in page and "AUC against cost per sample" in page
        unified.evaluate(str(out / "benchmark_input.jsonl"), "faithfulness[threshold=8]", ["native"], out=out, **kw)
    html = Report.from_dir(out).write_html(tmp_path / "again.html").read_text()
    assert "<section id='benchmark'>" in html and "benchmark.json: not shown" in html
    assert "AUC against cost per sample" not in html
