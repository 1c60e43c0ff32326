"""`unified-eval review` without a browser: the queue's order, the spans, the token, labels
appended to labels.jsonl and read back by compare/calibrate's reader, two people's
agreement, the resumed position, and appends from two processes that never interleave."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from review_runs import HOSTILE_ANSWER, hostile_run

from unified.data.files import append_line
from unified.data.labelfile import people_labels, read_history, read_people_labels
from unified.report import Report
from unified.review.queue import Filters, build_items, disagreement_order
from unified.review.session import ReviewSession, run_fingerprint
from unified.review.spans import Claim, segments, unsupported_claims

pytest.importorskip("starlette")
from starlette.testclient import TestClient

from unified.review.web import make_app


def line(sid, backend, value, bound=5.0, metric="faithfulness"):
    return {"sample_id": sid, "metric": metric, "backend": backend, "value": value,
            "passed": None if value is None else value >= bound, "threshold": bound}  # fmt: skip


def test_disagreement_order_split_then_spread_then_uncertainty():
    dicts = [
        # a: all agree far from the bound (spread 1) -> last
        line("a", "x", 9.0), line("a", "y", 9.5), line("a", "z", 10.0),
        # b: a 1-vs-2 split, spread 2                -> after c (narrower spread)
        line("b", "x", 4.0), line("b", "y", 6.0), line("b", "z", 5.5),
        # c: a 1-vs-2 split, spread 10               -> first
        line("c", "x", 0.0), line("c", "y", 10.0), line("c", "z", 9.0),
        # d: all agree, mean right at the bound      -> before a (more uncertain)
        line("d", "x", 5.0), line("d", "y", 5.0), line("d", "z", 5.0),
        # e: nobody gave a value                     -> not in the queue at all
        line("e", "x", None), line("e", "y", None),
        # the jury's line is not a voice: it would not turn d into a split
        line("d", "jury", 0.0),
    ]  # fmt: skip
    items = build_items(dicts)
    assert ("e", "faithfulness") not in items
    assert items[("c", "faithfulness")].key() == (1.0, 10.0, 1 / 3, pytest.approx(1 - abs(19 / 3 - 5) / 10), 10.0)
    order = {s: i for i, s in enumerate("abcde")}
    assert disagreement_order(items.values(), order) == ["c", "b", "d", "a"]
    fails = [it for it in items.values() if Filters(backend="x", verdict="fail").keeps(it)]
    assert sorted(it.sample_id for it in fails) == ["b", "c"]


def test_unsupported_spans_are_highlighted_where_the_answer_says_them():
    lines = [
        {"metric": "faithfulness", "backend": "native",
         "details": {"claims": [{"claim": "Paris", "support": 0.0}, {"claim": "ok", "support": 1.0}]}},
        {"metric": "faithfulness", "backend": "ragas", "details": {"verdicts": [{"statement": "the capital", "verdict": 0}]}},
        # context_recall's claims are the reference's: never marked in the answer
        {"metric": "context_recall", "backend": "native", "details": {"claims": [{"claim": "is", "support": 0.0}]}},
    ]  # fmt: skip
    claims = unsupported_claims(lines)
    assert claims == [Claim("native", "Paris"), Claim("ragas", "the capital")]
    assert segments("paris is The Capital.", claims) == [
        ("paris", True),
        (" is ", False),
        ("The Capital", True),
        (".", False),
    ]
    assert segments("", claims) == [("", False)]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return hostile_run(tmp_path_factory.mktemp("review"))


def client(run_dir: Path, who: str) -> tuple[TestClient, str, ReviewSession]:
    session = ReviewSession(run_dir, who)
    app, token = make_app(session)
    return TestClient(app, follow_redirects=False), token, session


def test_every_request_without_the_token_is_refused(run_dir):
    c, token, _ = client(run_dir, "ana")
    wrong = token[:-1] + ("y" if token[-1] != "y" else "z")  # one character off, never the token itself
    for path in ("/", "/sample?id=q01", "/agreement", "/static/review.css", "/nope"):
        assert c.get(path).status_code == 403, path
        assert c.get(path + ("&" if "?" in path else "?") + "token=" + wrong).status_code == 403, path
    assert c.post("/label", data={"id": "q01", "metric": "mrr", "value": "1"}).status_code == 403
    assert not (run_dir / "labels.jsonl").exists()
    r = c.get(f"/?token={token}")
    assert r.status_code == 303 and r.headers["location"].startswith("/sample?id=")
    page = c.get(r.headers["location"])
    assert page.status_code == 200 and "script-src 'self'" in page.headers["content-security-policy"]


def test_hostile_text_is_escaped_and_labels_resume(tmp_path):
    run = hostile_run(tmp_path)
    c, token, session = client(run, "ana")
    order, finished = session.order(Filters(), session.history())
    assert finished == 0 and len(order) == 4
    page = c.get(f"/sample?id=q01&token={token}").text
    assert HOSTILE_ANSWER not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    for sid, value in zip(order[:3], ("1", "0", "1")):
        r = c.post(f"/label?token={token}", data={"id": sid, "metric": "mrr", "value": value, "note": " why\n "})
        assert r.status_code == 303 and r.headers["location"].startswith("/?")  # the sample is finished
    bad = c.post(f"/label?token={token}", data={"id": order[3], "metric": "mrr", "value": "7"})
    assert bad.status_code == 400 and "1 (pass) or 0 (fail)" in bad.text
    assert c.post(f"/label?token={token}", data={"id": "nope", "metric": "mrr", "value": "1"}).status_code == 400
    lines = [json.loads(x) for x in (run / "labels.jsonl").read_text().splitlines()]
    assert [(d["sample_id"], d["label"], d["annotator"], d["note"]) for d in lines] == [
        (order[0], 1, "ana", "why"), (order[1], 0, "ana", "why"), (order[2], 1, "ana", "why")
    ]  # fmt: skip
    hashes = {sid: s.content_hash() for sid, s in Report.from_dir(run).sample_objects().items()}
    assert all(d["run"] == run_fingerprint(run) and d["sample_hash"] == hashes[d["sample_id"]] for d in lines)
    # a second server (a new session, as a second `review`) resumes at the fourth sample
    c2, token2, _ = client(run, "ana")
    resumed = parse_qs(urlsplit(c2.get(f"/?token={token2}").headers["location"]).query)
    assert resumed == {"id": [order[3]], "token": [token2]}
    # the reader compare/calibrate --labels use takes the three labels as the samples' labels
    report = Report.from_dir(run)
    assert report.use_labels(read_people_labels(run / "labels.jsonl")) == []
    got = {sid: s.metadata["labels"]["mrr"] for sid, s in report.sample_objects().items() if "labels" in s.metadata}
    assert got == {order[0]: 1, order[1]: 0, order[2]: 1}


def test_two_people_are_both_kept_and_their_agreement_shown(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    run = hostile_run(tmp_path)
    ana, bo = [client(run, who) for who in ("ana", "bo")]
    a_labels, b_labels = [1, 0, 1, 0], [1, 0, 0, 0]
    ids = ana[2].order(Filters(), ana[2].history())[0]
    for (c, token, _), labels in ((ana, a_labels), (bo, b_labels)):
        for sid, v in zip(ids, labels):
            assert (
                c.post(f"/label?token={token}", data={"id": sid, "metric": "mrr", "value": str(v)}).status_code == 303
            )
    history = read_history(run / "labels.jsonl")
    assert len(history.lines) == 8 and history.annotators() == ["ana", "bo"]
    (agree,) = ana[2].agreement(history)
    want = round(float(cohen_kappa_score(a_labels, b_labels)), 3)
    assert agree["n"] == 4 and agree["pairs"][0]["kappa"] == pytest.approx(want, abs=1e-3)
    page = ana[0].get(f"/agreement?token={ana[1]}").text
    assert "ana, bo" in page and f"{agree['pairs'][0]['kappa']}" in page
    # the reader's label of a sample two people split on is no label (a tie), said as a note
    people = people_labels(history)
    assert ids[2] not in people.labels and any("as many pass as fail" in n for n in people.notes)


def test_a_label_of_changed_content_is_stale_and_the_sample_returns_to_the_queue(tmp_path):
    run = hostile_run(tmp_path)
    c, token, session = client(run, "ana")
    order, _ = session.order(Filters(), session.history())
    for sid in order:
        session.label(sid, "mrr", 1)
    assert session.order(Filters(), session.history())[1] == 4
    assert c.get(f"/?token={token}").text.count("Nothing left to label") == 1
    session.hashes[order[1]] = "0" * 16  # the sample's content as a rerun with edited data holds it
    again, finished = session.order(Filters(), session.history())
    assert finished == 3 and again[3] == order[1]
    people = people_labels(session.history(), session.hashes)
    assert order[1] not in people.labels and people.notes == [
        "1 label(s) judged a sample whose content has changed since: left out"
    ]


def test_a_rubric_metric_asks_for_a_grade_on_0_to_10(tmp_path):
    from unified.metrics import MetricSpec, registered

    run = hostile_run(tmp_path)
    scores = run / "scores.jsonl"
    scores.write_text(scores.read_text().replace('"metric":"mrr"', '"metric":"tone"'))
    rubric = MetricSpec(
        "tone", "LLM rubric: polite", ("response",), "llm", rubric={"criteria": "polite", "scale": (0, 10)}
    )
    with registered(rubric):
        c, token, session = client(run, "ana")
        assert session.metrics == ["tone"]
        page = c.get(f"/sample?id=q01&token={token}").text
        assert 'data-graded="yes"' in page and 'type="number" name="value" min="0" max="10"' in page
        assert c.post(f"/label?token={token}", data={"id": "q01", "metric": "tone", "value": "7.5"}).status_code == 303
        bad = c.post(f"/label?token={token}", data={"id": "q01", "metric": "tone", "value": "11"})
        assert bad.status_code == 400 and "graded on 0–10" in bad.text
    assert json.loads((run / "labels.jsonl").read_text())["label"] == 7.5
    # without the rubric registered (no --plugins), the same metric is labelled pass/fail
    c, token, _ = client(run, "bo")
    assert 'data-graded="no"' in c.get(f"/sample?id=q01&token={token}").text


def _append_many(path: str, who: str) -> None:
    for i in range(300):
        append_line(path, json.dumps({"sample_id": f"s{i}", "annotator": who, "pad": "x" * 5000}))


def test_appends_from_two_processes_never_interleave(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"torn": ')  # a line a killed writer left half-written
    procs = [multiprocessing.get_context("spawn").Process(target=_append_many, args=(str(path), w)) for w in "ab"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    raw = path.read_text().splitlines()
    assert raw[0] == '{"torn": ' and len(raw) == 601
    parsed = [json.loads(x) for x in raw[1:]]
    assert sorted((d["annotator"], d["sample_id"]) for d in parsed) == sorted(
        (w, f"s{i}") for w in "ab" for i in range(300)
    )


def test_skip_filters_and_a_missing_sample(tmp_path):
    run = hostile_run(tmp_path)
    c, token, session = client(run, "ana")
    order, _ = session.order(Filters(), session.history())
    r = c.post(f"/skip?token={token}", data={"id": order[0]})
    assert r.status_code == 303 and r.headers["location"] == f"/?token={token}"
    nxt = c.get(r.headers["location"]).headers["location"]
    assert parse_qs(urlsplit(nxt).query)["id"] == [order[1]]  # the next open sample, its id intact
    again, finished = session.order(Filters(), session.history())
    assert finished == 0 and again == [*order[1:], order[0]]  # the skipped sample went to the back
    skip = json.loads((run / "labels.jsonl").read_text())
    assert skip["skipped"] is True and "metric" not in skip and "label" not in skip
    # filters: a backend and a verdict keep exactly the samples where that backend said so
    sizes = []
    for backend in ("native", "lastrel"):
        for verdict in ("pass", "fail"):
            want = {sid for (sid, _), it in session.items.items() for v in it.verdicts
                    if v.backend == backend and v.passed is (verdict == "pass")}  # fmt: skip
            got, _ = session.order(Filters(backend=backend, verdict=verdict), session.history())
            assert set(got) == want, (backend, verdict)
            sizes.append(len(want))
    assert sizes == [3, 1, 2, 2] and order[0] == "q04", (sizes, order)  # native fails only q03
    r = c.get(f"/?backend=lastrel&verdict=fail&token={token}")
    assert (
        r.status_code == 303 and "backend=lastrel" in r.headers["location"] and "verdict=fail" in r.headers["location"]
    )
    assert c.get(f"/sample?id=nope&token={token}").status_code == 404
    assert c.post(f"/skip?token={token}", data={"id": "nope"}).status_code == 400


def test_labels_file_errors_are_one_line_and_come_before_any_judge(tmp_path, run_dir):
    from typer.testing import CliRunner

    from unified.cli.app import app

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "q01"}\nnot json\n')
    data = run_dir.parent / "data.jsonl"
    base = ["compare", str(data), "--backends", "native,ragas", "--metrics", "faithfulness"]
    base += ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--out", str(tmp_path / "out")]
    r = CliRunner().invoke(app, [*base, "--labels", str(tmp_path / "nope.jsonl")])
    assert r.exit_code == 2 and r.output.strip().endswith("nope.jsonl: no such file"), r.output
    r = CliRunner().invoke(app, [*base, "--labels", str(bad)])
    assert r.exit_code == 2 and "no label line in it (2 line(s) that are not label lines)" in r.output, r.output
    assert not (tmp_path / "out").exists()  # refused before the folder, before any judge
    r = CliRunner().invoke(app, ["calibrate", str(run_dir), "--labels", str(bad)])
    assert r.exit_code == 2 and "no label line" in r.output
    r = CliRunner().invoke(app, ["review", str(tmp_path)])
    assert r.exit_code == 2 and "not a run folder (no scores.jsonl)" in r.output
