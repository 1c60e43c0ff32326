"""scores.parquet (issue 25 part 2): a columnar copy of scores.jsonl that every reader
uses only while it describes the lines, and that reads back exactly as the lines do.

Round trips compare two copies of the same folder — one with its parquet, one without —
through every reader (the model, the score dicts, the DataFrame, the groups, the page's
fetch, diff), after checking the parquet copy really was the one read. Staleness is
checked on real files: a line edited by hand (same size, mtime set back), a line added,
a resumed, retried, fresh and SIGTERM-interrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
from pathlib import Path

import pandas as pd
import pytest
from support import hostile_retrieval_rows
from test_scale import METRICS, OLD, rows, run, write
from typer.testing import CliRunner

from unified.api import evaluate
from unified.report import Report
from unified.report.diff import diff_runs
from unified.report.model import FileSource, ParquetSource, build_model
from unified.run import columnar
from unified.run.interrupts import RunInterrupted
from unified.scores import full_line

PQ = "scores.parquet"


def twins(folder: Path, tmp: Path) -> tuple[Path, Path]:
    """Two copies of ``folder``: with a freshly built parquet, and without one."""
    a, b = tmp / "with_parquet", tmp / "lines_only"
    for p in (a, b):
        shutil.rmtree(p, ignore_errors=True)
        shutil.copytree(folder, p)
    (b / PQ).unlink(missing_ok=True)
    (a / PQ).unlink(missing_ok=True)
    assert columnar.build_parquet(a) is not None
    return a, b


def _tasks(rep: Report) -> dict:
    """The model's tasks without their positions (byte offsets vs row numbers)."""
    m = rep.model()
    out = {
        (mm, b, sid): dataclasses.replace(t, pos=0)
        for mm, per in m.tasks.items()
        for b, s in per.items()
        for sid, t in s.items()
    }
    out.update({("row", *k): dataclasses.replace(t, pos=0) for k, t in m.row_tasks.items()})
    return out


def _text(dicts) -> str:
    """A list of dicts as text, key order included, NaN equal to NaN."""
    return json.dumps([list(d.items()) for d in dicts], default=str)


def assert_same_reads(folder: Path, tmp: Path) -> None:
    a, b = twins(folder, tmp)
    ra, rb = Report(a), Report(b)
    assert isinstance(ra.source(), ParquetSource) and isinstance(rb.source(), FileSource)
    assert _tasks(ra) == _tasks(rb)
    ma, mb = ra.model(), rb.model()
    assert (ma.metrics, ma.backends, ma.superseded, ma.unreadable) == (
        mb.metrics,
        mb.backends,
        mb.superseded,
        mb.unreadable,
    )
    assert _text(ra.iter_score_dicts()) == _text(rb.iter_score_dicts())
    # diff's read: a few columns, the same tasks, last lines and 0–10 rule as the whole
    # lines (a field left out reads as its default, as full_line gives it)
    fields = (*columnar.KEY, "value", "error", "sample_hash", "row_error", "details")

    def cut(dicts):
        return _text({k: full_line(d)[k] for k in fields} for d in dicts)

    want = cut(rb.iter_score_dicts())
    assert cut(ra.iter_score_fields(fields[3:])) == want == cut(rb.iter_score_fields(fields[3:]))
    assert [s.model_dump() for s in ra.summary()] == [s.model_dump() for s in rb.summary()]
    assert ra.error_groups() == rb.error_groups() and ra.degraded_groups() == rb.degraded_groups()
    pd.testing.assert_frame_equal(ra.to_pandas(), rb.to_pandas())
    # the page fetches a few lines by position: each source by its own positions
    pa_, pb_ = sorted(t.pos for t in _all(ma)), sorted(t.pos for t in _all(mb))
    assert _text(ra.source().fetch(pa_).values()) == _text(rb.source().fetch(pb_).values())


def _all(model) -> list:
    return [t for per in model.tasks.values() for s in per.values() for t in s.values()] + list(
        model.row_tasks.values()
    )


# ---------------------------------------------------------------- folder shapes


