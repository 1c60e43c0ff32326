"""Million-task folders (issue 25 part 2): short score lines every reader still reads,
old folders still load, and a finished folder proves itself (``index.json``) so the same
command again reads no row and rewrites nothing — and never vouches for a changed input
or a changed ``scores.jsonl``.

Real runs into real folders; the index is checked by what a rerun does (reads, writes,
rescored tasks), not by looking at its fields alone.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
from support import as_read

import unified.data.io as io_module
from unified.api import evaluate
from unified.report import Report
from unified.report.diff import diff_runs
from unified.report.model import FileSource
from unified.scores import Score, full_line, score_line

OLD = Path(__file__).parent / "fixtures" / "run_folder_v0_3"  # written by main at 0.3.0: full lines
METRICS = "precision@3,mrr"


def rows(n: int, start: int = 0) -> list[dict]:
    return [
        {
            "id": f"s{i}",
            "user_input": f"question {i}?",
            "retrieved_ids": ["a", "b", "c"],
            "relevant_ids": ["a"] if i % 2 else ["c"],
        }
        for i in range(start, start + n)
    ]


def write(path: Path, items: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in items))
    return path


def run(data: Path, out: Path, metrics: str = METRICS, **kw):
    return evaluate(data, metrics, ["native"], out=out, quiet=True, progress=False, **kw)


def files(out: Path) -> dict[str, tuple[int, bytes]]:
    """mtime and bytes of everything a run writes except the manifest."""
    names = ("scores.jsonl", "samples.jsonl", "summary.json", "report.html", "index.json")
    return {n: ((out / n).stat().st_mtime_ns, (out / n).read_bytes()) for n in names}


def invocations(out: Path) -> int:
    return len(json.loads((out / "run.json").read_text())["invocations"])


# ---------------------------------------------------------------- short lines


def test_a_deterministic_line_leaves_defaults_out_and_reads_back_whole(tmp_path):
    run(write(tmp_path / "in.jsonl", rows(3)), tmp_path / "out")
    raw = [json.loads(x) for x in (tmp_path / "out" / "scores.jsonl").read_text().splitlines()]
    for d in raw:
        for gone in ("error", "degraded", "cost", "row_error", "calibrated", "input_index", "higher_is_better"):
            assert gone not in d, (gone, d)
        for kept in ("metric", "backend", "sample_id", "value", "raw", "sample_hash", "config_hash", "row"):
            assert kept in d, (kept, d)
    full = [Score.model_validate(d).model_dump_json() for d in raw]
    short = [len(json.dumps(d, separators=(",", ":"))) for d in raw]
    assert sum(short) < 0.7 * sum(len(x) for x in full)  # the full form of the same scores
    df = Report(tmp_path / "out").to_pandas()
    assert {"error", "degraded", "cost_calls", "cost_usd", "row_error", "higher_is_better"} <= set(df.columns)
    assert df["error"].isna().all() and (df["cost_calls"] == 0).all() and df["higher_is_better"].all()


def test_a_failed_line_keeps_value_null_and_its_error():
    s = Score.failure("mrr", "native", "x", "judge down", threshold=5.0)
    d = json.loads(score_line(s))
    assert d["value"] is None and d["error"] == "judge down"
    assert Score.model_validate(full_line(d)) == s


# ---------------------------------------------------------------- old folders


def test_a_folder_written_by_main_still_loads_diffs_and_resumes(tmp_path):
    old = tmp_path / "old"
    shutil.copytree(OLD, old)
    before = {(d["sample_id"], d["metric"]): d for d in map(json.loads, (OLD / "scores.jsonl").open())}
    rep = Report(old)
    got = {(a.metric, a.backend): (a.count, a.scored, a.errors, a.mean) for a in rep.summary()}
    assert got[("precision@3", "native")][:3] == (4, 2, 2)
    assert got[("mrr", "native")] == (4, 2, 2, pytest.approx(7.5))
    assert len(rep.error_groups()) == 2
    # the same input into the old folder: nothing is scored again, every value is kept
    data = tmp_path / "in.jsonl"
    shutil.copy(OLD / "in.jsonl", data)
    again = run(data, old)
    after = {(d["sample_id"], d["metric"]): d for d in map(json.loads, (old / "scores.jsonl").open())}
    # row 4 has an empty question: a row error under 0.3, a sample now (a question is
    # optional); its two tasks are scored once (they fail: it has no retrieved ids) and
    # replace the row-error lines; every other line is kept as it was
    renamed = {("row:4", m): ("q4", m) for m in ("precision@3", "mrr")}
    assert {k: d["value"] for k, d in after.items()} == {renamed.get(k, k): d["value"] for k, d in before.items()}
    assert json.loads((old / "summary.json").read_text())["counts"]["tasks_run"] == 2
    assert [(a.count, a.mean) for a in again.summary()] == [(a.count, a.mean) for a in rep.summary()]
    # a new folder of the same input diffs against the old one: same values, Δ 0
    run(data, tmp_path / "new")
    for r in diff_runs(OLD, tmp_path / "new", n_boot=200):
        assert r["n_paired"] == 2 and r["changed"] == 0 and r["delta"] == pytest.approx(0.0), r


# ---------------------------------------------------------------- the no-op rerun


def test_the_same_command_again_reads_nothing_and_rewrites_nothing(tmp_path, monkeypatch):
    data, out = write(tmp_path / "in.jsonl", rows(6)), tmp_path / "out"
    first = run(data, out)
    means = [(a.metric, a.mean) for a in first.summary()]
    assert (out / "index.json").exists()
    before = files(out)
    with monkeypatch.context() as m:
        m.setattr(io_module, "read_samples", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read")))
        m.setattr(FileSource, "lines", lambda self: (_ for _ in ()).throw(AssertionError("lines read")))
        again = run(data, out)
        assert [(a.metric, a.mean) for a in again.summary()] == means  # from the index: no line read
    assert files(out) == before
    assert invocations(out) == 2


def _first_run(tmp_path: Path, n: int = 4) -> tuple[Path, Path]:
    data, out = write(tmp_path / "in.jsonl", rows(n)), tmp_path / "out"
    run(data, out)
    return data, out


def test_an_input_copied_or_touched_with_the_same_bytes_is_still_a_no_op(tmp_path, monkeypatch):
    data, out = _first_run(tmp_path)
    copy = tmp_path / "copy.jsonl"
    shutil.copy(data, copy)
    os.replace(copy, data)  # same bytes, another inode and ctime: proven by content
    before = files(out)
    monkeypatch.setattr(io_module, "read_samples", lambda *a, **k: (_ for _ in ()).throw(AssertionError("read")))
    run(data, out)
    assert files(out) == before


def test_a_changed_input_is_read_and_only_its_new_row_scored(tmp_path):
    data, out = _first_run(tmp_path)
    write(data, rows(4) + rows(1, start=4))
    run(data, out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["tasks_run"] == 2 and summary["counts"]["tasks_skipped_done"] == 8
    assert sum(1 for _ in (out / "scores.jsonl").open()) == 10


def test_a_hand_edited_score_line_is_not_vouched_for(tmp_path):
    data, out = _first_run(tmp_path)
    lines = (out / "scores.jsonl").read_text().splitlines()
    d = json.loads(lines[0])
    d["value"] = 11  # breaks the 0–10 rule: the next run must score the task again
    lines[0] = json.dumps(d)
    (out / "scores.jsonl").write_text("\n".join(lines) + "\n")
    rep = Report(out)
    assert sum(a.errors for a in rep.summary()) == 1  # the index does not answer for this file
    run(data, out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["tasks_run"] == 1 and summary["n_errors"] == 0
    fixed = [as_read(json.loads(x)) for x in (out / "scores.jsonl").read_text().splitlines()]
    assert all(0 <= x["value"] <= 10 for x in fixed) and len(fixed) == 8


def test_a_summary_from_another_folder_is_not_vouched_for(tmp_path):
    # the no-op path prints summary.json's table and failure groups: a summary copied in
    # from another run printed its numbers beside this folder's gate
    data, out = _first_run(tmp_path)
    (tmp_path / "other").mkdir()
    other = _first_run(tmp_path / "other", n=6)[1]
    shutil.copy(other / "summary.json", out / "summary.json")
    run(data, out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["rows_read"] == 4  # this folder's, rewritten by the normal path
    mtimes = files(out)
    run(data, out)  # and now the index vouches for the summary it wrote
    assert files(out) == mtimes


def test_another_metric_is_not_a_no_op(tmp_path):
    data, out = _first_run(tmp_path)
    run(data, out, metrics=METRICS + ",ndcg@3")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["tasks_run"] == 4 and summary["counts"]["tasks_skipped_done"] == 8


def test_retry_errors_with_failures_on_record_runs_again(tmp_path):
    data, out = tmp_path / "in.jsonl", tmp_path / "out"
    write(data, rows(2) + [{"id": "noref", "user_input": "q?", "retrieved_ids": ["a"]}])
    run(data, out)
    assert json.loads((out / "summary.json").read_text())["n_errors"] == 2
    run(data, out, retry_errors=True)
    assert json.loads((out / "summary.json").read_text())["counts"]["tasks_run"] == 2


def test_no_index_vouches_for_a_folder_while_a_run_writes_it(tmp_path):
    """The normal path removes index.json before it changes the folder: a kill -9 in the
    middle leaves no index behind (checked from inside the scoring)."""
    from unified.adapters.native import NativeBackend

    data, out = _first_run(tmp_path)
    seen: list[bool] = []

    class Watching(NativeBackend):
        async def score(self, sample, metrics):
            seen.append((out / "index.json").exists())
            return await super().score(sample, metrics)

    write(data, rows(4) + rows(2, start=4))
    evaluate(data, METRICS, [Watching(None)], out=out, quiet=True, progress=False)
    assert seen == [False, False]
    assert (out / "index.json").exists()  # written again, last, once the run is whole


def test_an_interrupted_or_cut_run_writes_no_index(tmp_path):
    data = write(tmp_path / "in.jsonl", rows(5))
    run(data, tmp_path / "cut", max_samples=3)
    assert not (tmp_path / "cut" / "index.json").exists()


def test_the_prompt_version_is_part_of_a_judged_pairs_configuration_only():
    """precision@3 does not depend on a prompt's wording: an old folder's retrieval
    scores keep their configuration hash (the test above resumes one)."""
    from unified.adapters.native import NativeBackend
    from unified.judge.base import Judges
    from unified.metrics import parse_metric
    from unified.run.fingerprint import task_config

    nb = NativeBackend(None)
    assert "prompts" not in task_config(nb, parse_metric("precision@3"), Judges())["backend_settings"]
    assert "prompts" in task_config(nb, parse_metric("faithfulness"), Judges())["backend_settings"]


@pytest.mark.parametrize("chunk", [1, 3, 7, 12, 1 << 20])
def test_a_calibrated_value_is_found_across_read_boundaries(tmp_path: Path, chunk: int) -> None:
    """The byte search a megabyte at a time (``runfolder._mentions``) finds the field name
    wherever a read ends, and ``any_calibrated`` still reads the value itself."""
    import io

    from unified.run.runfolder import RunFolder, _mentions

    body = b'{"metric":"m","backend":"b","sample_id":"s","value":1.0,"calibrated":0.4}\n'
    for cut in range(len(body)):
        assert _mentions(io.BytesIO(b"x" * cut + body), b'"calibrated"', chunk)
    assert not _mentions(io.BytesIO(b'{"calibrate":1}' * 5), b'"calibrated"', chunk)
    folder = RunFolder(tmp_path)
    folder.scores.write_bytes(b'{"metric":"m","backend":"b","sample_id":"s","calibrated":null}\n')
    assert not folder.any_calibrated()
    folder.scores.write_bytes(b'{"metric":"m","backend":"b","sample_id":"s","value":1.0}\n' * 3 + body)
    assert folder.any_calibrated()


def test_ctrl_c_while_a_resume_skips_done_samples_stops_the_reading(tmp_path, capsys):
    # a resume that skips done samples awaits nothing, so a Ctrl-C (a cancellation of the
    # run's task) waited for the end of the input: 150k done tasks took 10 s, and a fully
    # done folder was rewritten as complete before the exit
    import asyncio

    from unified.api import aevaluate

    items, out = rows(3000), tmp_path / "run"
    run(items, out)
    read = 0

    def ctrl_c_at_row_500():
        nonlocal read
        for r in items:
            read += 1
            if read == 500:
                asyncio.current_task().cancel()  # what asyncio's SIGINT handler does
            yield r

    async def resume():
        return await aevaluate(ctrl_c_at_row_500(), METRICS, ["native"], out=out, progress=False, show_summary=True)

    capsys.readouterr()
    with pytest.raises((asyncio.CancelledError, KeyboardInterrupt)):
        asyncio.run(resume())
    said = " ".join("".join(capsys.readouterr()).split())
    # a row read is not a row scored when the run is cut: the line says which is which
    assert "rows read 512 = 512 accepted + 0 rejected before the interruption; 0 task(s) scored this time" in said
    assert read <= 500 + 256, f"read {read} rows after the interruption at row 500"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert len((out / "scores.jsonl").read_text().splitlines()) == 6000  # nothing lost, nothing doubled


def test_a_cancellation_caught_before_the_run_does_not_stop_it(tmp_path):
    # a caller that caught an earlier cancellation of its task (without uncancel) leaves
    # the task's cancelling() at 1: only a cancellation during the run stops the reading
    import asyncio

    from unified.api import aevaluate

    async def main():
        try:
            asyncio.current_task().cancel()
            await asyncio.sleep(0)
        except asyncio.CancelledError:
            pass
        assert asyncio.current_task().cancelling() == 1
        return await aevaluate(rows(600), METRICS, ["native"], out=tmp_path / "o", quiet=True, progress=False)

    report = asyncio.run(main())
    assert len(list(report.iter_scores())) == 1200
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["interrupted"] is False


@pytest.mark.parametrize("damage", ["deleted", "cut", "edited"])
def test_a_damaged_samples_file_is_written_again_for_done_samples(tmp_path, capsys, damage):
    """Every reader of a folder's questions (``to_pandas(samples=True)``, ``to_ragas``,
    ``to_deepeval``, the page) reads ``samples.jsonl``. A done sample whose line was lost
    got no line again (its tasks were all done, so nothing was written for it): its
    ``user_input`` read as None and ``to_deepeval`` left it out, without a word. The
    index does not vouch for a changed file, and the normal path writes the lines back."""
    data, out = _first_run(tmp_path)
    path = out / "samples.jsonl"
    kept = path.read_text().splitlines()
    if damage == "deleted":
        path.unlink()
        kept = []
    elif damage == "cut":
        kept = kept[:1]
        path.write_text(kept[0] + "\n")
    else:  # one line's id changed by hand: s1 no longer has a line
        kept = [x.replace('"id":"s1"', '"id":"zz"') for x in kept]
        path.write_text("\n".join(kept) + "\n")
    capsys.readouterr()
    evaluate(data, METRICS, ["native"], out=out, progress=False)
    err = capsys.readouterr().err
    lost = 4 - sum('"id":"s' in x for x in kept)
    assert f"note: {lost} scored sample(s) had no line in" in err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["tasks_run"] == 0  # nothing scored again
    df = Report(out).to_pandas(samples=True)
    assert df["user_input"].notna().all() and len(df) == 8
    assert sorted(r["name"] for r in Report(out).to_deepeval()) == ["s0", "s1", "s2", "s3"]
    mtimes = files(out)
    run(data, out)  # and the index vouches for the mended folder
    assert files(out) == mtimes


def test_a_resume_writes_no_sample_line_twice(tmp_path):
    data, out = _first_run(tmp_path)
    write(data, rows(6))  # two new rows: only their lines are added
    run(data, out)
    ids = [json.loads(x)["id"] for x in (out / "samples.jsonl").read_text().splitlines()]
    assert ids == [f"s{i}" for i in range(6)]


def test_listed_sample_ids_reads_escaped_and_foreign_lines(tmp_path):
    from unified.run.runfolder import listed_sample_ids
    from unified.sample import Sample

    odd = ['a"b', "é\\x", "tab\there", 'q,"id":"x', "plain"]
    lines = [
        Sample(id=i, user_input=f'say ,"id":"fake{n}"', metadata={"id": "meta"}).model_dump_json(exclude_none=True)
        for n, i in enumerate(odd)
    ]
    lines += ['{"id": "hand", "user_input": "q"}', "torn {", "", '{"no": "id"}']
    (tmp_path / "samples.jsonl").write_text("\n".join(lines) + "\n")
    assert listed_sample_ids(tmp_path / "samples.jsonl") == {*odd, "hand"}
    assert listed_sample_ids(tmp_path / "absent.jsonl") == set()


def test_a_table_of_scored_samples_without_their_lines_says_so(tmp_path):
    data, out = _first_run(tmp_path)
    lines = (out / "samples.jsonl").read_text().splitlines()
    (out / "samples.jsonl").write_text("\n".join(lines[1:]) + "\n")  # s0 loses its line
    rep = Report(out)
    for table in (lambda: rep.to_pandas(samples=True), rep.to_ragas, rep.to_deepeval):
        with pytest.warns(UserWarning, match=r"1 scored sample\(s\) \(first: 's0'\) have no line in .*samples.jsonl"):
            table()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rep.to_pandas()  # no sample columns asked: nothing to say


def test_diff_rows_come_in_the_reports_metric_order(tmp_path):
    data = write(tmp_path / "in.jsonl", rows(3))
    for name in ("a", "b"):  # asked mrr first: its lines come first in both files
        run(data, tmp_path / name, metrics="ndcg@3,mrr,precision@3,precision@1")
    got = [r["metric"] for r in diff_runs(tmp_path / "a", tmp_path / "b", n_boot=50)]
    assert got == ["precision@1", "precision@3", "mrr", "ndcg@3"]


def test_retry_errors_keeps_the_failures_of_pairs_it_does_not_score(tmp_path):
    """``--retry-errors`` dropped every failed line of the folder, also those of pairs this
    run did not ask for and so never scored again: their failures vanished, and the folder
    read as if they had never happened."""
    data, out = tmp_path / "in.jsonl", tmp_path / "out"
    write(data, rows(2) + [{"id": "noref", "user_input": "q?", "retrieved_ids": ["a"]}])
    run(data, out, metrics="mrr,ndcg@3")
    failed = lambda: sorted(
        (d["metric"], d["sample_id"])
        for d in map(json.loads, (out / "scores.jsonl").read_text().splitlines())
        if d.get("error")
    )
    assert failed() == [("mrr", "noref"), ("ndcg@3", "noref")]
    run(data, out, metrics="mrr", retry_errors=True)  # retries mrr only
    assert failed() == [("mrr", "noref"), ("ndcg@3", "noref")]  # ndcg@3's failure is kept
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["tasks_run"] == 1  # mrr's one failed task, scored again
