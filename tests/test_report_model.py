"""The report model and the page's sections on real run folders: one pass, last line per
task wins, row errors never joined to a sample, one stable metric order, notes that name
the backend, the odd one out, run time after a resume, cost in money, the notebook view."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_runs import DATA, two_backend_run
from support import as_read

from unified.api import evaluate
from unified.report import Report, render_html
from unified.report.agreement import odd_one_out, pairs
from unified.report.html_base import anchor
from unified.report.model import FileSource, ParquetSource, Task, metric_order
from unified.report.view import build_view
from unified.sample import Sample
from unified.scores import Score


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Report:
    return two_backend_run(tmp_path_factory.mktemp("two"))


def _lines(path: Path) -> list[dict]:
    """Score lines in the full shape every reader sees (``full_line``)."""
    return [as_read(json.loads(x)) for x in path.read_text().splitlines()]


def test_a_folder_read_after_kill_never_double_counts(run, tmp_path):
    """Repeated task lines (two writers, a retried task) and a torn last line: the last line
    of each task wins, every count stays one per task, and the page says what happened."""
    folder = tmp_path / "run"
    folder.mkdir()
    lines = _lines(run.run_dir / "scores.jsonl")
    (folder / "samples.jsonl").write_text((run.run_dir / "samples.jsonl").read_text())
    again = [dict(d, value=0.0, raw=0.0, passed=False, reason="rescored") for d in lines[:5]]
    with open(folder / "scores.jsonl", "w") as f:
        f.writelines(json.dumps(d) + "\n" for d in lines + again)
        f.write('{"metric": "mrr", "backend": "nat')  # torn by kill -9
    r = Report.from_dir(folder)
    assert [a.count for a in r.summary()] == [a.count for a in run.summary()]
    assert sum(a.count for a in r.summary()) == len(lines) == len(list(r.iter_score_dicts()))
    m = r.model()
    assert (m.superseded, m.unreadable) == (5, 1)
    first = lines[0]
    task = m.tasks[first["metric"]][first["backend"]][first["sample_id"]]
    assert task.value == 0.0 and isinstance(task, Task)
    got = {(d["sample_id"], d["metric"], d["backend"]): d for d in r.iter_score_dicts()}
    assert got[(first["sample_id"], first["metric"], first["backend"])]["reason"] == "rescored"
    page = r.write_html(tmp_path / "r.html").read_text()
    assert (
        "5 score line(s) repeated a task" in page
        and "1 line(s) of the scores file are not score lines (not JSON, or no metric, backend and sample id) and were skipped"
        in page
    )


def test_the_page_reads_the_scores_once_and_fetches_only_what_it_shows(run, monkeypatch):
    """Once, through whichever source the folder is read from (its scores.parquet here)."""
    calls = []

    def counting(cls, name):
        original = getattr(cls, name)

        def wrapped(self):
            calls.append(name)
            return original(self)

        monkeypatch.setattr(cls, name, wrapped)

    for cls, name in ((FileSource, "lines"), (ParquetSource, "lines"), (ParquetSource, "model_batches")):
        counting(cls, name)
    fresh = Report.from_dir(run.run_dir)
    view = build_view(fresh, max_drilldown=3)
    assert calls == ["model_batches"]
    # 3 drill-down samples plus the disagreeing ones, 4 tasks each (2 metrics × 2 backends)
    assert len(view.lines) == 4 * len(view.drill) and len(view.drill) < view.n_samples


def test_row_errors_are_errors_never_a_sample():
    """An input row that failed (row_error) and a real sample whose id is ``row:2``: the
    sample's drill-down holds only its own scores; the row error sits among the errors."""
    real = Sample(id="row:2", user_input="a real question", retrieved_ids=["d1"], relevant_ids=["d1"])
    scores = [
        Score.from_raw("mrr", "native", "row:2", 1.0, threshold=5.0, reason="rank 1"),
        Score.failure("mrr", "native", "row:2", "data.jsonl:2: invalid JSON: Expecting value (char 0)", row_error=True),
    ]
    r = Report(scores, [real])
    assert r.model().tasks["mrr"]["native"]["row:2"].value == 10.0  # not replaced by the row error
    [a] = r.summary()
    assert (a.count, a.errors) == (2, 1)
    page = render_html(r)
    sample = page[page.index("<details class='sample'") :]
    assert "rank 1" in sample and "invalid JSON" not in sample
    errors = page[page.index("id='errors'") : page.index("id='samples'")]
    assert "input row 2" in errors and "invalid JSON" in errors


