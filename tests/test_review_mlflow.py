"""People's labels pushed to MLflow as human feedback on the traces their samples came
from, and read back (issue 43, point 5): real traces logged by the real ``mlflow`` package
to a sqlite store in tmp."""

from __future__ import annotations

import pytest

mlflow = pytest.importorskip("mlflow")
pytest.importorskip("sqlalchemy")

from unified.data.labelfile import LabelHistory, LabelLine, people_labels  # noqa: E402
from unified.platforms.mlflow_labels import push_labels, read_labels  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A sqlite MLflow store for the module (creating one costs seconds): (URI, experiment)."""
    folder = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    exp = mlflow.create_experiment("review-labels", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=exp)
    yield uri, exp
    mlflow.set_tracking_uri(None)


@pytest.fixture
def traces(store):
    """Three traced calls of this test's own: (store URI, their trace ids)."""
    uri, exp = store
    before = {t.info.trace_id for t in mlflow.search_traces(locations=[exp], return_type="list", flush=True)}

    @mlflow.trace(name="rag")
    def rag(question: str) -> str:
        return f"answer to {question}"

    for q in ("a", "b", "c"):
        rag(q)
    now = {t.info.trace_id for t in mlflow.search_traces(locations=[exp], return_type="list", flush=True)}
    return uri, sorted(now - before)


def test_labels_go_to_their_traces_once_and_come_back(traces):
    store, ids = traces
    assert len(ids) == 3 and all(i.startswith("tr-") for i in ids)
    lines = [
        LabelLine(ids[0], "ana", "2026-12-03T10:00:00.000Z", "faithfulness", 1, "fp", "h0", "fine"),
        LabelLine(ids[0], "ana", "2026-12-03T10:00:05.000Z", "faithfulness", 0, "fp", "h0", "changed my mind"),
        LabelLine(ids[1], "bo", "2026-12-03T10:01:00.000Z", "tone", 7.5, "fp", "h1"),
        LabelLine(ids[2], "ana", "2026-12-03T10:02:00.000Z", "faithfulness", 1, "fp", "old"),  # stale
        LabelLine("q01", "ana", "2026-12-03T10:03:00.000Z", "faithfulness", 1, "fp", "h9"),  # no trace
    ]
    history = LabelHistory(lines=lines)
    current = {ids[0]: "h0", ids[1]: "h1", ids[2]: "new", "q01": "h9"}
    first = push_labels(history, store, current)
    assert (first.logged, first.present, first.no_trace, first.errors) == (2, 0, 1, [])
    again = push_labels(history, store, current)
    assert (again.logged, again.present) == (0, 2)  # nothing logged twice
    back = read_labels(store, ids)
    assert back.unreadable == 0
    got = sorted((x.sample_id, x.annotator, x.metric, x.label, x.note, x.sample_hash) for x in back.lines)
    assert got == sorted(
        [(ids[0], "ana", "faithfulness", 0, "changed my mind", "h0"), (ids[1], "bo", "tone", 7.5, None, "h1")]
    )
    feedback = mlflow.MlflowClient(store).get_trace(ids[0]).info.assessments
    assert [(a.name, a.feedback.value, a.source.source_type) for a in feedback] == [("faithfulness", False, "HUMAN")]
    # read back, they are labels the compare/calibrate reader takes
    assert people_labels(back, current).labels == {ids[0]: {"faithfulness": 0}, ids[1]: {"tone": 7.5}}


def test_a_trace_mlflow_does_not_know_is_one_error_line_and_the_rest_goes_on(traces):
    store, ids = traces
    history = LabelHistory(
        lines=[
            LabelLine("tr-00000000000000000000000000000000", "ana", "t1", "faithfulness", 1),
            LabelLine(ids[0], "ana", "t2", "faithfulness", 1),
        ]
    )
    out = push_labels(history, store)
    assert out.logged == 1 and len(out.errors) == 1 and out.errors[0].startswith("trace tr-0000")


def test_review_mlflow_pushes_the_labels_when_stopped(traces, tmp_path):
    """`unified-eval review RUN --mlflow URI` as a real process: label over HTTP, Ctrl-C,
    the labels are on the traces."""
    import json

    import httpx
    from report_runs import LastRelevant, rows
    from review_runs import ReviewServer

    from unified.api import evaluate
    from unified.judge.base import Judges

    store, ids = traces
    data = rows(3)
    for r, trace_id in zip(data, ids):
        r["id"] = trace_id  # samples read from these traces carry their ids
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in data))
    evaluate(tmp_path / "d.jsonl", "mrr", ["native", LastRelevant()], judges=Judges(), out=tmp_path / "run", quiet=True)
    with ReviewServer(tmp_path / "run", "ana", "--mlflow", store) as srv:
        for trace_id, value in zip(ids[:2], ("1", "0")):
            r = httpx.post(
                f"{srv.base}/label?token={srv.token}", data={"id": trace_id, "metric": "mrr", "value": value}
            )
            assert r.status_code == 303
        assert srv.stop() == 0, srv.proc.stderr.read()
        err = srv.proc.stderr.read()
    assert "MLflow: 2 label(s) logged as human feedback, 0 already there" in err, err
    back = read_labels(store, ids)
    assert sorted((x.sample_id, x.label) for x in back.lines) == [(ids[0], 1), (ids[1], 0)]
