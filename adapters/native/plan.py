"""The per-sample plan of judge calls for the set of metrics requested together.

Steps (each run at most once per ``score()`` call, memoised as an asyncio task):

====================  =====================================  ===========================
step                  calls                                  used by
====================  =====================================  ===========================
claims:response       1 (not dualled)                        faithfulness, hallucination,
                                                             answer_correctness
claims:reference      1 (not dualled)                        context_recall,
                                                             context_correctness,
                                                             answer_correctness
verify                1 per judge: response claims' support  faithfulness, hallucination,
                      AND reference claims' attribution      context_recall,
                      against all contexts                   context_correctness
contexts              1 per judge: relevance 0/1/2 AND       context_relevancy,
                      usefulness yes/no of every context     context_precision
questions             1 per judge (two prompts)              answer_relevancy
compare               1 per judge                            answer_correctness
sufficiency           1 per judge                            context_sufficiency
groundedness          1 per judge                            response_groundedness
====================  =====================================  ===========================

Five core metrics (faithfulness, answer_relevancy, context_relevancy, context_recall,
context_precision): 1 + 1 + 2 + 2 + 2 = 8 chat calls dual, 5 single, for any K, plus one
embedding call. A fused step asks only the sections its requested metrics need, so a
metric alone gets its own smaller prompt. Sharing across separate ``score()`` calls
happens through the judge cache: extraction prompts depend only on (question, text).

Cost: every step runs inside ``task_scope(backend, metric, sample_id)`` of the first
requested metric that needs it (its *owner*); the others note ``shared_steps`` in
``details``. Each Score's ``cost`` is the sum of the steps it owns.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from typing import Any, Iterable, Iterator

from unified.adapters import missing_field_error, unknown_param_error
from unified.judge.base import JudgeError, Judges, current_meter, task_scope
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Cost, Score

from . import metrics as M
from .dual import DualResult, StepFailed, ask_dual, ask_one
from .prompts import claims as claims_prompts
from .prompts import contexts as contexts_prompts
from .prompts import grounding as grounding_prompts
from .prompts import relevancy as relevancy_prompts

BACKEND = "native"

# metric -> steps it needs, in the order it needs them
NEEDS: dict[str, tuple[str, ...]] = {
    "faithfulness": ("claims:response", "verify"),
    "hallucination": ("claims:response", "verify"),
    "context_recall": ("claims:reference", "verify"),
    "context_correctness": ("claims:reference", "verify"),
    "answer_correctness": ("claims:response", "claims:reference", "compare"),
    "context_relevancy": ("contexts",),
    "context_precision": ("contexts",),
    "answer_relevancy": ("questions",),
    "context_sufficiency": ("sufficiency",),
    "response_groundedness": ("groundedness",),
}
LLM_METRICS = frozenset(NEEDS)
EMBEDDING_METRICS = frozenset({"semantic_similarity"})
RETRIEVAL_METRICS = frozenset({"precision_at_k", "recall_at_k", "mrr", "ndcg_at_k", "hit_rate_at_k"})
CONTEXT_METRICS = frozenset({"faithfulness", "hallucination", "context_recall", "context_correctness",
                             "context_relevancy", "context_precision", "context_sufficiency",
                             "response_groundedness"})
# bracket parameters each metric reads besides ``threshold`` (the pass bound on 0–10)
_PARAMS = {"context_relevancy": ("relevance_threshold",), "answer_relevancy": ("strictness",)}
_VERIFY_RESPONSE = frozenset({"faithfulness", "hallucination"})
_VERIFY_REFERENCE = frozenset({"context_recall", "context_correctness"})


def planned_chat_calls(canonicals: Iterable[str], single_judge: bool = False) -> int:
    """Chat calls one sample costs for these metrics requested together: each step once,
    extraction steps 1 call, judged steps 1 per judge (the table in the module docstring).
    What ``--dry-run`` reports for native, where the per-metric figures would overcount
    the shared steps."""
    steps = {st for name in canonicals for st in NEEDS.get(name, ())}
    per_judged = 1 if single_judge else 2
    return sum(1 if st.startswith("claims:") else per_judged for st in steps)


class SamplePlan:
    """Scores one sample on a list of metrics, sharing judge calls between them."""

    def __init__(self, judges: Judges, sample: Sample, refs: list[MetricRef], options: dict[str, Any]):
        self.judges = judges
        self.sample = sample
        self.refs = refs
        self.options = options
        self.contexts: list[str] = list(sample.retrieved_contexts or [])
        self.costs: list[Cost] = [Cost() for _ in refs]
        self.results: list[Score | None] = [None] * len(refs)
        self.owner: dict[str, int] = {}
        self.users: dict[str, list[int]] = {}
        self._tasks: dict[str, asyncio.Future] = {}
        self._outer = current_meter()
        # precheck: metrics that cannot run leave the plan (and own no step)
        for i, ref in enumerate(refs):
            err = self._precheck(ref)
            if err is not None:
                self.results[i] = Score.failure(ref.name, BACKEND, sample.id, err)
                continue
            for step in self.steps_of(ref):
                self.owner.setdefault(step, i)
                self.users.setdefault(step, []).append(i)
        planned = {refs[i].canonical for ids in self.users.values() for i in ids}
        self.verify_response = bool(planned & _VERIFY_RESPONSE)
        self.verify_reference = bool(planned & _VERIFY_REFERENCE)
        self.ask_relevance = "context_relevancy" in planned
        self.ask_usefulness = "context_precision" in planned

    # ------------------------------------------------------------ orchestration

    def _precheck(self, ref: MetricRef) -> str | None:
        name = ref.canonical
        bad_param = unknown_param_error(ref, {"threshold", *_PARAMS.get(name, ())})
        if bad_param:
            return bad_param
        if name in RETRIEVAL_METRICS or (ref.spec.custom and ref.spec.fn is not None):
            return None
        missing = missing_field_error(self.sample, ref)
        if missing:
            return missing
        if name in CONTEXT_METRICS and not self.contexts:
            return f"sample '{self.sample.id}': no retrieved contexts; {ref.name} needs at least one"
        if (name in LLM_METRICS or ref.spec.rubric is not None) and self.judges.chat is None:
            return f"{ref.name} needs an LLM judge: pass --base-url/--model or set UNIFIED_JUDGE_BASE_URL"
        if name in EMBEDDING_METRICS | {"answer_relevancy"} and self.judges.embedder is None:
            return f"{ref.name} needs embeddings: pass --embedding local or an embeddings URL"
        if name not in LLM_METRICS | EMBEDDING_METRICS and not ref.spec.custom:
            return f"metric '{ref.name}' is not implemented by the native backend"
        return None

    async def run(self) -> list[Score]:
        todo = [i for i, r in enumerate(self.results) if r is None]
        done = await asyncio.gather(*(self._score_one(i) for i in todo))
        for i, s in zip(todo, done):
            self.results[i] = s
        out: list[Score] = []
        for i, s in enumerate(self.results):
            assert s is not None
            if self.costs[i] != Cost():
                s = s.model_copy(update={"cost": s.cost.add(self.costs[i])})
            out.append(s)
        return out

    async def _score_one(self, i: int) -> Score:
        ref = self.refs[i]
        try:
            return await self._dispatch(i, ref)
        except StepFailed as e:
            return Score.failure(ref.name, BACKEND, self.sample.id, str(e))
        except JudgeError as e:
            return Score.failure(ref.name, BACKEND, self.sample.id, f"judge failed: {e}")
        except ValueError as e:  # a formula's undefined case, with its reason
            return Score.failure(ref.name, BACKEND, self.sample.id, str(e))
        except Exception as e:  # never raise per sample: report the bug as this task's error
            return Score.failure(ref.name, BACKEND, self.sample.id,
                                 f"native {ref.name} crashed: {type(e).__name__}: {e}")

    async def _dispatch(self, i: int, ref: MetricRef) -> Score:
        name = ref.canonical
        if name in RETRIEVAL_METRICS:
            from .retrieval import score_retrieval  # written by another module owner; lazy
            return score_retrieval(self.sample, ref, backend=BACKEND)
        if ref.spec.custom and ref.spec.fn is not None:
            return await M.custom_function(self, i, ref)
        if ref.spec.rubric is not None:
            return await M.custom_rubric(self, i, ref)
        fn = getattr(M, name)
        return await fn(self, i, ref)

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

    def steps_of(self, ref: MetricRef) -> tuple[str, ...]:
        """The steps ``ref`` needs. Question generation depends on ``strictness``, so
        answer_relevancy refs with different strictness get separate steps."""
        return tuple(self.questions_step(ref) if st == "questions" else st
                     for st in NEEDS.get(ref.canonical, ()))

    def questions_step(self, ref: MetricRef) -> str:
        n = int(self.option(ref, "strictness", 3))
        return "questions" if n == 3 else f"questions[strictness={n}]"

    def shared_note(self, i: int) -> dict[str, Any]:
        """``{step: {"charged_to": metric, "shared_with": [metrics]}}`` for the steps
        metric ``i`` shares with other requested metrics."""
        note = {}
        for step in self.steps_of(self.refs[i]):
            users = self.users.get(step, [])
            if len(users) > 1:
                note[step] = {"charged_to": self.refs[self.owner[step]].name,
                              "shared_with": [self.refs[j].name for j in users if j != i]}
        return note

    def option(self, ref: MetricRef, key: str, default: Any) -> Any:
        return ref.param(key, self.options.get(key, default))

    # ------------------------------------------------------------ steps

    async def step(self, name: str) -> Any:
        """Result of step ``name``, computed once per sample (raises StepFailed)."""
        if name not in self._tasks:
            self._tasks[name] = asyncio.ensure_future(self._run_step(name))
        return await self._tasks[name]

    async def _run_step(self, name: str) -> Any:
        s = self.sample
        if name == "claims:response":
            return await self._extract(name, s.response or "")
        if name == "claims:reference":
            return await self._extract(name, s.reference or "")
        if name == "verify":
            resp = await self._claims_or_empty("claims:response") if self.verify_response else []
            refc = await self._claims_or_empty("claims:reference") if self.verify_reference else []
            if not resp and not refc:
                return None  # nothing to verify: no call
            return await self._dual(name, lambda v: claims_prompts.verification(v, self.contexts, resp, refc))
        if name == "contexts":
            use = self.ask_usefulness and s.has("reference")
            return await self._dual(name, lambda v: contexts_prompts.context_judgement(
                v, s.user_input, self.contexts, s.reference, relevance=self.ask_relevance, usefulness=use))
        if name == "compare":
            resp = await self.step("claims:response")
            refc = await self.step("claims:reference")
            if not resp or not refc:
                return None  # F1 is decided without a judge (see metrics.answer_correctness)
            return await self._dual(name, lambda v: claims_prompts.comparison(v, s.user_input, resp, refc))
        if name.startswith("questions"):
            i = self.owner[name]
            n = int(self.option(self.refs[i], "strictness", 3))  # the same for every user
            return await self._dual(name, lambda v: relevancy_prompts.question_generation(v, s.response or "", n))
        if name == "sufficiency":
            return await self._dual(name, lambda v: grounding_prompts.sufficiency(
                v, s.user_input, self.contexts, s.reference or ""))
        if name == "groundedness":
            return await self._dual(name, lambda v: grounding_prompts.groundedness(
                v, s.response or "", self.contexts))
        raise KeyError(f"unknown plan step {name!r}")

    async def _claims_or_empty(self, step: str) -> list[str]:
        # a failed extraction fails the metrics that need those claims (they await the
        # same step); the fused call still serves the other section
        try:
            return await self.step(step)
        except StepFailed:
            return []

    async def _extract(self, step: str, text: str) -> list[str]:
        chat = self.judges.require_chat()
        with self.charged_to(self.owner[step]):
            try:
                return await ask_one(chat, claims_prompts.extraction(self.sample.user_input, text))
            except JudgeError as e:
                raise StepFailed(f"{step.replace(':', ' ')} extraction failed: {e}") from None

    async def _dual(self, step: str, build: Any) -> DualResult:
        with self.charged_to(self.owner[step]):
            return await ask_dual(self.judges, build, step)

    async def dual_for(self, i: int, label: str, build: Any) -> DualResult:
        """A dual judgment private to metric ``i`` (custom rubrics)."""
        with self.charged_to(i):
            return await ask_dual(self.judges, build, label)

    async def embed(self, i: int, texts: list[str]) -> list[list[float]]:
        embedder = self.judges.require_embedder()
        with self.charged_to(i):
            vecs = await embedder.embed(texts)
        if len(vecs) != len(texts):
            raise JudgeError(f"embedder returned {len(vecs)} vectors for {len(texts)} texts")
        return vecs

    async def call_custom(self, fn: Any) -> Any:
        out = fn(self.sample)
        if inspect.isawaitable(out):
            out = await out
        return out
