"""The worker of an isolated backend: one framework version, in an environment of its own.

This file runs with the *isolated* environment's Python (``python -I worker.py``), where
``unified`` is not installed: it imports the standard library and the framework, nothing
else, and is shipped as a plain script in the package (copied into nothing: the parent
passes its path). Installing ``unified`` itself into every isolated environment would pull
our pins (openai, pydantic, numpy …) into environments that exist precisely because their
pins differ; the worker needs only what a user of that framework would write.

The protocol: JSON lines. One object per line on stdin, one per line on stdout (the
process's real stdout is kept for the protocol; ``sys.stdout`` is pointed at stderr, so a
framework's prints and progress bars never corrupt it).

parent -> worker::

    {"op": "hello", "framework": "ragas", "bridge": "http://127.0.0.1:PORT",
     "model": "judge-model", "verdicts": [["StatementFaithfulnessAnswer", "verdict", [0, 1]], ...]}
    {"op": "score", "id": 7, "route": "<token>", "metric": "Faithfulness",
     "fields": {...}, "init": {...}, "params": {...}, "uses": ["llm"], "threshold": 0.5}
    {"op": "bye"}

worker -> parent::

    {"op": "ready", "framework": "ragas", "version": "0.3.9", "python": "3.11.7"}
    {"id": 7, "raw": 0.5, "reason": "...", "details": {...}}     a value (maybe NaN: "raw": null, "nan": true)
    {"id": 7, "error": "ValueError: ..."}                          the framework raised

Judge calls. Every LLM and embedding call the framework makes goes to the parent's
loopback bridge (``unified.judge.bridge``) with the task's route token in
``X-Unified-Route``; the parent's judge layer answers it (cache, retries, breaker, cost).
The worker holds no API key: the frameworks that insist on one get the placeholder
``"unused-by-the-bridge"``. Structured answers are asked with the framework's own answer
model as an OpenAI ``json_schema`` response format (integer verdicts narrowed to the
values its prompts allow, as ``enum``), and validated again by the framework's model.

Requests are served concurrently (one asyncio task each); a blocking framework call runs
in a thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import math
import os
import platform
import sys
import threading
import urllib.error
import urllib.request
from typing import Any

ROUTE_HEADER = "X-Unified-Route"
MAX_THREADS = 64
PLACEHOLDER_KEY = "unused-by-the-bridge"
QUIET = {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "ANONYMIZED_TELEMETRY": "False",  # chromadb, which embedchain imports
    "EC_TELEMETRY": "false",  # embedchain's own anonymous telemetry
}


# ---------------------------------------------------------------- the bridge, over HTTP


class Bridge:
    """POSTs to the parent's loopback bridge with a task's route token (stdlib only)."""

    def __init__(self, base_url: str, model: str, verdicts: list[Any]):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.verdicts = {(c, f): list(v) for c, f, v in verdicts}

    def post(self, path: str, body: dict[str, Any], route: str) -> dict[str, Any]:
        req = urllib.request.Request(
            self.base_url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", ROUTE_HEADER: route},
        )
        try:
            with urllib.request.urlopen(req, timeout=None) as resp:  # the judge layer has the timeouts
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read())["error"]["message"]
            except Exception:
                message = f"HTTP {e.code}"
            raise RuntimeError(f"judge: {message}") from None

    def chat(self, prompt: str, route: str, schema: dict[str, Any] | None = None) -> str:
        body: dict[str, Any] = {"model": self.model, "messages": [{"role": "user", "content": prompt}]}
        if schema is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        return self.post("/chat/completions", body, route)["choices"][0]["message"]["content"]

    def embed(self, texts: list[str], route: str) -> list[list[float]]:
        data = self.post("/embeddings", {"model": self.model, "input": texts}, route)["data"]
        return [d["embedding"] for d in sorted(data, key=lambda d: d["index"])]

    def narrowed(self, schema: dict[str, Any]) -> dict[str, Any]:
        """The answer model's JSON schema with integer verdicts as enums (per model title)."""
        for sub in [schema, *schema.get("$defs", {}).values()]:
            for name, prop in (sub.get("properties") or {}).items():
                allowed = self.verdicts.get((sub.get("title", ""), name))
                if allowed is not None and prop.get("type") == "integer":
                    prop["enum"] = allowed
        return schema


