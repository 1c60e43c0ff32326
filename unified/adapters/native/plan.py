"""The per-sample plan: run the metrics requested together, sharing their judge steps.

Everything metric-specific comes from ``table.py``: which steps a metric awaits, which
sections of a fused step it asks for, its parameters and what it needs (contexts, a
chat judge, an embedder). The plan checks each metric against its entry (a metric that
cannot run leaves the plan and owns no step), runs each step at most once per
``score()`` call (memoised as an asyncio task) and hands every metric a
``MetricContext`` bound to it, every step a ``StepContext`` (``context.py``).

Cost: every step runs inside ``task_scope(backend, metric, sample_id)`` of the first
requested metric that needs it (its *owner*); the others note ``shared_steps`` in
``details``. Each Score's ``cost`` is the sum of the steps it owns. Sharing across
separate ``score()`` calls happens through the judge cache: extraction prompts depend
only on (question, text).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable, Iterator, Sequence

from unified.adapters import missing_field_error, unknown_param_error
from unified.judge.base import JudgeError, Judges, current_meter, task_scope
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Cost, Score, failure_fields

from .dual import DualResult, StepFailed, ask_dual, ask_one
from .metrics import retrieval
from .prompts import Ask, Variant
from .retrieval import retrieval_fields
from .table import STEPS, NativeMetric, entry_for, step_key

BACKEND = "native"


def precheck(
    entry: NativeMetric | None, ref: MetricRef, sample: Sample, judges: Judges, contexts: list[str]
) -> str | None:
    """Why ``ref`` cannot run on ``sample`` natively (one line), or None."""
    if entry is None:
        return f"metric '{ref.name}' is not implemented by the native backend"
    # accepted_params() builds a set; a metric written without parameters has none to check
    bad_param = unknown_param_error(ref, entry.accepted_params()) if ref.params else None
    if bad_param or entry.checks_fields:
        return bad_param
    missing = missing_field_error(sample, ref)
    if missing:
        return missing
    if entry.needs_contexts and not contexts:
        return f"sample '{sample.id}': no retrieved contexts; {ref.name} needs at least one"
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
    contexts = list(sample.retrieved_contexts or [])
    out: list[dict[str, Any]] = []
    for ref in refs:
        err = precheck(entry_for(ref.spec), ref, sample, judges, contexts)
        if err is None:
            try:
                out.append(retrieval_fields(sample, ref, BACKEND))
                continue
            except Exception as e:
                err = failure_text(ref, e)
        out.append(failure_fields(ref.name, BACKEND, sample.id, err))
    return out


class SamplePlan:
    """Scores one sample on a list of metrics, sharing judge calls between them.

    ``companions``: the sample's other metrics on this backend that an earlier run
    already scored (a retry or a resume scores only what is left). A fused step asks the
    sections of every requested metric, so without them a retried metric would be asked
    another prompt than the first run asked, and its value would depend on which of its
    siblings failed. A companion adds its sections to the fused steps the scored
    metrics use; it gets no Score and owns no step (an extraction only it needs is
    charged to the owner of the fused step that asks for it)."""

    def __init__(
        self,
        judges: Judges,
        sample: Sample,
        refs: list[MetricRef],
        options: dict[str, Any],
        companions: Sequence[MetricRef] = (),
    ):
        self.judges = judges
        self.sample = sample
        self.refs = refs
        self.options = options
        self.contexts: list[str] = list(sample.retrieved_contexts or [])
        self.entries = [entry_for(r.spec) for r in refs]
        self.costs: list[Cost] = [Cost() for _ in refs]
        self.results: list[Score | None] = [None] * len(refs)
        self.owner: dict[str, int] = {}
        self.users: dict[str, list[int]] = {}
        self._tasks: dict[str, asyncio.Future] = {}
        self._outer = current_meter()
        sections: set[str] = set()
        for i, (ref, entry) in enumerate(zip(refs, self.entries)):
            err = precheck(entry, ref, sample, judges, self.contexts)
            if err is not None:
                self.results[i] = Score.failure(ref.name, BACKEND, sample.id, err)
                continue
            assert entry is not None
            sections |= entry.sections
            for key in self.step_keys(i):
                self.owner.setdefault(key, i)
                self.users.setdefault(key, []).append(i)
        self.asked_with: dict[str, list[str]] = {}  # fused step -> companions whose sections it asks
        self.pulled: dict[str, str] = {}  # a step only a companion needs -> the fused step that asked it
        used = {key.split("[")[0] for key in self.owner}
        for ref in companions:
            entry = entry_for(ref.spec)
            if entry is None or precheck(entry, ref, sample, judges, self.contexts) is not None:
                continue  # a metric that cannot run on this sample asks nothing
            for section in entry.sections:
                step = section.split(".")[0]
                if step in used and section not in sections:
                    sections.add(section)
                    self.asked_with.setdefault(step, []).append(ref.name)
        self.sections = frozenset(sections)

    # ------------------------------------------------------------ orchestration

    async def run(self) -> list[Score]:
        todo = [i for i, r in enumerate(self.results) if r is None]
        if len(todo) > 1 and not self._all_computed(todo):
            done = await asyncio.gather(*(self._score_one(i) for i in todo))
        else:  # nothing to overlap: no task per metric (a 100k-sample retrieval run makes 200k)
            done = [await self._score_one(i) for i in todo]
        for i, got in zip(todo, done):
            self.results[i] = got
        out: list[Score] = []
        for i, s in enumerate(self.results):
            assert s is not None
            if self.costs[i] != _NO_COST:
                s = s.model_copy(update={"cost": s.cost.add(self.costs[i])})
            out.append(s)
        return out

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
        metric ``i`` shares with other requested metrics."""
        note: dict[str, Any] = {}
        for key in self.step_keys(i):
            users = self.users.get(key, [])
            if len(users) > 1:
                note[key] = {
                    "charged_to": self.refs[self.owner[key]].name,
                    "shared_with": [self.refs[j].name for j in users if j != i],
                }
            if earlier := self.asked_with.get(key.split("[")[0]):
                note.setdefault(key, {})["asked_with_scored_earlier"] = earlier
        for key, parent in self.pulled.items():  # paid by this metric for its fused call
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

    async def step(self, key: str, asked_by: str | None = None) -> Any:
        """Result of step ``key``, computed once per sample (raises StepFailed);
        ``asked_by``: the step that awaits it, whose owner pays for it when no scored
        metric needs it itself (a companion's extraction)."""
        if key not in self.owner and asked_by is not None:
            self.owner[key] = self.owner[asked_by]
            self.pulled[key] = asked_by
        if key not in self._tasks:
            self._tasks[key] = asyncio.ensure_future(STEPS[key.split("[")[0]].run(_StepView(self, key)))
        return await self._tasks[key]

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

    def wants(self, section: str) -> bool:
        return section in self._plan.sections

    def option(self, key: str) -> Any:
        default = STEPS[self._key.split("[")[0]].options[key]
        return type(default)(self._plan.option(self._plan.owner[self._key], key, default))

    async def step(self, name: str) -> Any:
        return await self._plan.step(name, asked_by=self._key)

    async def ask_one(self, ask: Ask) -> Any:
        return await self._plan.ask_one(self._key, ask)

    async def ask_dual(self, build: Callable[[Variant], Ask]) -> DualResult:
        return await self._plan.ask_dual(self._plan.owner[self._key], self._key, build)
