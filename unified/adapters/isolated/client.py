"""Our side of the worker protocol (``worker.py``'s docstring): one process, many requests.

``WorkerProcess`` starts ``<env>/bin/python -I worker.py``, says hello, waits for
``ready`` (the framework imported, its version known), then sends ``score`` requests as
lines and matches each answer to its request by ``id``. A thread reads the worker's
stdout; the caller awaits a ``concurrent.futures.Future`` (so the worker does not belong
to one event loop: a backend may serve several ``asyncio.run`` calls).

When the worker dies (a crash, ``kill -9``, an import error), every request in flight
fails with one line naming the backend and how the process ended, and the next request
starts a fresh worker: a dead worker costs the tasks it was running, never the run.
``close()`` ends the worker: ``bye``, then SIGTERM after ``grace`` seconds, then SIGKILL —
so a stuck worker cannot outlive a run that is ending (Ctrl-C, SIGTERM, the end).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import IO, Any

from unified.redact import one_line

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
#: the worker's last stderr lines kept for the error of a worker that died
STDERR_TAIL = 5


class WorkerDied(RuntimeError):
    """The worker process ended with requests in flight (or would not start)."""


class WorkerProcess:
    """One worker for one isolated backend (the module docstring)."""

    def __init__(self, label: str, python: Path, hello: dict[str, Any], start_timeout: float = 120.0):
        self.label, self.python, self.hello = label, python, hello
        self.start_timeout = start_timeout
        self._lock = threading.Lock()  # the pending table and the current process
        self._start_lock = threading.Lock()  # one start at a time
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[str] | None = None
        self._pending: dict[int, concurrent.futures.Future[dict[str, Any]]] = {}
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self.ready: dict[str, Any] = {}
        self.starts = 0
        self.start_seconds: float | None = None
        #: why the worker could not start (it died or hung before ``ready``): said again to
        #: every later task instead of starting it again for each
        self.broken: str | None = None

    # ------------------------------------------------------------ start
    def _ensure(self) -> subprocess.Popen[str]:
        """The live process, started (and greeted) if there is none. Holds ``_start_lock``."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self._proc
        if self.broken is not None:
            raise WorkerDied(self.broken)
        started = time.monotonic()
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
        proc = subprocess.Popen(
            [str(self.python), "-I", str(WORKER_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
        )
        ready: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            self._proc = proc
            self._pending[0] = ready
        self.starts += 1
        threading.Thread(target=self._read, args=(proc,), name=f"worker-{self.label}", daemon=True).start()
        threading.Thread(target=self._drain, args=(proc.stderr,), daemon=True).start()
        self._write(proc, {"op": "hello", **self.hello})
        try:
            self.ready = ready.result(self.start_timeout)
        except concurrent.futures.TimeoutError:
            self._kill(proc)
            self.broken = f"{self.label} worker did not start within {self.start_timeout:g} s"
            raise WorkerDied(self.broken) from None
        except WorkerDied as e:  # it died before ``ready`` (the framework would not import)
            self.broken = str(e)
            raise
        self.start_seconds = round(time.monotonic() - started, 2)
        return proc

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    # ------------------------------------------------------------ requests
    async def request(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Send one ``score`` request; the worker's answer (``raw``/``error``)."""
        future = await asyncio.to_thread(self._send, payload)
        return await asyncio.wrap_future(future)

    def _send(self, payload: dict[str, Any]) -> concurrent.futures.Future[dict[str, Any]]:
        with self._start_lock:
            proc = self._ensure()
        future: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()
        with self._lock:
            rid = next(self._ids)
            if self._proc is not proc:  # it died between the start and now
                future.set_exception(WorkerDied(f"{self.label} worker died before the request was sent"))
                return future
            self._pending[rid] = future
            try:
                self._write(proc, {"op": "score", "id": rid, **payload})
            except OSError:  # the pipe closed under us: the reader thread fails the future
                pass
            return future

    @staticmethod
    def _write(proc: subprocess.Popen[str], obj: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(obj) + "\n")
        proc.stdin.flush()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        """Match answers to requests until the worker's stdout closes; then fail the rest."""
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # not ours (the worker keeps stdout for the protocol; belt and braces)
            if msg.get("op") == "fatal":
                self._stderr.append(str(msg.get("error")))
                break
            rid = 0 if msg.get("op") == "ready" else msg.get("id")
            with self._lock:
                future = self._pending.pop(rid, None) if isinstance(rid, int) else None
            if future is not None and not future.done():
                future.set_result(msg)
        code = proc.wait()
        self._fail_pending(proc, code)

    def _drain(self, stream: IO[str] | None) -> None:
        for line in stream or ():
            if line.strip():
                self._stderr.append(line.rstrip())

    def _fail_pending(self, proc: subprocess.Popen[str], code: int) -> None:
        how = f"killed by signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = next((ln for ln in reversed(self._stderr) if ln.strip()), "")
        why = one_line(f"{self.label} worker died ({how})" + (f": {tail}" if tail and code > 0 else ""))
        with self._lock:
            if self._proc is proc:
                self._proc = None
            doomed = list(self._pending.items())
            self._pending.clear()
        for _, future in doomed:
            if not future.done():
                future.set_exception(WorkerDied(why))

    # ------------------------------------------------------------ stop
    def close(self, grace: float = 2.0) -> None:
        """``bye``; SIGTERM after ``grace`` seconds; SIGKILL after as many more."""
        with self._lock:
            proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        try:
            self._write(proc, {"op": "bye"})
            assert proc.stdin is not None
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            self._kill(proc, grace)

    @staticmethod
    def _kill(proc: subprocess.Popen[str], grace: float = 2.0) -> None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