def test_one_stable_metric_order(tmp_path):
    assert metric_order(["mrr", "faithfulness", "precision@3", "context_recall", "my_custom"]) == [
        "faithfulness",
        "context_recall",
        "precision@3",
        "mrr",
        "my_custom",
    ]
    assert metric_order(["mrr", "faithfulness", "precision@3"], ["precision@3", "mrr"]) == [
        "precision@3",
        "mrr",
        "faithfulness",
    ]
    r = evaluate(DATA, "precision@3,mrr,ndcg@5", ["native"], out=tmp_path, quiet=True)
    assert r.metrics() == ["precision@3", "mrr", "ndcg@5"]
    assert [a.metric for a in r.summary(stable=True)] == ["precision@3", "mrr", "ndcg@5"]
    page = (tmp_path / "report.html").read_text()
    summary = page[page.index("id='summary'") : page.index("id='cost'")]
    assert [m for m in re.findall(r"<td>(precision@3|mrr|ndcg@5)</td>", summary)] == ["precision@3", "mrr", "ndcg@5"]
    # every sample's score table and summary line in that same order
    for block in page.split("<details class='sample'")[1:]:
        assert re.findall(r"<td>(precision@3|mrr|ndcg@5)</td>", block) == ["precision@3", "mrr", "ndcg@5"]
        line = block[: block.index("</summary>")]
        assert line.index("precision@3/") < line.index("mrr/") < line.index("ndcg@5/")


def test_notes_name_the_backend():
    """Where a statistic is undefined, the note says which backend made it so."""
    scores = [Score.from_raw("faithfulness", "ragas", f"s{i}", 0.5, threshold=5.0) for i in range(4)]
    scores += [Score.from_raw("faithfulness", "deepeval", f"s{i}", i / 4, threshold=5.0) for i in range(4)]
    r = Report(scores)
    [p] = pairs(r.model(), "faithfulness")
    assert p["notes"] == [
        "pearson/spearman undefined: ragas has a single distinct value (5.0) on all 4 samples",
        "cohen_kappa undefined: pass/fail of ragas has a single distinct value (True) on all 4 samples "
        "(threshold ragas=5, deepeval=5)",
    ]
    page = render_html(r)
    assert "ragas has a single distinct value" in page and not re.search(r"\b[ab] has a single", page)


@pytest.mark.parametrize(
    "values, odd",
    [
        ({"native": 3.3, "ragas": 0.0, "deepeval": 10.0}, "deepeval"),  # 6.7 from the nearest, others 3.3 apart
        ({"native": 0.0, "ragas": 9.0, "deepeval": 10.0}, "native"),
        ({"native": 0.0, "ragas": 5.0, "deepeval": 10.0}, None),  # evenly spread: nobody stands out
        ({"native": 5.0, "ragas": 5.5, "deepeval": 5.0}, None),  # gap 0.5 < 1: noise, not a stand
        ({"native": 0.0, "ragas": 10.0}, None),  # two backends: either could be wrong
        ({"a": 8.0, "b": 8.0, "c": 9.0, "d": 1.0}, "d"),
    ],
)
def test_odd_one_out(values, odd):
    assert odd_one_out(values) == odd


def test_marks_contexts_and_anchors(run):
    page = run.run_dir.joinpath("report.html").read_text()
    assert ">True<" not in page and ">False<" not in page
    assert "<span class='ok'>✓</span>" in page and "<span class='err'>✗</span>" in page
    first = json.loads(DATA.read_text().splitlines()[0])
    block = page[page.index(f"data-sid='{first['id']}'") :]
    block = block[: block.index("</details>")]
    doc, rel = first["retrieved_ids"][0], first["retrieved_ids"][0] in first["relevant_ids"]
    assert re.search(rf"<span class='docid'>{re.escape(doc)}</span> <span class='(n?rel)'>", block).group(1) == (
        "rel" if rel else "nrel"
    )
    assert anchor("q 1/ä#'") == "sample-q%201%2F%C3%A4%23%27" and " " not in anchor("a b")
    # an id with markup is escaped in the attribute and the text
    r = Report([Score.from_raw("mrr", "native", "<i>x</i>'", 0.5)], [Sample(id="<i>x</i>'", user_input="q")])
    html = render_html(r)
    assert "<i>x</i>" not in html and "data-sid='&lt;i&gt;x&lt;/i&gt;&#x27;'" in html