# ---------------------------------------------------------------- the frameworks


class Driver:
    """One framework: its version and one metric evaluation -> (raw, reason, details)."""

    def __init__(self, bridge: Bridge):
        self.bridge = bridge

    def version(self) -> str:
        raise NotImplementedError

    async def score(self, req: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        raise NotImplementedError


def settings(cls: Any, req: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """The constructor keywords for ``cls``: the room's settings (``init``, written for the
    framework's current release) that this release's constructor takes — the others are
    named in ``details["settings_not_taken"]``, e.g. deepeval 3's metrics have no
    ``eval_mode`` (they have only the LLM mode it selects) — then the user's bracket
    parameters (``params``), passed as given so a typo still fails."""
    params = inspect.signature(cls.__init__).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    init = dict(req.get("init") or {})
    dropped = sorted(k for k in init if not open_ended and k not in params)
    if dropped:
        details["settings_not_taken"] = dropped
    return {**{k: v for k, v in init.items() if k not in dropped}, **(req.get("params") or {})}


class RagasDriver(Driver):
    """ragas collections metrics: ``await Metric(llm=…, embeddings=…, **init).ascore(**fields)``
    with ragas's own extension points (``InstructorBaseRagasLLM``, ``BaseRagasEmbedding``)."""

    def __init__(self, bridge: Bridge):
        super().__init__(bridge)
        import ragas
        import ragas.metrics.collections as collections
        from ragas.embeddings.base import BaseRagasEmbedding
        from ragas.llms.base import InstructorBaseRagasLLM

        self.ragas, self.collections = ragas, collections
        self.llm_base, self.emb_base = InstructorBaseRagasLLM, BaseRagasEmbedding

    def version(self) -> str:
        return str(self.ragas.__version__)

    def models(self, route: str, answers: list[dict[str, Any]]) -> tuple[Any, Any]:
        """ragas's LLM and embeddings for one task; the LLM keeps the judge's structured
        answers in ``answers`` (ragas returns no reason: they are what a reader checks)."""
        bridge = self.bridge

        class BridgeLLM(self.llm_base):  # type: ignore[name-defined]
            is_async = True

            def __init__(self) -> None:
                self.model, self.provider = bridge.model, "unified-bridge"

            async def agenerate(self, prompt: str, response_model: Any) -> Any:
                return await asyncio.to_thread(self.generate, prompt, response_model)

            def generate(self, prompt: str, response_model: Any) -> Any:
                schema = bridge.narrowed(response_model.model_json_schema())
                answer = response_model.model_validate_json(bridge.chat(prompt, route, schema))
                answers.append(answer.model_dump(mode="json"))
                return answer

        class BridgeEmbedding(self.emb_base):  # type: ignore[name-defined]
            def __init__(self) -> None:
                try:  # ragas 0.4 takes a cache; 0.3 takes nothing
                    super().__init__(cache=None)
                except TypeError:
                    super().__init__()

            def embed_text(self, text: str, **kwargs: Any) -> list[float]:
                return bridge.embed([text], route)[0]

            async def aembed_text(self, text: str, **kwargs: Any) -> list[float]:
                return await asyncio.to_thread(self.embed_text, text)

            async def aembed_texts(self, texts: list[str], **kwargs: Any) -> list[list[float]]:
                return await asyncio.to_thread(bridge.embed, list(texts), route)

        return BridgeLLM(), BridgeEmbedding()

    async def score(self, req: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        answers: list[dict[str, Any]] = []
        llm, emb = self.models(req["route"], answers)
        cls = getattr(self.collections, req["metric"])
        details: dict[str, Any] = {}
        kwargs = settings(cls, req, details)
        if "llm" in req["uses"]:
            kwargs["llm"] = llm
        if "embeddings" in req["uses"]:
            kwargs["embeddings"] = emb
        result = await cls(**kwargs).ascore(**req["fields"])
        if answers:
            details["verdicts"] = verdict_items(answers)
        return result.value, getattr(result, "reason", None), details


def verdict_items(answers: list[dict[str, Any]], limit: int = 50) -> list[dict[str, Any]]:
    """The judge's answers as the in-process ragas backend keeps them: of each answer, the
    items of its one list of objects (statements with verdicts) when it has one, else the
    answer itself (a rating); at most ``limit``."""
    out: list[dict[str, Any]] = []
    for data in answers:
        lists = [v for v in data.values() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        out.extend(lists[0] if len(lists) == 1 else [data])
    return out[:limit]


class DeepEvalDriver(Driver):
    """deepeval metrics: ``await Metric(model=…, threshold=…, async_mode=True,
    **init).a_measure(LLMTestCase(**fields))`` with a ``DeepEvalBaseLLM`` over the bridge."""

    def __init__(self, bridge: Bridge):
        super().__init__(bridge)
        import deepeval
        import deepeval.metrics as metrics
        import deepeval.test_case as test_case
        from deepeval.models import DeepEvalBaseLLM

        self.deepeval, self.metrics, self.test_case, self.base = deepeval, metrics, test_case, DeepEvalBaseLLM

    def version(self) -> str:
        return str(getattr(self.deepeval, "__version__", "unknown"))

    def model(self, route: str) -> Any:
        bridge = self.bridge

        class BridgeModel(self.base):  # type: ignore[name-defined]
            def __init__(self) -> None:
                super().__init__(model=bridge.model)

            def load_model(self, *args: Any, **kwargs: Any) -> Any:
                return self

            def get_model_name(self, *args: Any, **kwargs: Any) -> str:
                return f"unified-bridge:{bridge.model}"

            def generate(self, prompt: str, schema: Any = None, **kwargs: Any) -> Any:
                try:
                    if schema is None:
                        return bridge.chat(str(prompt), route)
                    text = bridge.chat(str(prompt), route, bridge.narrowed(schema.model_json_schema()))
                    return schema.model_validate_json(text)
                except TypeError as e:  # deepeval retries a TypeError without the schema
                    raise RuntimeError(f"judge call failed: TypeError: {e}") from e

            async def a_generate(self, prompt: str, schema: Any = None, **kwargs: Any) -> Any:
                return await asyncio.to_thread(self.generate, prompt, schema)

        return BridgeModel()

    async def score(self, req: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        cls = getattr(self.metrics, req["metric"])
        details: dict[str, Any] = {}
        init = settings(cls, req, details)
        if "evaluation_params" in init:
            params = getattr(self.test_case, "SingleTurnParams", None) or self.test_case.LLMTestCaseParams
            init["evaluation_params"] = [params[p] for p in init["evaluation_params"]]
        metric = cls(model=self.model(req["route"]), threshold=req.get("threshold", 0.5), async_mode=True, **init)
        raw = await metric.a_measure(self.test_case.LLMTestCase(**req["fields"]), _show_indicator=False)
        details["deepeval_success"] = getattr(metric, "success", None)
        if getattr(metric, "error", None):
            details["deepeval_error"] = str(metric.error)
        return raw, getattr(metric, "reason", None), details


class EmbedchainDriver(Driver):
    """embedchain's evaluation metrics, one row at a time: ``metric._compute_score(EvalData)``.

    embedchain's public ``evaluate(dataset)`` logs and drops a row that raised and returns
    the mean of the rest (0.0 when none is left), so a failed row would silently count as
    the others' mean; its per-row method is the one that says what happened. Its metrics
    build ``openai.OpenAI(api_key=…)`` in ``__init__``; the client is replaced by one with
    the bridge as ``base_url`` and the task's route header (the framework's own client,
    only pointed elsewhere)."""

    def __init__(self, bridge: Bridge):
        super().__init__(bridge)
        import embedchain
        import embedchain.evaluation.metrics as metrics
        import openai
        from embedchain.utils.evaluation import EvalData

        self.embedchain, self.metrics, self.openai, self.EvalData = embedchain, metrics, openai, EvalData

    def version(self) -> str:
        from importlib.metadata import version

        return version("embedchain")

    def _run(self, req: dict[str, Any]) -> float:
        cls = getattr(self.metrics, req["metric"])
        config_cls = {
            "ContextRelevance": "ContextRelevanceConfig",
            "AnswerRelevance": "AnswerRelevanceConfig",
            "Groundedness": "GroundednessConfig",
        }[req["metric"]]
        import embedchain.config.evaluation.base as configs

        config = getattr(configs, config_cls)(api_key=PLACEHOLDER_KEY, model=self.bridge.model)
        metric = cls(config=config)
        client = self.openai.OpenAI(
            api_key=PLACEHOLDER_KEY,
            base_url=self.bridge.base_url,
            default_headers={ROUTE_HEADER: req["route"]},
            max_retries=0,  # the judge layer has retried already
        )
        metric.client = client  # AnswerRelevance embeds through it too (``client.embeddings``)
        return metric._compute_score(self.EvalData(**req["fields"]))

    async def score(self, req: dict[str, Any]) -> tuple[Any, Any, dict[str, Any]]:
        return await asyncio.to_thread(self._run, req), None, {}


DRIVERS: dict[str, type[Driver]] = {"ragas": RagasDriver, "deepeval": DeepEvalDriver, "embedchain": EmbedchainDriver}


# ---------------------------------------------------------------- the loop


def _number(raw: Any) -> dict[str, Any]:
    """The raw value as JSON: a finite number, or null with what it was (NaN, text …)."""
    try:
        value = None if isinstance(raw, (str, bool)) else float(raw)
    except (TypeError, ValueError):
        value = None
    if value is not None and math.isfinite(value):
        return {"raw": value}
    return {"raw": None, "returned": repr(raw) if value is None else repr(value)}  # "nan", not "np.float64(nan)"


class Worker:
    def __init__(self, out: Any):
        self.out = out
        self.lock = threading.Lock()
        self.driver: Driver | None = None

    def send(self, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, default=str) + "\n"
        with self.lock:
            self.out.write(line)
            self.out.flush()

    def hello(self, msg: dict[str, Any]) -> None:
        bridge = Bridge(msg["bridge"], msg.get("model") or "unified-judge", msg.get("verdicts") or [])
        self.driver = DRIVERS[msg["framework"]](bridge)
        self.send(
            {
                "op": "ready",
                "framework": msg["framework"],
                "version": self.driver.version(),
                "python": platform.python_version(),
            }
        )

    async def score(self, msg: dict[str, Any]) -> None:
        assert self.driver is not None
        try:
            raw, reason, details = await self.driver.score(msg)
        except Exception as e:  # the framework's own message is the task's error
            self.send({"id": msg["id"], "error": f"{type(e).__name__}: {e}"})
            return
        self.send(
            {"id": msg["id"], **_number(raw), "reason": reason if isinstance(reason, str) else None, "details": details}
        )


async def serve(worker: Worker) -> None:
    loop = asyncio.get_running_loop()
    # every judge call blocks a thread until the bridge answers: the default pool (cores + 4
    # threads) would cap the tasks in flight far below the parent's concurrency
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(max_workers=MAX_THREADS))
    lines: asyncio.Queue[str] = asyncio.Queue()
    stdin = sys.stdin

    def read() -> None:
        for line in stdin:
            loop.call_soon_threadsafe(lines.put_nowait, line)
        loop.call_soon_threadsafe(lines.put_nowait, "")

    threading.Thread(target=read, daemon=True).start()
    tasks: set[asyncio.Task[None]] = set()
    while (line := await lines.get()) != "":
        msg = json.loads(line)
        if msg.get("op") == "hello":
            worker.hello(msg)
        elif msg.get("op") == "score":
            task = asyncio.create_task(worker.score(msg))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        elif msg.get("op") == "bye":
            break
    if tasks:
        await asyncio.gather(*tasks)


def main() -> None:
    os.environ.update(QUIET)
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        del os.environ[key]  # never the user's key, even if the parent's environment had one
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # frameworks print and draw progress bars: onto stderr
    sys.stdout = sys.stderr
    try:
        asyncio.run(serve(Worker(out)))
    except Exception as e:  # the start failed (the framework would not import): one line
        out.write(json.dumps({"op": "fatal", "error": f"{type(e).__name__}: {e}"}) + "\n")
        out.flush()
        sys.exit(1)


if __name__ == "__main__":
    main()
