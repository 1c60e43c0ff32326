"""The per-sample plan: run the metrics requested together, sharing their judge steps.

Everything metric-specific comes from ``table.py``: which steps a metric awaits, which
sections of a fused step it reads, its parameters and what it needs (contexts, a chat
judge, an embedder). The plan checks each metric against its entry (a metric that
cannot run leaves the plan and owns no step), runs each step at most once per
``score()`` call (memoised as an asyncio task) and hands every metric a
``MetricContext`` bound to it, every step a ``StepContext`` (``context.py``).

The plan is canonical: a fused step asks the sections the sample allows (``table.asks``),
never those of the metrics that happen to be requested, so a metric alone, with others,
retried after a fault or added to a folder later is asked the same prompts and gets the
same value.

Cost (``table.bill``): every step runs inside ``task_scope(backend, metric, sample_id)``
of the first requested metric that needs it (its *owner*); the others note
``shared_steps`` in ``details``. An extraction that only a fused step's section awaits
(faithfulness alone: the reference's claims) is owned by the owner of that fused step.
Each Score's ``cost`` is the sum of the steps it owns. Sharing across separate
``score()`` calls happens through the judge cache: extraction prompts depend only on
(question, text).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable, Iterator

from unified.adapters import unknown_param_error
from unified.judge.base import JudgeError, Judges, current_meter, task_scope
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Cost, Score, failure_fields

from .dual import DualResult, StepFailed, ask_dual, ask_one
from .metrics import retrieval
from .prompts import Ask, Variant
from .retrieval import retrieval_fields
from .table import STEPS, NativeMetric, asks, bill, entry_for, sample_error, step_key

BACKEND = "native"


def precheck(entry: NativeMetric | None, ref: MetricRef, sample: Sample, judges: Judges) -> str | None:
    """Why ``ref`` cannot run on ``sample`` natively (one line), or None."""
    if entry is None:
        return f"metric '{ref.name}' is not implemented by the native backend"
    # accepted_params() builds a set; a metric written without parameters has none to check
    bad_param = unknown_param_error(ref, entry.accepted_params()) if ref.params else None
    if bad_param or entry.checks_fields:
        return bad_param
    lacking = sample_error(entry, ref, sample)
    if lacking:
        return lacking
    if entry.needs_chat and judges.chat is None:
        return f"{ref.name} needs an LLM judge: pass --base-url/--model or set UNIFIED_JUDGE_BASE_URL"
    if entry.needs_embedder and judges.embedder is None:
        return f"{ref.name} needs embeddings: pass --embedding local or an embeddings URL"
    return None


_NO_COST = Cost()


def failure_text(ref: MetricRef, e: Exception) -> str:
    """A metric's exception as its task's error: a failed step or an undefined formula
    (ValueError) says its reason, a judge error what the judge did, anything else is
    reported as the bug it is."""
    if isinstance(e, StepFailed):
        return str(e)
    if isinstance(e, JudgeError):
        return f"judge failed: {e}"
    if isinstance(e, ValueError):  # a formula's undefined case, with its reason
        return str(e)
    return f"native {ref.name} crashed: {type(e).__name__}: {e}"


def computed(ref: MetricRef) -> bool:
    """True when ``ref`` is a built-in retrieval formula: no judge, no model, no await, so
    ``compute_fields`` scores it in one plain call (a deterministic run's batch path)."""
    entry = entry_for(ref.spec)
    return entry is not None and entry.fn is retrieval and not ref.spec.custom


def compute_fields(judges: Judges, sample: Sample, refs: list[MetricRef]) -> list[dict[str, Any]]:
    """``SamplePlan(judges, sample, refs, ...).run()`` for metrics that are all
    ``computed``, as the Scores' field dicts (``unified.scores.line_of`` writes them):
    the same precheck, the same formula (``retrieval_fields``, which ``retrieval`` wraps
    into a Score) and the same failure texts (``failure_text``). No cost: a formula
    makes no call."""
    out: list[dict[str, Any]] = []
    for ref in refs:
        err = precheck(entry_for(ref.spec), ref, sample, judges)
        if err is None:
            try:
                out.append(retrieval_fields(sample, ref, BACKEND))
                continue
            except Exception as e:
                err = failure_text(ref, e)
        out.append(failure_fields(ref.name, BACKEND, sample.id, err))
    return out


class SamplePlan:
    """Scores one sample on a list of metrics, sharing judge calls between them. Which
    step each metric pays for is ``table.bill``'s rule; what a fused step asks is
    ``table.asks``'s (the sample's, not the request's)."""

    def __init__(self, judges: Judges, sample: Sample, refs: list[MetricRef], options: dict[str, Any]):
        self.judges = judges
        self.sample = sample
        self.refs = refs
        self.options = options
        self.contexts: list[str] = list(sample.retrieved_contexts or [])
        self.entries = [entry_for(r.spec) for r in refs]
        self.costs: list[Cost] = [Cost() for _ in refs]
        self.results: list[Score | None] = [None] * len(refs)
        self.users: dict[str, list[int]] = {}
        self._tasks: dict[str, asyncio.Future] = {}
        self._outer = current_meter()
        needs: list[list[str] | None] = []
        for i, (ref, entry) in enumerate(zip(refs, self.entries)):
            err = precheck(entry, ref, sample, judges)
            if err is not None:
                self.results[i] = Score.failure(ref.name, BACKEND, sample.id, err)
            needs.append(None if err is not None else self.step_keys(i))
            for key in needs[-1] or ():
                self.users.setdefault(key, []).append(i)
        billed = bill(needs, sample)
        self.owner: dict[str, int] = {key: i for key, (i, _) in billed.items()}
        # a step only a fused step's section awaits -> that fused step (its owner pays)
        self.asked_for: dict[str, str] = {key: by for key, (_, by) in billed.items() if by is not None}

    # ------------------------------------------------------------ orchestration

    async def run(self) -> list[Score]:
        todo = [i for i, r in enumerate(self.results) if r is None]
        # The extractions only a fused step's canonical sections await start now, beside
        # the metrics' own first steps: awaited when the fused step starts, they would add
        # a round trip to every sample (and a job round to a --batch run).
        early = [self._task(key) for key in self.asked_for]
        try:
            done = await self._score_all(todo)
            await asyncio.gather(*early, return_exceptions=True)  # billed before the costs are read
        except BaseException:
            for task in early:
                task.cancel()
            raise
        for i, got in zip(todo, done):
            self.results[i] = got
        out: list[Score] = []
        for i, s in enumerate(self.results):
            assert s is not None
            if self.costs[i] != _NO_COST:
                s = s.model_copy(update={"cost": s.cost.add(self.costs[i])})
            out.append(s)
        return out

    async def _score_all(self, todo: list[int]) -> list[Score]:
        if len(todo) > 1 and not self._all_computed(todo):
            return list(await asyncio.gather(*(self._score_one(i) for i in todo)))
        # nothing to overlap: no task per metric (a 100k-sample retrieval run makes 200k)
        return [await self._score_one(i) for i in todo]

    def _all_computed(self, todo: list[int]) -> bool:
        """True when every metric in ``todo`` is a built-in deterministic one (retrieval
        formulas): computed, never awaited on a judge or a user's function."""
        return all(self.refs[i].spec.kind == "deterministic" and not self.refs[i].spec.custom for i in todo)

    async def _score_one(self, i: int) -> Score:
        ref, entry = self.refs[i], self.entries[i]
        assert entry is not None
        try:
            return await entry.fn(_MetricView(self, i))
        except Exception as e:  # never raise per sample
            return Score.failure(ref.name, BACKEND, self.sample.id, failure_text(ref, e))

    # ------------------------------------------------------------ accounting

    @contextlib.contextmanager
    def charged_to(self, i: int) -> Iterator[None]:
        """Attribute the judge calls made inside to metric ``i`` (its Score's cost), and
        hand the records on to the caller's meter (a runner-level scope, if any)."""
        with task_scope(BACKEND, self.refs[i].name, self.sample.id) as meter:
            try:
                yield
            finally:
                self.costs[i] = self.costs[i].add(meter.cost())
                if self._outer is not meter:
                    self._outer.records.extend(meter.records)

    def option(self, i: int, key: str, default: Any) -> Any:
        return self.refs[i].param(key, self.options.get(key, default))

    def step_keys(self, i: int) -> list[str]:
        """The steps metric ``i`` needs, as the plan names them (options included)."""
        entry = self.entries[i]
        assert entry is not None
        return [step_key(st, lambda k, d: self.option(i, k, d)) for st in entry.steps]

    def shared_note(self, i: int) -> dict[str, Any]:
        """``{step: {"charged_to": metric, "shared_with": [metrics]}}`` for the steps
        metric ``i`` shares with other requested metrics, and ``{step: {"charged_to":
        metric, "asked_for": fused step}}`` for an extraction it paid for only because
        its fused step's canonical prompt awaits it."""
        note: dict[str, Any] = {}
        for key in self.step_keys(i):
            users = self.users.get(key, [])
            if len(users) > 1:
                note[key] = {
                    "charged_to": self.refs[self.owner[key]].name,
                    "shared_with": [self.refs[j].name for j in users if j != i],
                }
        for key, parent in self.asked_for.items():
            if self.owner[key] == i:
                note[key] = {"charged_to": self.refs[i].name, "asked_for": parent}
        return note

    def judges_info(self) -> dict[str, Any]:
        j = self.judges
        if j.single_judge:
            return {"mode": "single", "A": getattr(j.chat, "model", "")}
        return {
            "mode": "dual",
            "A": getattr(j.chat, "model", ""),
            "B": getattr(j.chat2 or j.chat, "model", ""),
            "B_model": "second" if j.chat2 else "same",
        }

    # ------------------------------------------------------------ steps

    def _task(self, key: str) -> asyncio.Future:
        """Step ``key``'s one task on this sample, started on first use."""
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(STEPS[key.split("[")[0]].run(_StepView(self, key)))
        return self._tasks[key]

    async def step(self, key: str) -> Any:
        """Result of step ``key``, computed once per sample (raises StepFailed)."""
        return await self._task(key)

    async def ask_one(self, key: str, ask: Ask) -> Any:
        chat = self.judges.require_chat()
        with self.charged_to(self.owner[key]):
            try:
                return await ask_one(chat, ask)
            except JudgeError as e:
                raise StepFailed(f"{key.replace(':', ' ')} extraction failed: {e}") from None

    async def ask_dual(self, i: int, label: str, build: Callable[[Variant], Ask]) -> DualResult:
        with self.charged_to(i):
            return await ask_dual(self.judges, build, label)

    async def embed(self, i: int, texts: list[str]) -> list[list[float]]:
        embedder = self.judges.require_embedder()
        with self.charged_to(i):
            vecs = await embedder.embed(texts)
        if len(vecs) != len(texts):
            raise JudgeError(f"embedder returned {len(vecs)} vectors for {len(texts)} texts")
        return vecs


class _MetricView:
    """The plan as metric ``i`` sees it (``context.MetricContext``)."""

    def __init__(self, plan: SamplePlan, i: int):
        self._plan, self._i = plan, i

    @property
    def sample(self) -> Sample:
        return self._plan.sample

    @property
    def ref(self) -> MetricRef:
        return self._plan.refs[self._i]

    @property
    def threshold(self) -> float:
        option = self._plan.options.get("threshold")  # NativeBackend.default_bound: the one rule
        return self.ref.bound(None if option is None else float(option))

    def option(self, key: str, default: Any = None) -> Any:
        return self._plan.option(self._i, key, default)

    async def step(self, name: str) -> Any:
        return await self._plan.step(step_key(name, self.option))

    async def embed(self, texts: list[str]) -> list[list[float]]:
        return await self._plan.embed(self._i, texts)

    async def ask_dual(self, label: str, build: Callable[[Variant], Ask]) -> DualResult:
        return await self._plan.ask_dual(self._i, label, build)

    def judges_info(self) -> dict[str, Any]:
        return self._plan.judges_info()

    def shared_steps(self) -> dict[str, Any]:
        return self._plan.shared_note(self._i)


class _StepView:
    """The plan as step ``key`` sees it (``context.StepContext``)."""

    def __init__(self, plan: SamplePlan, key: str):
        self._plan, self._key = plan, key

    @property
    def sample(self) -> Sample:
        return self._plan.sample

    @property
    def contexts(self) -> list[str]:
        return self._plan.contexts

    def asks(self, section: str) -> bool:
        return asks(section, self._plan.sample)

    def option(self, key: str) -> Any:
        default = STEPS[self._key.split("[")[0]].options[key]
        return type(default)(self._plan.option(self._plan.owner[self._key], key, default))

    async def step(self, name: str) -> Any:
        return await self._plan.step(name)

    async def ask_one(self, ask: Ask) -> Any:
        return await self._plan.ask_one(self._key, ask)

    async def ask_dual(self, build: Callable[[Variant], Ask]) -> DualResult:
        return await self._plan.ask_dual(self._plan.owner[self._key], self._key, build)