def test_a_run_writes_a_fresh_parquet_that_reads_as_its_lines(tmp_path):
    data = write(tmp_path / "in.jsonl", rows(6) + [{"id": "noref", "user_input": "q?", "retrieved_ids": ["a"]}])
    with data.open("a") as f:
        f.write('{"id": "bad", "user_input": 5, "retrieved_ids": "x"}\n')  # a row error
    run(data, tmp_path / "out")
    out = tmp_path / "out"
    meta = columnar.fresh_parquet(out)
    assert meta is not None and meta["rows"] == len((out / "scores.jsonl").read_text().splitlines())
    lines = [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert any(d.get("row_error") for d in lines) and any(d.get("error") and not d.get("row_error") for d in lines)
    assert_same_reads(out, tmp_path)


def test_an_old_0_3_folder_of_full_lines_reads_the_same(tmp_path):
    assert_same_reads(OLD, tmp_path)


FOREIGN = [
    # degraded (its reason in details), calibrated, nested lists, judge cost, non-ASCII
    {
        "metric": "faithfulness",
        "backend": "native",
        "sample_id": "a",
        "value": 6.0,
        "raw": 0.6,
        "raw_range": [0.0, 1.0],
        "passed": True,
        "reason": "2 of 3 claims — ok ✓",
        "degraded": True,
        "calibrated": 7.25,
        "details": {"degraded_reason": "judge B timed out", "claims": [["c1", True], ["c2", [1, 2, {"x": None}]]]},
        "cost": {"calls": 2, "input_tokens": 900, "usd": 0.0012},
        "sample_hash": "h1",
        "config_hash": "c1",
        "row": 1,
    },
    # a failure: value null with its error; a partial cost
    {
        "metric": "faithfulness",
        "backend": "native",
        "sample_id": "b",
        "value": None,
        "error": "judge down",
        "cost": {"retries": 3},
    },
    # hand-written: an int value, an explicit null for a bool, unknown fields in order
    {
        "metric": "mrr",
        "backend": "native",
        "sample_id": "c",
        "value": 5,
        "passed": None,
        "zeta": [1],
        "alpha": {"k": "v"},
    },
    # values that break the 0–10 rule become failed tasks on both paths
    {"metric": "mrr", "backend": "native", "sample_id": "d", "value": 11},
    {"metric": "mrr", "backend": "native", "sample_id": "e", "value": "7"},
    {"metric": "mrr", "backend": "native", "sample_id": "f", "value": None},
    # details null, a huge int row, a string input_index, higher_is_better false, degraded null
    {
        "metric": "mrr",
        "backend": "native",
        "sample_id": "g",
        "value": 1.5,
        "details": None,
        "row": 2**70,
        "input_index": "k7",
        "higher_is_better": False,
        "degraded": None,
        "reason": None,
    },
    # a row error; a superseded line (the later one wins on both paths)
    {
        "metric": "mrr",
        "backend": "native",
        "sample_id": "row:9",
        "value": None,
        "error": "in.jsonl:9: bad",
        "row_error": True,
    },
    {"metric": "mrr", "backend": "native", "sample_id": "c", "value": 4.0, "threshold": 5.0, "passed": False},
]


def _foreign_text(surrogate: bool) -> str:
    text = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in FOREIGN)
    text += '{"metric":"mrr","backend":"native","sample_id":"h","value":NaN}\n'  # Python's json reads NaN
    if surrogate:  # Arrow cannot store a lone surrogate as UTF-8: kept as JSON text in ``extra``
        text += '{"metric":"mrr","backend":"native","sample_id":"i","value":2.0,"reason":"\\ud800 lone"}\n'
    text += "not json\n\n[1, 2]\n" + '{"metric": 3, "backend": "native", "sample_id": "j"}\n'
    return text + '{"metric":"mrr","backend":"native","sample_id":"torn","val'  # a kill -9's torn last line


def test_each_row_reads_back_as_its_lines_json_object(tmp_path):
    text = _foreign_text(surrogate=True)
    (tmp_path / "scores.jsonl").write_text(text, encoding="utf-8")
    meta = columnar.build_parquet(tmp_path)
    assert meta is not None and meta["unreadable"] == 4 and meta["rows"] == len(FOREIGN) + 2
    # up to a null for a field whose default is null (full_line reads both as None)
    raw = [columnar.raw_line(x) for x in text.splitlines()]
    got = [d for _, d in columnar.iter_raw(tmp_path / PQ)]
    assert _text(map(full_line, got)) == _text(full_line(d) for d in raw if d is not None)
    assert got[2]["value"] == 5 and type(got[2]["value"]) is int and list(got[2])[-2:] == ["zeta", "alpha"]
    assert got[6]["row"] == 2**70 and got[6]["details"] is None and "degraded" in got[6]
    assert got[-1]["reason"] == "\ud800 lone"


