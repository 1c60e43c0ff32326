"""Issue 24 item 4: notebooks. Without ipywidgets the progress is plain updating text and
the hint is given at most once; an interrupted run inside a running event loop (how
Jupyter runs a cell) releases its folder before ``RunInterrupted`` reaches the user, whose
message says how far it got and to run the cell again. The interrupt is a real SIGINT."""

from __future__ import annotations

import asyncio
import io
import os
import signal
import threading
import time
import warnings

import pytest

from tests.test_runner import CountingBackend, make_samples
from unified.api import evaluate
from unified.run import progress as progress_mod
from unified.run.interrupts import RunInterrupted
from unified.run.progress import Progress


def test_jupyter_without_ipywidgets_gets_text_progress_and_one_warning(monkeypatch):
    monkeypatch.setattr(progress_mod, "_in_jupyter", lambda: True)
    monkeypatch.setattr(progress_mod, "_widgets_missing", lambda: True)
    monkeypatch.setattr(progress_mod, "_warned_widgets", [])
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):  # three cells, three runs
            p = Progress("auto", {"native": 4}, stream=out, every_s=0.0)
            for _ in range(4):
                p.advance("native", 1)
            p.stop()
    assert len([w for w in caught if "ipywidgets" in str(w.message)]) == 1
    text = out.getvalue()
    assert "progress: 1/4 tasks" in text and "progress: 4/4 tasks" in text
    assert text.count("\n") == 3 and "\r" in text  # one line per run, rewritten in place


class _Slow(CountingBackend):
    async def score(self, sample, metrics):
        if sample.id >= "s00006":
            await asyncio.sleep(10)
        return await super().score(sample, metrics)


def test_an_interrupted_cell_releases_its_folder_and_says_run_the_cell_again(tmp_path):
    out = tmp_path / "run"
    scores = out / "scores.jsonl"

    def interrupt_when_six_scored():
        for _ in range(3000):
            if scores.exists() and len(scores.read_text().splitlines()) >= 6:
                break
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)

    async def cell():  # a kernel runs cells inside its event loop
        threading.Thread(target=interrupt_when_six_scored, daemon=True).start()
        with pytest.raises(RunInterrupted) as caught:
            evaluate(make_samples(20), "mrr", [_Slow()], out=out, quiet=True, concurrency=2)
        again = evaluate(make_samples(20), "mrr", [CountingBackend()], out=out, quiet=True)  # at once
        return caught.value, again

    # run_until_complete, not asyncio.run: like a kernel, it leaves Python's SIGINT handler
    # (KeyboardInterrupt) in place instead of installing asyncio's own
    loop = asyncio.new_event_loop()
    try:
        err, again = loop.run_until_complete(cell())
    finally:
        loop.close()
    assert str(err).startswith("interrupted after 6 of 20 tasks; run the cell again to resume"), str(err)
    assert (err.done, err.total) == (6, 20)
    assert len(again.scores) == 20
