"""The ``embedding`` backend: judge-free heuristics from a local embedding model.

No LLM, no key, no network: every score comes from the packaged all-MiniLM-L6-v2 model
(``unified.judge.minilm``) or from ``judges.embedder`` when one is configured. Meant for
cheap screening at scale, CI without keys, and as a baseline in cross-checks — these are
heuristics, not judgments; ``benchmarks/meta_eval.py`` measures how far they agree with
people.

Texts are cut into sentences by ``unified.text.split_sentences`` (deterministic rules,
documented there). Cost: the metrics of a sample run in the order asked; each embeds, in
one embedder call, only the texts no earlier metric of the sample embedded, inside its own
accounting scope. So every distinct text of a sample is embedded once, each metric is
billed for the texts it was first to need (a metric whose texts are all embedded already
makes no call and costs nothing), and the bills add up to the embedder's calls. For the
five core metrics plus semantic_similarity that is 3 calls per sample instead of one
(faithfulness: response and context sentences; answer_relevancy: the question and the
whole response; context_recall: the reference), about 1.4× the local model's time
(``benchmarks/embedding_billing.py``); values equal one batched call's up to float noise
(MiniLM's padding depends on the batch: |Δ| ≈ 2e-6 on 0–10). The formulas live in
``heuristics.py``:

==================== ====================================================================
faithfulness         the fitted offline judge (``signals``, ``judge``,
                     ``docs/offline-judge.md``): 10 · p · answered share, p = a logistic
                     regression fitted on RAGTruth and ARES over the response's mean
                     idf-weighted unsupported share and unsupported-number share; a bare
                     verdict label ("SUPPORTS") abstains; details list every sentence's signals
                     and unsupported spans, the contributions and a confidence. Pass
                     bound: the fit's (``offline_judge.json``).
  [variant=similarity] the earlier heuristic: mean over response sentences of soft(best
                     cosine to any context sentence, t) · (1 − w · u); a non-answer sentence
                     (``unified.text.is_nonanswer``: "not mentioned", "The context
                     explains ...") counts 0. u: the sentence's lexical unsupported share
                     (``unified.text.unsupported_terms``: its content words, numbers and
                     names found in no context, numbers and names weighing double).
                     Default w = 0, i.e. off (see below); ``[variant=similarity,w=1]`` turns
                     it on. Pass bound 7.
answer_relevancy     max(0, cos(question, response)) · soft(novelty, n) · (1 − share of
                     non-answer sentences); novelty = share of the response's content
                     words absent from the question (an answer that restates the question
                     scores ~0).
context_relevancy    max over contexts of rel_k (the best retrieved context), rel_k = ½·best
                     cosine of the question to a sentence of context k + ½·share of the
                     question's content words (5-letter stems) found in context k.
  [variant=mean]     mean over contexts of soft(rel_k, t) (before issue 24: a retrieval
                     with one relevant context of four scored ~3 and failed).
  [variant=sentence] Embedchain: relevant context sentences / all context sentences, a
                     sentence relevant when cos(question, sentence) ≥ t_sentence.
context_recall       mean over reference sentences of soft(best cosine to a context
                     sentence, t).
context_precision    average precision Σ_k P@k·v_k / Σ_k v_k, v_k = 1 when some sentence of
                     context k reaches cosine ≥ t with some reference sentence.
semantic_similarity  cos(response, reference), clipped to [0, 1].
bertscore            BERTScore F1 (greedy token matching) from MiniLM's layer-6 contextual
                     token embeddings; no idf weighting, no baseline rescaling; P and R
                     in details. Always the local model (token vectors are not available
                     from an embeddings API). Inputs beyond 256 word pieces are truncated.
==================== ====================================================================

soft(s, t) = min(1, max(0, s)/t). Every parameter can be set per metric
(``faithfulness[t=0.8]``; ``threshold=`` sets the pass bound on 0–10).

The pass bounds of answer_relevancy (5.0, n = 0.5) and context_relevancy (4.25) were
re-chosen for issue 24 (a correct short answer, "Paris is the capital of France.", failed
answer_relevancy at n = 1; context_relevancy passed 0 % of the bundled examples): on the
whole ARES set, answer_relevancy at n = 0.5 has AUC 0.83 (0.85 at n = 1, 20 negatives)
and its balanced accuracy peaks at a bound of 5.0 (0.80); the best-context relevance has
AUC 0.69 and a flat balanced-accuracy curve (0.57–0.69 for any bound from 3 to 7.5, 13
negatives), whose local maximum nearest people's relevant share (88 %) is 4.25 (0.63;
passes 93 % of rows). On ``examples/data/rag_examples.jsonl`` this passes every `good`
row on context_relevancy and fails both `irrelevant_contexts` rows. The rest of this
section is the earlier tuning, kept for the ``similarity``/``mean`` variants.

How the defaults (``DEFAULTS``) were chosen — ``benchmarks/meta_eval.py --data
<shared data folder> --tune`` on the ARES human-labelled set (111 Databricks
question/document/answer rows, one annotator), split by the parity of sha256(row id) into
a TUNE half (59 rows) and a TEST half (52): each parameter maximises ROC AUC on the tune
half over a grid (one at a time, in a fixed order), then the pass bound maximises
balanced accuracy on the tune half. AUC tune / held-out test [95 % CI]:

- faithfulness: t = 1.0 (the grid's best: plain mean best-sentence cosine; the
  non-answer rule does the rest), pass bound 7.0. AUC 0.94 / 0.82 [0.61, 0.96].
  (Mean best cosine alone, without the non-answer rule: 0.76 on the whole set.)
  w = 0: on the tune half AUC falls steadily from 0.943 (w = 0) to 0.920 (w = 1), and on
  the held-out half the signal does not help either (Δ AUC −0.01 [−0.05, +0.02] at
  w = 0.5, −0.02 [−0.09, +0.02] at w = 1): ARES's answers are long paraphrases, whose
  own wording is often absent from the document. So the signal is off by default. It is
  kept as a parameter because it catches what the embedding cannot on short factoid
  answers: on ARES's NQ few-shot rows (unseen, n = 7) w = 1 lifts AUC from 0.75 to 0.92
  (Δ +0.17 [0.00, +0.50]), and on Dingo's three hallucination rows it moves both
  hallucinations (a wrong year, an invented continent) below the pass bound (7.6 → 5.3,
  8.3 → 6.1) while the faithful row stays above it (8.9 → 7.3). Tiny n: an indication,
  not a measurement.
- answer_relevancy: n = 1.0 (novelty counts in full), pass bound 4.0.
  AUC 0.87 / 0.80 [0.54, 0.99]. (cos(question, response) alone: 0.29.)
- context_relevancy: t = 0.85, pass bound 7.0. AUC 0.72 / 0.67 [0.38, 0.92]: below the
  0.75 aimed at; every question-only feature tried (best sentence, term coverage, title,
  top-2 mean) lands at 0.60–0.70 on the test half, with only 7 negatives in it.
- context_relevancy[variant=sentence]: t_sentence = 0.65, pass bound 0.5.
  AUC 0.73 / 0.67 [0.47, 0.83].
- context_precision: ARES has no reference answers; its per-context cut t = 0.45 is
  chosen on examples/data/rag_examples.jsonl, where a retrieved context is useful when
  its id is in relevant_ids (89 contexts; AUC 0.96; balanced accuracy 0.87 at 0.45; no
  held-out half — small, fictional data). Pass bound: the registry's.
- context_recall: no labelled data; it reuses faithfulness's t = 1.0 (the same quantity:
  does a sentence of one text find a paraphrase in another), i.e. the mean best cosine of
  the reference's sentences. Pass bound: the registry's.
- semantic_similarity, bertscore: no parameter; the registry's pass bound.

Caveat on the held-out figures: the grid search saw only the tune half, but the SHAPE of
the heuristics (the non-answer pattern list, the novelty factor) was written after
reading the negative rows of the whole ARES set, so the test-half AUCs of faithfulness
and answer_relevancy are optimistic; treat them as "what these rules reach on ARES", not
as a measured generalisation. With 7–12 negatives per half the intervals are wide.

On data these rules were not written for they sit near chance (same script; unseen
sets, never tuned on; AUC [95 % CI], n, negatives): faithfulness 0.44 [0.14, 0.79] over
17 rows (10 negatives) of ARES's NQ and FEVER few-shot rows and Dingo's hallucination
rows; answer_relevancy 0.59 [0.39, 0.79] over 31 (14), of which TruLens's golden set
0.55 [0.27, 0.82], 17 (6); context_relevancy 0.76 [0.56, 0.94] over 29 (11), where the
easy negatives of NQ/FEVER (an unrelated document) are all ranked right but TruLens's
hard negatives (passages on the question's topic that do not answer it) reach only
0.57 [0.25, 0.88], 15 (7). FEVER's "answers" are the verdicts SUPPORTS/REFUTES, which no
similarity heuristic can judge (faithfulness AUC 0.00 on its 7 rows). Embeddings do not
see contradictions or a changed number, and a wrong answer that reuses the context's words
can outrank right ones (NQ: the unfaithful "walkie - talkie and earpiece" scores 6.2, the
faithful "18 January 1788" 4.8 and "May 2010" 1.3).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
from typing import Any, Callable, ClassVar, ContextManager

import numpy as np

from unified.adapters import Backend, missing_field_error, unknown_param_error
from unified.judge import base as judge_base
from unified.judge.base import Embedder, JudgeError, task_scope
from unified.metrics import MetricRef
from unified.sample import Sample
from unified.scores import Cost, Score
from unified.text import Vocabulary, content_words, is_nonanswer, split_sentences, unsupported_terms

from . import DEFAULTS, VARIANTS, own_bound, variant
from . import heuristics as H
from . import judge as J
from . import signals as S

BACKEND = "embedding"

#: parameters that only a variant reads: naming one without that variant is an error
_VARIANT_PARAMS: dict[str, dict[str, str]] = {"faithfulness": {"t": "similarity", "w": "similarity"}}


class EmbeddingBackend(Backend):
    """Judge-free heuristic metrics (see the module docstring for every formula)."""

    name: ClassVar[str] = BACKEND
    metrics: ClassVar[frozenset[str]] = frozenset(DEFAULTS)
    #: the runner asks this: the backend brings its own local model, no judge needed
    uses_judges: ClassVar[bool] = False

    def __init__(self, judges: Any = None, **options: Any):
        super().__init__(judges, **options)
        self._embedder: Embedder | None = None

    def param_error(self, ref: MetricRef) -> str | None:
        """An unknown bracket parameter or a bad variant (one line), or None."""
        if ref.canonical not in DEFAULTS:
            return None
        return unknown_param_error(ref, _accepted(ref)) or _variant_error(ref)

    def fingerprint_extra(self) -> dict[str, Any]:
        """The embedding model decides every score here (the judges' embedder when one
        is configured, else the packaged local model)."""
        model = getattr(self.judges.embedder, "model", None) if self.judges.embedder is not None else None
        return {"embedder": model or "local:all-MiniLM-L6-v2"}

    def fingerprint_for(self, ref: MetricRef) -> dict[str, Any]:
        """What decides ``ref``'s values besides the embedder: the fitted model of the
        offline judge (``offline_judge.json``) for a metric whose default variant uses one.
        A refit of it (a package upgrade) is then another configuration, never values of
        two models under one hash."""
        if variant(ref) == "default" and ref.canonical in J.fitted_models():
            return {"offline_model": J.model_digest(ref.canonical)}
        return {}

    @property
    def embedder(self) -> Embedder:
        if self.judges.embedder is not None:
            return self.judges.embedder
        if self._embedder is None:
            from unified.judge.minilm import LocalEmbedder

            self._embedder = LocalEmbedder()
        return self._embedder

    async def score(self, sample: Sample, metrics: list[MetricRef]) -> list[Score]:
        """One Score per metric, in order. Each metric is billed for the embedding work it
        needed: metrics run in order, each embeds only the texts no earlier metric of this
        sample embedded (at most one embedder call per metric; none when every text is
        already there), so a text shared by several metrics is paid for by the first."""
        vectors = _SampleVectors(self.embedder)
        return [await self._score_one(sample, ref, vectors) for ref in metrics]

    async def _score_one(self, sample: Sample, ref: MetricRef, vectors: "_SampleVectors") -> Score:
        fn = _METRICS.get(ref.canonical)
        problem = (
            f"metric '{ref.canonical}' is not implemented by the embedding backend"
            if fn is None
            else _precheck(sample, ref)
        )
        if problem:
            return Score.failure(ref.name, BACKEND, sample.id, problem, threshold=_threshold(ref))
        assert fn is not None  # a metric with no function is a problem above
        if ref.canonical == "bertscore":  # token vectors from the local model, not the embedder
            t0 = time.perf_counter()
            s = await _guarded(ref, sample, lambda: fn(ref, sample))
            return s.model_copy(update={"cost": Cost(embedding_calls=1, seconds=time.perf_counter() - t0)})
        with _billing_scope(ref.name, sample.id) as meter:
            try:
                await vectors.ensure(texts_for(ref.canonical, sample))
            except _EmbeddingFailed as e:
                s = Score.failure(ref.name, BACKEND, sample.id, str(e), threshold=_threshold(ref))
            else:
                s = await _guarded(ref, sample, lambda: fn(ref, sample, vectors.get))
            # the meter saw exactly the calls made for this metric (zero calls and one
            # cache hit when a cached embedder had every vector; nothing when no text was new)
            return s.model_copy(update={"cost": meter.cost()})


class _EmbeddingFailed(Exception):
    """The embedder could not embed a sample's texts; the message is the Score's error."""


class _SampleVectors:
    """The unit vectors of one sample's texts, embedded on first need.

    ``ensure(texts)`` embeds, in ONE embedder call, the texts not embedded yet for this
    sample (each distinct text once); a metric whose texts are all here makes no call.
    After a failed call every later request for new texts fails with the same error
    without asking the embedder again (a dead server is asked once per sample, not once
    per metric); metrics whose texts were already embedded still score."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder
        self.vectors: dict[str, np.ndarray] = {}
        self.error: str | None = None

    def get(self, text: str) -> np.ndarray:
        return self.vectors[text]

    async def ensure(self, texts: list[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if not todo:
            return
        if self.error is None:
            try:
                got = np.asarray(await self.embedder.embed(todo), dtype=float)
                if got.ndim != 2 or len(got) != len(todo):
                    raise ValueError(f"embedder returned {len(got)} vector(s) for {len(todo)} text(s)")
                # normalise here: an OpenAI-compatible embedder need not return unit vectors
                got = got / np.maximum(np.linalg.norm(got, axis=1, keepdims=True), 1e-12)
                self.vectors.update(zip(todo, got))
                return
            except (JudgeError, RuntimeError, ValueError, OSError) as e:
                self.error = f"embedding failed: {type(e).__name__}: {e}"
        raise _EmbeddingFailed(self.error)


def _billing_scope(metric: str, sample_id: str) -> ContextManager[Any]:
    """The accounting scope of one metric's embedding work: the contract's nested
    ``metric_scope(metric)`` when ``unified.judge.base`` provides it, else a task scope of
    this metric (same effect: the calls made inside land on this metric's meter only)."""
    nested = getattr(judge_base, "metric_scope", None)
    return nested(metric) if nested is not None else task_scope(BACKEND, metric, sample_id)


async def _guarded(ref: MetricRef, sample: Sample, call: Callable[[], Any]) -> Score:
    """``call()``'s Score (awaited when it is a coroutine), or a failure Score: a
    heuristic bug on one sample must not stop the run."""
    try:
        out = call()
        return await out if inspect.isawaitable(out) else out
    except Exception as e:
        return Score.failure(ref.name, BACKEND, sample.id, f"{type(e).__name__}: {e}", threshold=_threshold(ref))


# ---------------------------------------------------------------- per-metric


def _accepted(ref: MetricRef) -> set[str]:
    """Bracket parameters a metric reads: its DEFAULTS (not the per-variant bounds), the
    pass bound, and ``variant`` where the metric has variants."""
    extra = {"variant"} if ref.canonical in VARIANTS else set()
    own = {k for k in DEFAULTS[ref.canonical] if not k.startswith("threshold_")}
    return own | {"threshold"} | extra


def _variant_error(ref: MetricRef) -> str | None:
    """A variant the metric does not have, or a parameter of another variant, or None."""
    variants = VARIANTS.get(ref.canonical, ("default",))
    asked = variant(ref)
    if asked not in variants:
        return f"metric '{ref.name}': variant must be one of {', '.join(variants)}"
    for key, owner in _VARIANT_PARAMS.get(ref.canonical, {}).items():
        if ref.param(key) is not None and asked != owner:
            return f"metric '{ref.name}': parameter '{key}' applies to variant={owner} only"
    return None


def _precheck(sample: Sample, ref: MetricRef) -> str | None:
    """Why ``ref`` cannot run on ``sample`` (a missing field, an unknown parameter, a bad
    variant), or None."""
    return missing_field_error(sample, ref) or unknown_param_error(ref, _accepted(ref)) or _variant_error(ref)


def _param(ref: MetricRef, key: str) -> float:
    return float(ref.param(key, DEFAULTS[ref.canonical].get(key)))


def _threshold(ref: MetricRef) -> float:
    """The task's pass bound: the one rule (``MetricRef.bound``) with this backend's own
    default (``own_bound``)."""
    return ref.bound(own_bound(ref))


def _contexts(sample: Sample) -> list[list[str]]:
    return [split_sentences(c) for c in (sample.retrieved_contexts or [])]


def _sents(text: str | None) -> list[str]:
    # a text with no sentence-like unit (only punctuation) still gets one unit: itself
    return split_sentences(text) or ([text.strip()] if text and text.strip() else [])


def texts_for(metric: str, s: Sample) -> list[str]:
    """The texts whose vectors ``metric`` reads on sample ``s`` (sentences of the
    response, contexts and reference, the question, whole texts), in a fixed order;
    empty for bertscore, which reads token vectors instead."""
    ctx = [x for c in _contexts(s) for x in c]
    if metric == "faithfulness":
        return _sents(s.response) + ctx
    if metric == "answer_relevancy":
        return [s.user_input or "", s.response or ""]
    if metric == "context_relevancy":
        return [s.user_input or ""] + ctx
    if metric in ("context_recall", "context_precision"):
        return _sents(s.reference) + ctx
    if metric == "semantic_similarity":
        return [s.response or "", s.reference or ""]
    return []


def _stack(texts: list[str], vec: Callable[[str], np.ndarray]) -> np.ndarray:
    return np.array([vec(t) for t in texts]) if texts else np.zeros((0, 1))


def _score(ref: MetricRef, sample: Sample, raw: float, reason: str, details: dict[str, Any]) -> Score:
    return Score.from_raw(
        ref.name,
        BACKEND,
        sample.id,
        raw,
        raw_range=(0.0, 1.0),
        threshold=_threshold(ref),
        reason=reason,
        details=details,
    )


def _no_context(ref: MetricRef, sample: Sample) -> Score:
    # a retriever that found nothing: nothing supports the answer, nothing is relevant
    return _score(ref, sample, 0.0, "no retrieved context sentences", {"contexts": 0})


def _faithfulness_similarity(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    """variant=similarity: the mean best-cosine heuristic (module docstring), before the fit."""
    rs = _sents(sample.response)
    cs = [x for c in _contexts(sample) for x in c]
    if not cs:
        return _no_context(ref, sample)
    t, w = _param(ref, "t"), _param(ref, "w")
    non = [is_nonanswer(r) for r in rs]
    vocabulary = Vocabulary(sample.retrieved_contexts or [])
    lexical = [unsupported_terms(r, vocabulary) for r in rs]
    raw, d = H.faithfulness(_stack(rs, vec), _stack(cs, vec), non, t, [u for u, _ in lexical], w)
    per = [
        {
            "sentence": r,
            "best_match": cs[int(i)],
            "cosine": round(float(b), 4),
            "non_answer": n,
            "unsupported_share": round(u, 4),
            "unsupported_terms": terms,
            "support": round(float(sup), 4),
        }
        for r, i, b, n, (u, terms), sup in zip(rs, d["idx"], d["best"], non, lexical, d["support"])
    ]
    # the reason states the soft formula actually scored, not a hard count
    n_non = sum(non)
    lex = f" · (1 − {w} · unsupported share)" if w else ""
    return _score(
        ref,
        sample,
        raw,
        f"mean support {raw:.2f} over {len(rs)} response sentence(s), "
        f"support = min(1, best context cosine / {t}){lex}"
        + (f"; {n_non} non-answer sentence(s) count 0" if n_non else ""),
        {"variant": "similarity", "t": t, "w": w, "sentences": per},
    )


async def _faithfulness(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    """The fitted offline judge (``signals``, ``judge``): value =
    10 · p(faithful | features) · answered share; the sentences' signals and unsupported
    spans, the probability, each feature's contribution and the confidence in details."""
    if variant(ref) == "similarity":
        return _faithfulness_similarity(ref, sample, vec)
    label = S.bare_label(sample.response)
    if label is not None:
        return Score.failure(
            ref.name,
            BACKEND,
            sample.id,
            f"faithfulness abstains: the response {label!r} is a bare verdict label, not a statement the "
            "contexts could support word by word; judge such rows with an LLM backend (native, ragas, deepeval)",
            threshold=_threshold(ref),
            details={"abstained": True},
        )
    rs = _sents(sample.response)
    cs = [x for c in _contexts(sample) for x in c]
    if not cs:
        return _no_context(ref, sample)
    tokens = await asyncio.to_thread(token_embeddings, rs + cs)
    ctx = S.ContextEvidence(sample.retrieved_contexts or [], cs, _stack(cs, vec), np.concatenate(tokens[len(rs) :]))
    with _one_blas_thread():
        signals = [S.sentence_signals(r, vec(r), tok, ctx, is_rare_word) for r, tok in zip(rs, tokens)]
    features = S.response_features(signals)
    verdict = J.load("faithfulness").predict(features)
    raw = verdict.probability * features["answered"]
    flagged = sum(bool(x.unsupported_numbers or x.unsupported_names or x.unsupported_rare or x.denied) for x in signals)
    n_non = sum(x.non_answer for x in signals)
    reason = (
        f"fitted offline judge: p(faithful)={verdict.probability:.2f}"
        + (f" × answered share {features['answered']:.2f}" if n_non else "")
        + f"; {flagged}/{len(rs)} sentence(s) with content not in the contexts"
        + f"; confidence {verdict.confidence:.2f}"
        + (" (signals disagree)" if verdict.signals_disagree else "")
    )
    details = {
        "variant": "fitted",
        **verdict.details(),
        "features": {k: round(v, 4) for k, v in features.items()},
        "sentences": [x.details() for x in signals],
    }
    return _score(ref, sample, raw, reason, details)


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    """threadpoolctl's controller (scikit-learn brings it with sentence-transformers), or
    None when it is not installed."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _one_blas_thread() -> ContextManager[Any]:
    """Run the token-precision products (a few dozen × a few hundred word pieces) on one
    BLAS thread. Why: such a product takes ~0.7 ms on one thread, and on a loaded 2-core
    machine OpenBLAS's second thread turned it into ~45 ms of spinning (measured in
    benchmarks/offline_speed.py: 40 ms per sentence). The limit is process-wide while it
    lasts; the embedding thread uses torch's pool, not BLAS."""
    controller = _blas_controller()
    return controller.limit(limits=1, user_api="blas") if controller is not None else contextlib.nullcontext()


def is_rare_word(word: str) -> bool:
    """True when ``word`` is not one piece of MiniLM's WordPiece vocabulary (~30k frequent
    words and pieces): the tokenizer has to split it, i.e. it is rare in the model's
    training text."""
    return word not in _wordpiece_vocabulary()


@functools.lru_cache(maxsize=1)
def _wordpiece_vocabulary() -> frozenset[str]:
    from unified.judge.minilm import get_sentence_model

    return frozenset(get_sentence_model().tokenizer.get_vocab())


def _answer_relevancy(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    rs = _sents(sample.response)
    aw, qw = content_words(sample.response), content_words(sample.user_input)
    novelty = len(aw - qw) / len(aw) if aw else 0.0
    non = [is_nonanswer(r) for r in rs]
    raw, d = H.answer_relevancy(
        vec(sample.user_input or ""), vec(sample.response or ""), novelty, non, _param(ref, "n")
    )
    d = {k: round(float(v), 4) for k, v in d.items()}
    return _score(
        ref,
        sample,
        raw,
        f"cos(question, response)={d['cosine']}, novelty={d['novelty']}, answered share={d['answered']}",
        d,
    )


def _stem_cover(question: str, context: str) -> float:
    q = {w[:5] for w in content_words(question)}
    c = {w[:5] for w in content_words(context)}
    return len(q & c) / len(q) if q else 0.0


def _context_relevancy(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    ctxs = _contexts(sample)
    q = vec(sample.user_input or "")
    if ref.param("variant", "default") == "sentence":
        flat = [x for c in ctxs for x in c]
        if not flat:
            return _no_context(ref, sample)
        t = _param(ref, "t_sentence") if ref.param("t") is None else float(ref.param("t"))
        raw, d = H.context_relevancy_sentences(q, _stack(flat, vec), t)
        n = int((d["similarity"] >= t).sum())
        return _score(
            ref,
            sample,
            raw,
            f"{n}/{len(flat)} context sentences reach cosine {t} with the question",
            {"t": t, "variant": "sentence", "relevant_sentences": n, "sentences": len(flat)},
        )
    if not any(ctxs):
        return _no_context(ref, sample)
    t = _param(ref, "t")
    cover = [_stem_cover(sample.user_input or "", c) for c in sample.retrieved_contexts or []]
    raw, d = H.context_relevancy(q, [_stack(c, vec) for c in ctxs], cover, t)
    if variant(ref) == "default":
        return _best_context(ref, sample, d["relevance"], cover)
    rel = [round(float(r), 4) for r in d["relevance"]]
    return _score(
        ref,
        sample,
        raw,
        f"mean of min(1, relevance / {t}) = {raw:.2f}; "
        f"{sum(r >= t for r in rel)}/{len(rel)} contexts reach relevance {t}",
        {"t": t, "relevance": rel, "question_term_coverage": [round(c, 4) for c in cover]},
    )


def _best_context(ref: MetricRef, sample: Sample, relevance: np.ndarray, cover: list[float]) -> Score:
    """Default context_relevancy: raw = max_k rel_k, the best retrieved context's relevance
    (a retrieval that found one context answering the question is relevant, however many
    others it returned; ``variant=mean`` averages instead)."""
    rel = [round(float(r), 4) for r in relevance]
    k = int(np.argmax(relevance))
    return _score(
        ref,
        sample,
        float(max(0.0, relevance[k])),
        f"best context #{k + 1} of {len(rel)}: relevance {rel[k]} "
        f"(½·best sentence cosine with the question + ½·question terms covered)",
        {"variant": "default", "relevance": rel, "best": k, "question_term_coverage": [round(c, 4) for c in cover]},
    )


def _context_recall(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    refs = _sents(sample.reference)
    cs = [x for c in _contexts(sample) for x in c]
    if not cs:
        return _no_context(ref, sample)
    t = _param(ref, "t")
    raw, d = H.context_recall(_stack(refs, vec), _stack(cs, vec), t)
    per = [
        {"sentence": r, "best_match": cs[int(i)], "cosine": round(float(b), 4)}
        for r, i, b in zip(refs, d["idx"], d["best"])
    ]
    return _score(
        ref,
        sample,
        raw,
        f"mean coverage {raw:.2f} over {len(refs)} reference sentence(s), coverage = min(1, best context cosine / {t})",
        {"t": t, "sentences": per},
    )


def _context_precision(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    refs = _sents(sample.reference)
    ctxs = _contexts(sample)
    if not any(ctxs):
        return _no_context(ref, sample)
    t = _param(ref, "t")
    raw, d = H.context_precision(_stack(refs, vec), [_stack(c, vec) for c in ctxs], t)
    useful = [bool(u) for u in d["useful"]]
    return _score(
        ref,
        sample,
        raw,
        f"{sum(useful)}/{len(useful)} contexts useful (cosine ≥ {t} with the reference)",
        {"t": t, "useful": useful, "similarity": [round(float(x), 4) for x in d["similarity"]]},
    )


def _semantic_similarity(ref: MetricRef, sample: Sample, vec: Callable[[str], np.ndarray]) -> Score:
    cos = float(vec(sample.response or "") @ vec(sample.reference or ""))
    return _score(
        ref, sample, max(0.0, min(1.0, cos)), f"cos(response, reference)={cos:.4f}", {"cosine": round(cos, 4)}
    )


def token_embeddings(texts: list[str]) -> list[np.ndarray]:
    """L2-normalised contextual token vectors (last layer of MiniLM, i.e. layer 6) of each
    text (float32), without the [CLS] and [SEP] tokens (as BERTScore does); from the local model's
    shared pass and cache (``unified.judge.minilm.encode_both``), so the faithfulness
    sentences embedded by the local embedder are not encoded a second time."""
    from unified.judge.minilm import encode_both

    return [tok for _, tok in encode_both(texts)]


async def _bertscore(ref: MetricRef, sample: Sample) -> Score:
    cand, gold = await asyncio.to_thread(token_embeddings, [sample.response or "", sample.reference or ""])
    f, d = H.bertscore(cand, gold)
    d = {k: round(v, 4) for k, v in d.items()}
    d.update(model="all-MiniLM-L6-v2 layer 6", idf=False, rescaled=False)
    return _score(ref, sample, f, f"BERTScore P={d['precision']} R={d['recall']} F1={d['f1']}", d)


_METRICS: dict[str, Callable[..., Any]] = {
    "faithfulness": _faithfulness,
    "answer_relevancy": _answer_relevancy,
    "context_relevancy": _context_relevancy,
    "context_recall": _context_recall,
    "context_precision": _context_precision,
    "semantic_similarity": _semantic_similarity,
    "bertscore": _bertscore,
}