def test_foreign_and_hand_edited_lines_read_the_same_both_ways(tmp_path):
    """Every reader; the lone-surrogate line is left out here only because pandas cannot
    hold it in a string column on either path (the test above round-trips it)."""
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "scores.jsonl").write_text(_foreign_text(surrogate=False), encoding="utf-8")
    assert_same_reads(folder, tmp_path)


def test_the_parquet_has_typed_dictionary_columns(tmp_path):
    import pyarrow.parquet as pq

    run(write(tmp_path / "in.jsonl", rows(4)), tmp_path / "out")
    t = pq.read_table(tmp_path / "out" / PQ)
    types = {f.name: str(f.type) for f in t.schema}
    assert types["metric"] == types["sample_id"] == "dictionary<values=string, indices=int32, ordered=0>"
    assert (types["value"], types["raw"], types["passed"], types["details"]) == ("double", "double", "bool", "string")
    df = pd.read_parquet(tmp_path / "out" / PQ)  # any Parquet reader opens it
    assert len(df) == 8 and df["value"].dtype == "float64" and df["extra"].isna().all()
    assert json.loads(df["details"][0])["k"] == 3


# ---------------------------------------------------------------- staleness


def _first(tmp_path: Path) -> tuple[Path, Path]:
    data, out = write(tmp_path / "in.jsonl", rows(4)), tmp_path / "out"
    run(data, out)
    assert columnar.fresh_parquet(out) is not None
    return data, out


def test_a_hand_edited_scores_jsonl_is_never_shadowed_by_the_old_parquet(tmp_path):
    """The same size, the mtime set back: only the ctime and the bytes say it changed."""
    _, out = _first(tmp_path)
    path = out / "scores.jsonl"
    st, text = path.stat(), path.read_text()
    first = json.loads(text.splitlines()[0])
    old = f'"value":{first["value"]!r}'
    new = '"value":' + ("9.9" if len(repr(first["value"])) == 3 else "9." + "9" * (len(repr(first["value"])) - 2))
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new, 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert columnar.fresh_parquet(out) is None
    rep = Report(out)
    assert isinstance(rep.source(), FileSource)
    df = rep.to_pandas()
    got = df[(df["sample_id"] == first["sample_id"]) & (df["metric"] == first["metric"])]["value"]
    assert got.tolist() == [float(new.split(":")[1])]


def test_a_line_appended_by_hand_is_read(tmp_path):
    _, out = _first(tmp_path)
    with (out / "scores.jsonl").open("a") as f:
        f.write('{"metric":"mrr","backend":"native","sample_id":"extra","value":1.0}\n')
    rep = Report(out)
    assert isinstance(rep.source(), FileSource) and "extra" in set(rep.to_pandas()["sample_id"])


def test_a_copied_folder_keeps_using_its_parquet(tmp_path):
    """Another inode and ctime: the stat differs, the sha256 proves the same bytes."""
    _, out = _first(tmp_path)
    shutil.copytree(out, tmp_path / "copy")
    assert isinstance(Report(tmp_path / "copy").source(), ParquetSource)


def test_a_resumed_run_removes_the_parquet_before_it_writes_and_rebuilds_it(tmp_path):
    from unified.adapters.native import NativeBackend

    data, out = _first(tmp_path)
    seen: list[bool] = []

    class Watching(NativeBackend):
        async def score(self, sample, metrics):
            seen.append((out / PQ).exists())
            return await super().score(sample, metrics)

    write(data, rows(4) + rows(2, start=4))
    evaluate(data, METRICS, [Watching(None)], out=out, quiet=True, progress=False)
    assert seen == [False, False]
    assert columnar.fresh_parquet(out)["rows"] == 12
    assert_same_reads(out, tmp_path / "twins")


@pytest.mark.parametrize("option", ["fresh", "retry_errors"])
def test_fresh_and_retry_errors_leave_a_parquet_of_their_own_lines(tmp_path, option):
    data, out = tmp_path / "in.jsonl", tmp_path / "out"
    write(data, rows(3) + [{"id": "noref", "user_input": "q?", "retrieved_ids": ["a"]}])
    run(data, out)
    before = columnar.fresh_parquet(out)
    run(data, out, **{option: True})
    after = columnar.fresh_parquet(out)
    assert after is not None and after["scores"]["stat"] != before["scores"]["stat"]
    assert after["rows"] == 8


