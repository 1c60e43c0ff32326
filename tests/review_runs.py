"""Run folders and a real `unified-eval review` process for the review tests."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

from report_runs import ODD_IDS, LastRelevant, rows
from support import cli_env

from unified.api import evaluate
from unified.judge.base import Judges

ROOT = Path(__file__).resolve().parents[1]
#: text a page must show as text: markup, a script, an event handler, right-to-left
HOSTILE_ANSWER = '<script>alert("x")</script><img src=x onerror="alert(1)"> & <b>bold</b> </div>'
RTL_QUESTION = "ما هي مدة المزامنة؟ ‮reversed‬ <i>x</i>"
BIG_CONTEXT = ("<p>context ‏שלום</p> " * 60_000)[:1_000_000]  # 1 MB of markup-looking text


def hostile_run(out: Path) -> Path:
    """A judge-free run (native and ``LastRelevant`` on mrr) whose first sample holds
    hostile text (markup and a script in the answer, RTL in the question, a 1 MB context)
    and two of whose ids are awkward (``report_runs.ODD_IDS``)."""
    data = rows(4)
    data[0].update(user_input=RTL_QUESTION, response=HOSTILE_ANSWER)
    data[0]["retrieved_contexts"] = [BIG_CONTEXT, *data[0]["retrieved_contexts"][1:]]
    # a split on q04 (native's first relevant id at rank 1, LastRelevant's last at rank 3)
    # and a sample both fail (q03: nothing relevant), so the queue has an order to keep
    data[3]["relevant_ids"] = list(data[3]["retrieved_ids"])
    data[2]["relevant_ids"] = ["nowhere"]
    for r in data:  # ids a URL must survive: a space, a slash, a hash, a quote, markup
        r["id"] = ODD_IDS.get(r["id"], r["id"])
    out.mkdir(parents=True, exist_ok=True)
    path = out / "data.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    evaluate(path, "mrr", ["native", LastRelevant()], judges=Judges(), out=out / "run", quiet=True)
    return out / "run"


class ReviewServer:
    """`unified-eval review RUN --port 0 --annotator NAME` as a real process; ``url`` is
    the URL it printed (with the token). Stopped with SIGINT, as a person's Ctrl-C."""

    def __init__(self, run_dir: Path, annotator: str, *extra: str) -> None:
        env = cli_env()
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
        code = "from unified.cli import app; app()"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, "review", str(run_dir), "--port", "0", "--annotator", annotator, *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**env, "COLUMNS": "400"},
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]
        try:
            first = lines.get(timeout=60)
        except queue.Empty:
            self.stop()
            raise AssertionError(f"review printed no URL: {self.proc.stderr.read()}") from None  # type: ignore[union-attr]
        self.url = first.split("open ", 1)[1].strip()
        self.base = self.url.split("/?", 1)[0]
        self.token = self.url.split("token=", 1)[1]

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self) -> "ReviewServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
