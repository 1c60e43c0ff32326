"""Progress when stderr is not a terminal: a plain line at least every few seconds, so a
CI log shows a run stuck on a judge (issue 10 item 5)."""

from __future__ import annotations

import io
import time

from unified.judge.base import CallRecord, record_call
from unified.run.progress import Progress


class NotATty(io.StringIO):
    def isatty(self) -> bool:
        return False


def test_lines_mode_prints_periodically_even_without_progress():
    out = NotATty()
    p = Progress("auto", {"native": 10}, stream=out, every_s=0.05)
    try:
        assert p.mode == "lines"
        record_call(CallRecord(kind="chat", backend="native", metric="m", sample_id="s", model="x", cached=False))
        p.advance("native", 2, errors=1)
        time.sleep(0.06)
        p.tick()  # nothing finished since: the runner's ticker still reports
        time.sleep(0.06)
        p.tick()
    finally:
        p.stop()
    got = [x for x in out.getvalue().splitlines() if x.startswith("progress:")]
    assert len(got) >= 2  # one per tick at least (a loaded machine may add one at advance)
    assert got[-1].startswith("progress: 2/10 tasks, 1 failed, 1 judge calls")


def test_silent_mode_prints_nothing():
    out = NotATty()
    p = Progress(False, {"native": None}, stream=out, every_s=0.0)
    p.advance("native", 5)
    p.tick()
    p.stop()
    assert out.getvalue() == ""


def test_degraded_values_are_counted_on_the_line():
    out = NotATty()
    p = Progress("auto", {"native": 4}, stream=out, every_s=0.0)
    try:
        p.advance("native", 2, errors=0, degraded=1)  # a value from fewer repeats than asked
        p.line()
    finally:
        p.stop()
    assert out.getvalue().splitlines()[-1].startswith("progress: 2/4 tasks, 0 failed, 1 degraded, 0 judge calls")


def _chat(output_tokens: int, latency: float, batch: bool) -> CallRecord:
    return CallRecord(
        kind="chat",
        backend="native",
        metric="m",
        sample_id="s",
        model="x",
        cached=False,
        output_tokens=output_tokens,
        latency=latency,
        batch=batch,
    )


def test_tokens_of_batch_jobs_are_counted_without_a_speed():
    """A batch call's latency is its job's wait, so it stays out of tok/s; its tokens were
    left out of the count too, and a batch run's line said "0 tokens generated"."""
    out = NotATty()
    p = Progress("auto", {"native": 4}, stream=out, every_s=0.0)
    try:
        p.on_call(_chat(120, 300.0, batch=True))
        p.line()
        p.on_call(_chat(30, 2.0, batch=False))
        p.line()
    finally:
        p.stop()
    first, second = out.getvalue().splitlines()[:2]
    assert "120 tokens generated (all 120 in batch jobs)" in first
    assert "150 tokens generated (15.0 tok/s; 120 of them in batch jobs)" in second