def test_a_sigterm_interrupted_run_leaves_no_parquet(tmp_path):
    """A real SIGTERM to this process from inside the scoring: the run stops, its folder
    is consistent, and no parquet stands for lines a resumed run will change."""
    from unified.adapters.native import NativeBackend

    data, out = _first(tmp_path)

    class Terminating(NativeBackend):
        async def score(self, sample, metrics):
            if sample.id == "s5":
                os.kill(os.getpid(), signal.SIGTERM)
            return await super().score(sample, metrics)

    write(data, rows(4) + rows(4, start=4))
    with pytest.raises(RunInterrupted):
        evaluate(data, METRICS, [Terminating(None)], out=out, quiet=True, progress=False)
    assert not (out / PQ).exists()
    run(data, out)  # the same command completes and writes it again
    assert columnar.fresh_parquet(out)["rows"] == 16


def test_a_callers_on_interrupt_hook_hears_the_interruption_and_the_raise_keeps_its_details(tmp_path):
    """``evaluate(on_interrupt=hook)``: the hook used to replace the one that records the
    details, so the RunInterrupted raised said 0 tasks done and named no resume command."""
    from unified.adapters.native import NativeBackend

    data, out = _first(tmp_path)

    class Terminating(NativeBackend):
        async def score(self, sample, metrics):
            if sample.id == "s5":
                os.kill(os.getpid(), signal.SIGTERM)
            return await super().score(sample, metrics)

    write(data, rows(4) + rows(4, start=4))
    heard: list[RunInterrupted] = []
    with pytest.raises(RunInterrupted) as info:
        evaluate(data, METRICS, [Terminating(None)], out=out, quiet=True, progress=False, on_interrupt=heard.append)
    assert heard == [info.value] and info.value.signal == "SIGTERM"
    assert info.value.done >= 8 and info.value.total == 16 and f"out={str(out)!r}" in info.value.hint


def test_the_no_op_rerun_leaves_the_parquet_alone(tmp_path):
    data, out = _first(tmp_path)
    st = (out / PQ).stat()
    again = run(data, out)
    assert again.unchanged and (out / PQ).stat().st_mtime_ns == st.st_mtime_ns
    assert isinstance(again.source(), ParquetSource)


def test_a_parquet_that_cannot_be_written_is_one_note_and_the_run_goes_on(tmp_path, capsys):
    """A real write failure: a folder stands where the parquet's temp file must go."""
    out = tmp_path / "out"
    (out / f".{PQ}.{os.getpid()}.tmp").mkdir(parents=True)
    rep = evaluate(write(tmp_path / "in.jsonl", rows(3)), METRICS, ["native"], out=out, progress=False)
    assert not (out / PQ).exists() and len(rep.to_pandas()) == 6
    assert isinstance(rep.source(), FileSource)
    err = capsys.readouterr()
    notes = [x for x in (err.out + err.err).splitlines() if PQ in x]
    assert len(notes) == 1 and f"note: no {PQ} written (cannot write" in notes[0], notes


def test_a_torn_or_foreign_parquet_is_ignored(tmp_path):
    _, out = _first(tmp_path)
    (out / PQ).write_bytes(b"PAR1 not really")
    assert columnar.fresh_parquet(out) is None and isinstance(Report(out).source(), FileSource)


def test_a_parquet_damaged_inside_is_an_error_the_report_reads_past_to_the_lines(tmp_path):
    """Its footer (and so its fingerprint) intact, every data page overwritten: the page
    checksums make the read fail, and the report reads the lines instead — the same
    values, never numbers decoded from damaged pages."""
    _, out = _first(tmp_path)
    want = _tasks(Report(out))
    path = out / PQ
    raw = bytearray(path.read_bytes())
    footer = int.from_bytes(raw[-8:-4], "little")
    raw[4 : len(raw) - 8 - footer] = b"\x55" * (len(raw) - 12 - footer)
    path.write_bytes(bytes(raw))
    assert columnar.fresh_parquet(out) is not None  # the footer still vouches for the lines
    rep = Report(out)
    assert _tasks(rep) == want
    assert isinstance(rep.source(), FileSource)
    assert len(list(rep.iter_score_dicts())) == len(want)


