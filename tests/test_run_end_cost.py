"""What the end of a run no longer pays for (issue 25 part 2, docs/scale.md): the Report's
repr (asyncio reprs the main task's result), the batch module on an online run, and the
same aggregates summed three or four times. Real runs into real folders; each test fails
on the code before the change, except the refusal test, which guards the batch check's
early return."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from unified.api import evaluate
from unified.report import Report
from unified.report.core import Report as CoreReport

ROOT = Path(__file__).resolve().parents[1]


def _write(path: Path, n: int) -> Path:
    rows = [
        {"id": f"s{i}", "user_input": f"q {i}?", "retrieved_ids": ["a", "b", "c"], "relevant_ids": ["ab"[i % 2]]}
        for i in range(n)
    ]
    rows.append({"id": "no ranking", "user_input": "q?", "relevant_ids": ["a"]})  # a failure line
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_evaluate_never_reprs_the_report_it_returns(tmp_path, monkeypatch):
    # asyncio.run reprs its main task (result included) while it restores the SIGINT
    # handler; a fresh run's Report repr counts every task
    calls: list[int] = []
    real = CoreReport.__repr__
    monkeypatch.setattr(CoreReport, "__repr__", lambda self: calls.append(1) or real(self))
    rep = evaluate(_write(tmp_path / "in.jsonl", 20), "precision@3,mrr", ["native"], out=tmp_path / "o", quiet=True)
    assert calls == []
    assert isinstance(rep, Report) and sum(a.count for a in rep.summary()) == 42
    assert "samples=21" in repr(rep) and calls == [1]  # the repr itself still works when asked


def test_an_online_run_does_not_import_the_batch_module(tmp_path):
    data = _write(tmp_path / "in.jsonl", 5)
    code = (
        "import sys; from unified.api import evaluate; "
        f"evaluate({str(data)!r}, 'precision@3', ['native'], out={str(tmp_path / 'o')!r}, quiet=True); "
        "print('unified.judge.batch' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), check=True)
    assert r.stdout.strip().splitlines()[-1] == "False"


def test_an_unknown_batch_setting_is_still_refused(tmp_path):
    data = _write(tmp_path / "in.jsonl", 2)
    try:
        evaluate(data, "precision@3", ["native"], out=tmp_path / "o", quiet=True, batch={"nope": 1})
    except ValueError as e:
        assert "unknown setting" in str(e)
    else:
        raise AssertionError("an unknown batch setting was accepted")


def test_aggregates_are_summed_once_and_handed_out_as_copies(tmp_path, monkeypatch):
    import unified.report.model as model_module

    out = tmp_path / "o"
    evaluate(_write(tmp_path / "in.jsonl", 30), "precision@3,mrr", ["native"], out=out, quiet=True)
    rep = Report.from_dir(out)
    (out / "index.json").unlink()  # the aggregates come from the model, not the stored index
    sums: list[int] = []

    class Counted(model_module.RunningAggregates):
        def __init__(self) -> None:
            sums.append(1)
            super().__init__()

    monkeypatch.setattr(model_module, "RunningAggregates", Counted)
    first = rep.summary()
    first[0].mean = -1.0  # a caller's change never reaches the next caller
    again, stable = rep.summary(), rep.summary(stable=True)
    assert len(sums) == 1  # both orders sort the same sums
    assert again[0].mean != -1.0 and [a.model_dump() for a in again][1:] == [a.model_dump() for a in first][1:]
    assert [(a.metric, a.count, a.errors) for a in stable] == [("precision@3", 31, 1), ("mrr", 31, 1)]
    model = rep.model()
    model.metrics = list(reversed(model.metrics))  # another order is another sum (same values here)
    assert [a.metric for a in rep.summary(stable=True)] == ["mrr", "precision@3"] and len(sums) == 2