def test_run_time_after_a_resume_and_cost_in_money(run, tmp_path):
    """The header shows wall_seconds_total (all invocations) when the runner wrote it;
    with prices, the summary and cost tables show money."""
    folder = tmp_path / "run"
    folder.mkdir()
    lines = _lines(run.run_dir / "scores.jsonl")
    for d in lines:  # as a run with a price table writes them
        d["cost"]["usd"] = 0.001 if d["backend"] == "native" else None
    (folder / "scores.jsonl").write_text("".join(json.dumps(d) + "\n" for d in lines))
    summary = json.loads((run.run_dir / "summary.json").read_text())
    summary["timings"] = {"seconds": 0.027, "wall_seconds_total": 42.5, "task_seconds": 80.0}
    (folder / "summary.json").write_text(json.dumps(summary))
    page = Report.from_dir(folder).write_html(folder / "report.html").read_text()
    assert "run time 42.5 s" in page and "0.027" not in page
    n_native = sum(1 for d in lines if d["backend"] == "native")
    assert f"cost ${n_native * 0.001:,.4f}" in page
    assert f"Cost in money covers the {n_native} of {len(lines)} tasks" in page
    del summary["timings"]["wall_seconds_total"]
    (folder / "summary.json").write_text(json.dumps(summary))
    assert "run time 0.0 s" in Report.from_dir(folder).write_html(folder / "r2.html").read_text()
    plain = run.run_dir.joinpath("report.html").read_text()
    assert "$" not in plain[: plain.index("</header>")]  # no price table: tokens only


def test_repr_and_notebook_view(run):
    text = repr(run)
    n = len(DATA.read_text().splitlines())
    assert text.startswith(f"Report(run_dir='{run.run_dir}', samples={n}, metrics=2 × backends=2, ")
    assert f"scores={4 * n}, errors=8" in text and "backends: native, lastrel" in text
    html = run._repr_html_()
    assert "<table>" in html and "mrr" in html and "lastrel" in html
    for f in ("report.html", "scores.jsonl", "summary.json"):
        assert f">{f}</a>" in html
    assert "Report(in memory, samples=1" in repr(Report([Score.from_raw("mrr", "native", "s", 1.0)]))


def test_to_pandas_with_sample_columns(run):
    df = run.to_pandas(samples=True)
    rows = {d["id"]: d for d in map(json.loads, DATA.read_text().splitlines())}
    for _, row in df.iterrows():
        src = rows[row["sample_id"]]
        assert (row["user_input"], row["response"], row["reference"]) == (
            src["user_input"],
            src.get("response"),
            src.get("reference"),
        )
    assert "user_input" not in run.to_pandas().columns


def test_why_falls_back_to_verdicts_then_says_a_number_only():
    from unified.report.details import verdict_summary, why

    # ragas-style judge outputs, as a backend would record them in details
    ragas_like = {
        "framework": "ragas",
        "verdicts": [
            {"statement": "a", "verdict": 1, "reason": "x"},
            {"statement": "b", "verdict": 0, "reason": "y"},
            {"statement": "c", "verdict": 1, "reason": "z"},
        ],
    }
    assert verdict_summary(ragas_like) == "verdicts: 2 verdict=1, 1 verdict=0"
    assert why({"backend": "ragas", "details": ragas_like}) == "verdicts: 2 verdict=1, 1 verdict=0"
    native = {"contexts": [{"context": 1, "rating_a": 2, "relevant": True}, {"context": 2, "relevant": False}]}
    assert verdict_summary(native) == "contexts: 1 relevant, 1 not relevant"
    # what the ragas backend records today: a number, no reason, no verdicts
    text = why({"backend": "ragas", "reason": None, "details": {"framework": "ragas", "raw_out_of_range": 2.0}})
    assert "no reason text: ragas returned a number only (2.0, outside its range" in text
    assert why({"error": "boom <x>", "reason": "r"}) == "<span class='err'>boom &lt;x&gt;</span>"