def test_a_report_keeps_the_source_its_model_was_built_from(tmp_path):
    """A model read from the lines keeps byte offsets: a parquet written after it must not
    be paired with those positions (rows would be dropped without a word)."""
    data, out = _first(tmp_path)
    run(data, out, fresh=True)
    (out / PQ).unlink()
    rep = Report(out)
    n = len(rep.to_pandas())
    columnar.build_parquet(out)
    assert isinstance(rep.source(), FileSource) and len(list(rep.iter_score_dicts())) == n
    assert isinstance(Report(out).source(), ParquetSource)


# ---------------------------------------------------------------- the CLI, end to end


def _cli(*args) -> str:
    from unified.cli.app import app

    r = CliRunner().invoke(app, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def test_cli_runs_then_diff_and_report_read_the_parquet_as_the_lines(tmp_path, monkeypatch):
    d1 = write(tmp_path / "a.jsonl", rows(6))
    d2 = write(tmp_path / "b.jsonl", [{**r, "retrieved_ids": ["a", "c", "b"]} for r in rows(6)])
    _cli("run", d1, "-m", METRICS, "--out", tmp_path / "A", "--quiet")
    _cli("run", d2, "-m", METRICS, "--out", tmp_path / "B", "--quiet")
    assert (tmp_path / "A" / PQ).exists() and (tmp_path / "B" / PQ).exists()
    calls: list[Path] = []
    real = columnar.iter_model_columns
    monkeypatch.setattr(columnar, "iter_model_columns", lambda p: calls.append(p) or real(p))
    via_parquet = _cli("diff", tmp_path / "A", tmp_path / "B", "--n-boot", 200, "--json", tmp_path / "d1.json")
    report_pq = _cli("report", tmp_path / "A")
    assert {p.parent.name for p in calls} == {"A", "B"}
    for f in ("A", "B"):
        shutil.copytree(tmp_path / f, tmp_path / f"{f}_lines")
        (tmp_path / f"{f}_lines" / PQ).unlink()
    calls.clear()
    via_lines = _cli(
        "diff", tmp_path / "A_lines", tmp_path / "B_lines", "--n-boot", 200, "--json", tmp_path / "d2.json"
    )
    assert calls == []
    assert via_parquet == via_lines and "mrr" in via_parquet
    assert json.loads((tmp_path / "d1.json").read_text()) == json.loads((tmp_path / "d2.json").read_text())
    assert report_pq.replace("A", "X") == _cli("report", tmp_path / "A_lines").replace("A_lines", "X")
    assert diff_runs(tmp_path / "A", tmp_path / "B", n_boot=200) == diff_runs(
        tmp_path / "A_lines", tmp_path / "B_lines", n_boot=200
    )


# ---------------------------------------------------------------- the model's batch read


class _LinesOf:
    """A source with only ``model_lines``: ``build_model``'s line-at-a-time road."""

    def __init__(self, source: ParquetSource):
        self.source, self.unreadable = source, source.unreadable

    def model_lines(self):
        return self.source.model_lines()


def _model_state(m) -> tuple:
    """Everything ``build_model`` decides, positions and every order included."""
    tasks = [(mm, b, list(col.items())) for mm, per in m.tasks.items() for b, col in per.items()]
    return (tasks, list(m.row_tasks.items()), m.metrics, m.backends, m.seen, list(m.written), m.superseded)


PLAIN_EDGES = [
    # on the batch road: the scale's ends, a failure with its error, a threshold that is not finite
    {"metric": "mrr", "backend": "native", "sample_id": "p0", "value": 0.0, "threshold": 5.0, "passed": False},
    {"metric": "mrr", "backend": "native", "sample_id": "p1", "value": 10.0},
    {"metric": "mrr", "backend": "native", "sample_id": "p2", "value": None, "error": "missing field 'x'"},
    {"metric": "mrr", "backend": "native", "sample_id": "p3", "value": 3.0, "threshold": float("inf")},
    # off it: an empty error, a value just past 10, a degraded flag set false, a row error
    {"metric": "mrr", "backend": "native", "sample_id": "p4", "value": None, "error": ""},
    {"metric": "mrr", "backend": "native", "sample_id": "p5", "value": 10.000001},
    {"metric": "ndcg@3", "backend": "b2", "sample_id": "p6", "value": 4.0, "degraded": False, "row_error": False},
    {"metric": "ndcg@3", "backend": "b2", "sample_id": "row:3", "value": None, "error": "bad", "row_error": True},
    # a plain line replacing a foreign one, and a foreign one replacing a plain one
    {"metric": "faithfulness", "backend": "native", "sample_id": "a", "value": 2.0},
    {"metric": "mrr", "backend": "native", "sample_id": "p1", "value": 1.0, "cost": {"calls": 1}},
]


@pytest.mark.parametrize("batch_rows", [1, 3, 4096])
def test_the_model_read_a_batch_at_a_time_is_the_model_read_a_line_at_a_time(tmp_path, monkeypatch, batch_rows):
    """The batch road (``build_model`` over ``ParquetSource.model_batches``) against the
    line road over the same file: tasks, positions, row errors, every order, superseded
    counts — on a real run's lines mixed with foreign, hand-edited and broken ones, at
    batch sizes that put the odd rows at every place in a batch."""
    data = write(tmp_path / "in.jsonl", rows(7) + [{"id": "noref", "user_input": "q?", "retrieved_ids": ["a"]}])
    run(data, tmp_path / "out")
    real = (tmp_path / "out" / "scores.jsonl").read_text().splitlines(keepends=True)
    foreign = _foreign_text(surrogate=True).splitlines(keepends=True)[:-1]  # not the torn line: it ends the file
    edges = [json.dumps(d) + "\n" for d in PLAIN_EDGES]
    mixed = [x for trio in zip(real, foreign + [""] * len(real), edges + [""] * len(real)) for x in trio if x]
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "scores.jsonl").write_text("".join(mixed), encoding="utf-8")
    monkeypatch.setattr(columnar, "BATCH_ROWS", batch_rows)
    meta = columnar.build_parquet(folder)
    assert meta is not None
    src = ParquetSource(folder / PQ, meta)
    fast, slow = build_model(src), build_model(_LinesOf(src))
    assert _model_state(fast) == _model_state(slow)
    assert fast.superseded == 3 and fast.task("mrr", "native", "p3").threshold is None
    assert fast.task("mrr", "native", "p5").error.startswith("invalid line") and ("p0", "p6") <= tuple(fast.ids.ids)


