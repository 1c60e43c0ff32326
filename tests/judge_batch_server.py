"""The Batch API of the loopback judge server (``JudgeServer(batch=BatchEndpoints(...))``)
— plumbing and fault tests only, never evidence of judgment quality.

Endpoints (the subset of OpenAI's that ``unified.judge.batch`` calls):
``POST /v1/files`` (multipart, purpose ``batch``), ``GET /v1/files/{id}/content``,
``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (list, newest
first), ``POST /v1/batches/{id}/cancel``.

A job is ``in_progress`` for ``delay`` seconds after it was created, then ends as
``outcome``: ``completed`` (every line answered), ``cancelled`` / ``expired`` (the first
``partial`` share of its lines answered, the rest in the error file with code
``batch_cancelled`` / ``batch_expired``, as OpenAI does) or ``failed`` (no line
answered and no output or error file, as a job that fails validation; ``errors`` says why). ``fail_ids(custom_id) -> bool`` sends chosen lines to
the error file with HTTP 500 inside a completed job. ``lose_creates``: that many job
creations make the job but answer 502, as a proxy that lost the answer would.
``results_gone = True``: finished jobs' output and error files answer 404 (deleted, or
past the provider's retention).

``hostile``: what a real server may write into the output file of the next job that
finishes, or is created (one of ``HOSTILE``; the first answered line of that job is the
one hurt, and ``hurt`` records its custom id):

- ``u2028``: every answer line carries raw U+2028, U+2029 and U+0085 inside its strings
  (valid JSON; ``str.splitlines()`` splits on them, a JSONL reader must not);
- ``not_json``: the line cut in the middle (not JSON);
- ``non_object``: the line replaced by a JSON array;
- ``duplicate``: the line written twice, the second time with another answer;
- ``usage_string``: ``usage.prompt_tokens`` is ``"many"``;
- ``response_not_object``: ``response`` is a string;
- ``stuck``: the next job created never leaves ``in_progress`` by itself (a cancel still
  ends it ``cancelled``, its first ``partial`` share answered, as OpenAI does);
- ``stuck_hard``: the same, and a cancel leaves it ``cancelling`` for good.

``cancels`` counts ``POST /v1/batches/{id}/cancel``.

Every answer line is ``JudgeServer.completion(body)``: the same function that answers
``POST /v1/chat/completions``, so a batch run and an online run see the same answers.
Counters: ``submitted[custom_id]`` (how many jobs held it), ``answered[custom_id]``
(how many answers were made for it: paid calls), ``jobs``, ``uploads``, ``polls``.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

OUTCOMES = ("completed", "cancelled", "expired", "failed")
HOSTILE = (
    "u2028",
    "not_json",
    "non_object",
    "duplicate",
    "usage_string",
    "response_not_object",
    "stuck",
    "stuck_hard",
)
#: raw line and paragraph separators (and NEL) that JSON allows inside a string
SEPARATORS = "\u2028\u2029\u0085"


@dataclass
class _Job:
    id: str
    input_file_id: str
    created_at: float
    lines: list[dict]
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0
    metadata: dict = field(default_factory=dict)
    stuck: bool = False  # never leaves in_progress by itself (hostile "stuck")


class BatchEndpoints:
    def __init__(
        self,
        delay: float = 0.0,
        outcome: str = "completed",
        partial: float = 0.5,
        fail_ids: Callable[[str], bool] | None = None,
        lose_creates: int = 0,
    ):
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {outcome!r}")
        self.delay, self.outcome, self.partial, self.fail_ids = delay, outcome, partial, fail_ids
        # the next N ``POST /v1/batches`` make their job, then answer 502 (the answer was lost)
        self.lose_creates = lose_creates
        # True: a finished job's output and error files answer 404 (deleted or past retention)
        self.results_gone = False
        # a hostile output (HOSTILE) for the next job that finishes; ``hurt``: the custom ids it hurt
        self.hostile: str | None = None
        self.hurt: list[str] = []
        self.stuck_hard = False
        self.cancels = 0
        self.result_files: set[str] = set()
        self.files: dict[str, bytes] = {}
        self.jobs: dict[str, _Job] = {}
        self.submitted: Counter[str] = Counter()
        self.answered: Counter[str] = Counter()
        self.uploads = 0
        self.polls = 0
        self.auth_headers: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.server: Any = None

    def install(self, server: Any, app: web.Application) -> None:
        self.server = server
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{id}/content", self._content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches", self._list)
        app.router.add_get("/v1/batches/{id}", self._retrieve)
        app.router.add_post("/v1/batches/{id}/cancel", self._cancel)

    def _new_id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids)}"

    def _seen(self, request: web.Request) -> None:
        with self._lock:
            self.auth_headers.add(request.headers.get("Authorization", ""))

    # ------------------------------------------------------------ files
    async def _upload(self, request: web.Request) -> web.Response:
        self._seen(request)
        form = await request.post()
        part = form.get("file")
        if form.get("purpose") != "batch" or part is None or not hasattr(part, "file"):
            return web.json_response({"error": {"message": "need purpose=batch and a file"}}, status=400)
        data = part.file.read()
        fid = self._new_id("file")
        with self._lock:
            self.files[fid] = data
            self.uploads += 1
        return web.json_response(
            {
                "id": fid,
                "object": "file",
                "bytes": len(data),
                "created_at": int(time.time()),
                "filename": part.filename or "batch.jsonl",
                "purpose": "batch",
                "status": "processed",
            }
        )

    async def _content(self, request: web.Request) -> web.Response:
        self._seen(request)
        fid = request.match_info["id"]
        data = None if self.results_gone and fid in self.result_files else self.files.get(fid)
        if data is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    # ------------------------------------------------------------ jobs
    async def _create(self, request: web.Request) -> web.Response:
        self._seen(request)
        req = await request.json()
        data = self.files.get(req.get("input_file_id", ""))
        if data is None or req.get("endpoint") != "/v1/chat/completions":
            return web.json_response({"error": {"message": "bad input_file_id or endpoint"}}, status=400)
        lines = [json.loads(raw) for raw in data.decode().split("\n") if raw.strip()]
        job = _Job(self._new_id("batch"), req["input_file_id"], time.time(), lines, metadata=req.get("metadata") or {})
        with self._lock:
            if self.hostile in ("stuck", "stuck_hard"):  # the next job only
                job.stuck, self.stuck_hard, self.hostile = True, self.hostile == "stuck_hard", None
            self.jobs[job.id] = job
            self.submitted.update(line["custom_id"] for line in lines)
            lost, self.lose_creates = self.lose_creates > 0, max(0, self.lose_creates - 1)
        if lost:
            return web.json_response({"error": {"message": "bad gateway (loopback)"}}, status=502)
        return web.json_response(self._view(job))

    async def _retrieve(self, request: web.Request) -> web.Response:
        self._seen(request)
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        with self._lock:
            self.polls += 1
        self._advance(job)
        return web.json_response(self._view(job))

    async def _list(self, request: web.Request) -> web.Response:
        self._seen(request)
        data = [self._view(j) for j in sorted(self.jobs.values(), key=lambda j: j.created_at, reverse=True)]
        return web.json_response(
            {
                "object": "list",
                "data": data,
                "has_more": False,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            }
        )

    async def _cancel(self, request: web.Request) -> web.Response:
        self._seen(request)
        job = self.jobs.get(request.match_info["id"])
        if job is None:
            return web.json_response({"error": {"message": "no such batch"}}, status=404)
        with self._lock:
            self.cancels += 1
        if job.status == "in_progress" and not (job.stuck and self.stuck_hard):
            self._finish(job, "cancelled")
        elif job.status == "in_progress":
            job.status = "cancelling"  # and so it stays: a provider that never ends it
        return web.json_response(self._view(job))

    def _advance(self, job: _Job) -> None:
        if job.stuck:
            return
        if job.status == "in_progress" and time.time() - job.created_at >= self.delay:
            self._finish(job, self.outcome)

    def _finish(self, job: _Job, outcome: str) -> None:
        """Answer the lines the outcome allows; write the output and error files."""
        n_ok = {"completed": len(job.lines), "failed": 0}.get(outcome, int(len(job.lines) * self.partial))
        out, err = [], []
        for i, line in enumerate(job.lines if outcome != "failed" else []):
            cid = line["custom_id"]
            if i >= n_ok:
                code = f"batch_{outcome}"
                err.append(
                    {
                        "id": f"req_{i}",
                        "custom_id": cid,
                        "response": None,
                        "error": {"code": code, "message": f"request {outcome}"},
                    }
                )
            elif self.fail_ids is not None and self.fail_ids(cid):
                body = {"error": {"message": "internal error (loopback batch)", "type": "server_error"}}
                err.append(
                    {"id": f"req_{i}", "custom_id": cid, "response": {"status_code": 500, "body": body}, "error": None}
                )
            else:
                with self._lock:
                    self.answered[cid] += 1
                body = self.server.completion(line["body"])
                out.append(
                    {"id": f"req_{i}", "custom_id": cid, "response": {"status_code": 200, "body": body}, "error": None}
                )
        job.completed, job.failed = len(out), len(err)
        if out:
            job.output_file_id = self._new_id("file")
            self.files[job.output_file_id] = self._output(out)
        if err:
            job.error_file_id = self._new_id("file")
            self.files[job.error_file_id] = "".join(json.dumps(r) + "\n" for r in err).encode()
        self.result_files |= {f for f in (job.output_file_id, job.error_file_id) if f}
        job.status = outcome

    def _output(self, out: list[dict]) -> bytes:
        """The output file's bytes: one JSON line per answer, hurt as ``hostile`` says."""
        kind, self.hostile = self.hostile, None  # the next job's output only
        if kind is None:
            return "".join(json.dumps(r) + "\n" for r in out).encode()
        if kind != "u2028":
            self.hurt.append(out[0]["custom_id"])
        lines = [json.dumps(r, ensure_ascii=False) for r in out]
        first = out[0]
        if kind == "u2028":  # raw separators inside strings, on every line: valid JSON
            lines = [
                json.dumps(
                    {
                        **r,
                        "id": r["id"] + SEPARATORS,
                        "response": {
                            **r["response"],
                            "request_id": SEPARATORS,
                            "body": {**r["response"]["body"], "system_fingerprint": f"fp{SEPARATORS}"},
                        },
                    },
                    ensure_ascii=False,
                )
                for r in out
            ]
        elif kind == "not_json":
            lines[0] = lines[0][: len(lines[0]) // 2]
        elif kind == "non_object":
            lines[0] = json.dumps([first["custom_id"], "an array, not an object"])
        elif kind == "duplicate":
            body = first["response"]["body"]
            other = {**body, "choices": [{**body["choices"][0], "message": {"role": "assistant", "content": "{}"}}]}
            lines.append(json.dumps({**first, "response": {**first["response"], "body": other}}))
        elif kind == "usage_string":
            body = first["response"]["body"]
            lines[0] = json.dumps(
                {
                    **first,
                    "response": {
                        **first["response"],
                        "body": {**body, "usage": {**body["usage"], "prompt_tokens": "many"}},
                    },
                }
            )
        elif kind == "response_not_object":
            lines[0] = json.dumps({**first, "response": "an answer went missing here"})
        return "".join(line + "\n" for line in lines).encode("utf-8")

    def _view(self, job: _Job) -> dict:
        done = job.status != "in_progress"
        return {
            "id": job.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "input_file_id": job.input_file_id,
            "completion_window": "24h",
            "created_at": int(job.created_at),
            "status": job.status,
            "output_file_id": job.output_file_id,
            "error_file_id": job.error_file_id,
            "metadata": job.metadata,
            "errors": {"object": "list", "data": [{"code": "model_not_found", "message": "no model 'x' (loopback)"}]}
            if job.status == "failed"
            else None,
            "request_counts": {
                "total": len(job.lines),
                "completed": job.completed if done else 0,
                "failed": job.failed if done else 0,
            },
        }