# ---------------------------------------------------------------- the copy built while the lines are written


def _spy_builds(monkeypatch) -> list[Path]:
    """The folders whose scores.parquet the run's end built from the file (not the stream's copy)."""
    from unified.run import finish

    built: list[Path] = []
    real = finish.build_parquet
    monkeypatch.setattr(finish, "build_parquet", lambda folder: built.append(Path(folder)) or real(folder))
    return built


@pytest.mark.parametrize("batch_rows", [3, 4096])
def test_the_copy_built_while_the_lines_are_written_is_the_copy_built_from_them(tmp_path, monkeypatch, batch_rows):
    """A fresh run's scores.parquet comes from the stream (the file is not parsed again),
    and is byte for byte the file ``write_parquet`` builds from the finished lines —
    row errors, missing-field failures, unicode, tiny floats, at batch sizes that split
    the rows everywhere. Its fingerprint of the lines is index.json's, hashed once."""
    from unified.run import runindex

    monkeypatch.setattr(columnar, "BATCH_ROWS", batch_rows)
    built = _spy_builds(monkeypatch)
    hashed: list[Path] = []
    real_digest = runindex.file_digest
    monkeypatch.setattr(runindex, "file_digest", lambda p: hashed.append(Path(p)) or real_digest(p))
    monkeypatch.setattr(columnar, "file_digest", runindex.file_digest)
    data = hostile_retrieval_rows(tmp_path / "in.jsonl", 300, graded=True)
    out = tmp_path / "out"
    evaluate(data, "precision@5,ndcg@10,mrr", ["native"], out=out, quiet=True, progress=False, concurrency=7)
    assert built == []  # the stream's copy was proven and kept
    assert [p.name for p in hashed].count("scores.jsonl") == 1
    streamed = (out / PQ).read_bytes()
    lines = (out / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    assert any('"row_error":true' in x for x in lines) and any("missing field" in x for x in lines)
    meta = columnar.write_parquet(out)  # the file unchanged: the same stat, the same metadata
    assert (out / PQ).read_bytes() == streamed and meta is not None and meta["rows"] == len(lines)
    index = json.loads((out / "index.json").read_text())
    assert index["scores"] == runindex.fingerprint(out / "scores.jsonl")


def test_a_resumed_run_builds_its_copy_from_the_file(tmp_path, monkeypatch):
    """Lines from an earlier run in the file: no stream copy; the file is read."""
    data = write(tmp_path / "in.jsonl", rows(6))
    run(data, tmp_path / "out", max_samples=3)
    built = _spy_builds(monkeypatch)
    run(data, tmp_path / "out")
    assert built == [tmp_path / "out"] and columnar.fresh_parquet(tmp_path / "out") is not None
    assert_same_reads(tmp_path / "out", tmp_path)


@pytest.mark.parametrize("change", ["append", "same_size_edit", "rewrite"])
def test_a_copy_the_file_no_longer_matches_is_not_used(tmp_path, monkeypatch, change):
    """What the stream handed over must be the whole file: a line added by hand, a line
    edited to the same size (the stat alone cannot tell), the run's own rewrite of its
    lines after the stream (as a calibration or a jury does) — the digests differ and
    the copy comes from the file."""
    from unified.run import finish
    from unified.run.runfolder import AppendLog

    if change == "rewrite":
        built = _spy_builds(monkeypatch)
        monkeypatch.setattr(
            finish, "calibrate", lambda state: state.folder.map_lines(lambda d: {**d, "calibrated": 1.0})
        )
        run(write(tmp_path / "in.jsonl", rows(4)), tmp_path / "out")
        assert built == [tmp_path / "out"] and columnar.fresh_parquet(tmp_path / "out") is not None
        assert all(r["calibrated"] == 1.0 for _, r in columnar.iter_raw(tmp_path / "out" / PQ))
        return
    folder = tmp_path / "f"
    folder.mkdir()
    log = AppendLog(folder / "scores.jsonl")
    assert log.empty
    log.tap = columnar.StreamCopy()
    d = {"metric": "mrr", "backend": "native", "sample_id": "a", "value": 5.0}
    log.write(json.dumps(d, separators=(",", ":")), obj=d)
    log.write('{"metric":"mrr","backend":"native","sample_id":"b","value":6.0}', flush=False)
    log.close()
    path = folder / "scores.jsonl"
    if change == "append":
        with open(path, "a", encoding="utf-8") as f:
            f.write('{"metric":"mrr","backend":"native","sample_id":"c","value":7.0}\n')
    else:
        text = path.read_text(encoding="utf-8")
        path.write_text(text.replace('"value":5.0', '"value":9.0'), encoding="utf-8")  # the same size
        assert path.stat().st_size == len(text)
    assert log.tap.finish(folder) is None and not (folder / PQ).exists()


def test_a_proven_copy_of_hand_written_blocks_is_the_files(tmp_path):
    """Objects and lines the copy parses itself (no object; a line that is not JSON; an
    empty block) give the copy ``write_parquet`` gives."""
    from unified.run.runfolder import AppendLog

    folder = tmp_path / "f"
    folder.mkdir()
    log = AppendLog(folder / "scores.jsonl")
    log.tap = columnar.StreamCopy()
    for i, d in enumerate(FOREIGN):
        text = json.dumps(d, ensure_ascii=False)
        log.write(text, flush=i % 3 == 0, obj=json.loads(text) if i % 2 else None)
    log.write("not json")
    log.write('{"metric": 3, "backend": "native", "sample_id": "j"}', flush=False)
    log.close()
    meta = log.tap.finish(folder)
    assert meta is not None and meta["unreadable"] == 2 and meta["rows"] == len(FOREIGN)
    streamed = (folder / PQ).read_bytes()
    assert columnar.write_parquet(folder) == meta and (folder / PQ).read_bytes() == streamed


@pytest.mark.parametrize("seed", [1, 2])
def test_random_key_sets_and_orders_read_back_as_each_lines_object(tmp_path, seed):
    """``_Columns`` plans a row's columns once per key set (``_Layout``): lines with random
    subsets of the fields, in random orders, with explicit nulls, wrong types, foreign keys
    and more than one batch still read back as their ``json.loads`` (up to a null for a
    field whose default is null)."""
    import random

    rng = random.Random(seed)
    values = {
        "value": [0.0, 10.0, 5, None, "7", True],
        "raw": [0.25, None, -0.0],
        "threshold": [5.0, None, "x"],
        "passed": [True, False, None, 1],
        "degraded": [True, None],
        "reason": ["ok", "", None, 3, "é"],
        "error": ["boom", None],
        "row": [1, 2**70, None, 1.5],
        "details": [{"k": 5, "hits": ["a"]}, {}, None, [1, 2]],
        "cost": [{"usd": 0.5}, None],
        "raw_range": [[0.0, 1.0], None],
        "zeta": [1, None, {"x": [None]}],
        "alpha": ["foreign"],
    }
    lines = []
    for i in range(9_000):
        d = {"metric": rng.choice(["mrr", "ndcg@3"]), "backend": "native", "sample_id": f"s{i}"}
        fields = rng.sample(sorted(values), rng.randint(0, len(values)))
        d.update((k, rng.choice(values[k])) for k in fields)
        lines.append(json.dumps(d, ensure_ascii=False))
    (tmp_path / "scores.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert columnar.build_parquet(tmp_path) is not None
    got = [d for _, d in columnar.iter_raw(tmp_path / PQ)]
    assert _text(map(full_line, got)) == _text(full_line(json.loads(x)) for x in lines)
    picked = columnar.fetch_raw(tmp_path / PQ, [0, 4_500, 8_999])
    assert [full_line(picked[i]) for i in (0, 4_500, 8_999)] == [
        full_line(json.loads(lines[i])) for i in (0, 4_500, 8_999)
    ]


def test_a_line_nested_past_the_recursion_limit_is_unreadable_not_a_crash(tmp_path):
    """``json.loads`` raises RecursionError, not ValueError, on a hand-written line nested
    100,000 deep: every reader of the folder's lines counts it unreadable (``parse_line``)."""
    from unified.run.runfolder import iter_lines, iter_lines_indexed, rewrite_jsonl

    good = '{"metric":"mrr","backend":"native","sample_id":"a","value":5.0}'
    deep = '{"metric":"mrr","backend":"native","sample_id":"b","details":' + "[" * 100_000 + "]" * 100_000 + "}"
    scores = tmp_path / "scores.jsonl"
    scores.write_text(f"{good}\n{deep}\n", encoding="utf-8")
    meta = columnar.build_parquet(tmp_path)
    assert meta is not None and meta["rows"] == 1 and meta["unreadable"] == 1
    assert [d["sample_id"] for d in iter_lines(scores)] == ["a"]
    assert [d and d["sample_id"] for d in iter_lines_indexed(scores)] == ["a", None]
    assert rewrite_jsonl(scores, lambda _i, d: d is not None) == 1 and scores.read_text() == good + "\n"


@pytest.mark.parametrize("where", ["parquet", "index"])
def test_a_sigterm_after_every_task_was_scored_ends_with_a_complete_folder(tmp_path, capsys, monkeypatch, where):
    """A real SIGTERM while the end of the run writes the folder of a run whose tasks are
    all scored — the run layer's ``scores.parquet`` or the report layer's ``index.json``:
    the files end as a complete run's (summary not interrupted, parquet, index: the same
    command again is a no-op) and the message says the folder is complete — it used to
    say "resume with" over a finished folder, whose summary said interrupted."""
    from unified.run import finish, prepare

    data, out = _first(tmp_path)
    write(data, rows(4) + rows(4, start=4))
    owner, name = (finish, "write_parquet") if where == "parquet" else (prepare.IndexRule, "write")
    real = getattr(owner, name)

    def under_sigterm(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # delivered now, in the main thread
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, under_sigterm)
    capsys.readouterr()
    with pytest.raises(RunInterrupted) as info:
        evaluate(data, METRICS, ["native"], out=out, progress=False)
    monkeypatch.undo()
    assert info.value.complete and info.value.signal == "SIGTERM"
    err = capsys.readouterr().err
    assert f"interrupted by SIGTERM after the run; its folder is complete: {out}" in err and "resume" not in err
    assert json.loads((out / "summary.json").read_text())["interrupted"] is False
    assert columnar.fresh_parquet(out)["rows"] == 16
    assert run(data, out).unchanged  # nothing left to do


def test_a_sigterm_on_the_no_op_path_says_the_folder_is_complete(tmp_path, capsys, monkeypatch):
    from unified.run import runner

    data, out = _first(tmp_path)
    real = runner.finish_unchanged

    def unchanged_under_sigterm(*args):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*args)

    monkeypatch.setattr(runner, "finish_unchanged", unchanged_under_sigterm)
    capsys.readouterr()
    with pytest.raises(RunInterrupted) as info:
        evaluate(data, METRICS, ["native"], out=out, progress=False)
    assert info.value.complete
    err = capsys.readouterr().err
    assert "its folder is complete" in err and "resume" not in err
