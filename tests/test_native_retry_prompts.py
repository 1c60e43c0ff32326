"""A native value never depends on the run's fault history.

The native backend asks one verification call for faithfulness and context_recall (and
one contexts call for context_relevancy and context_precision). Asked without a section,
the call is another prompt, and a judge answers another prompt otherwise: the loopback
server seeds its synthesised answer with the request's text, as any judge's answer
depends on its prompt. So a retried metric must be asked as a clean run asks it: the
fused calls ask what the sample allows, whichever metrics are scored (the canonical
plan). Plumbing only: the answers are synthesised, never evidence of judgment quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from judge_server import JudgeServer

from unified.adapters.native import NativeBackend
from unified.api import evaluate
from unified.data.io import read_samples
from unified.judge import JudgeConfig, build_judges
from unified.metrics import parse_metrics

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"
KEY = "sk-loopback-retry-prompts"


FUSED = "faithfulness,context_recall,context_relevancy,context_precision"


def _run(srv, out, cache, metrics=FUSED, **kw):
    return evaluate(
        str(DATA),
        metrics,
        ["native"],
        judge=JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0),
        out=out,
        cache=cache,
        progress=False,
        quiet=True,
        **kw,
    )


def _values(report):
    return {(s.sample_id, s.metric): (s.value, s.error) for s in report.iter_scores()}


@pytest.mark.parametrize("seed, metrics", [(3, FUSED), (11, FUSED), (5, "context_precision,faithfulness")])
def test_values_after_faults_and_retry_equal_a_clean_run(seed, metrics, tmp_path, monkeypatch):
    # the clean run scores the four metrics whose calls are fused; the faulty one, retried,
    # the same four or two of them (one of each fused call): the same values either way
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with JudgeServer(fault_rate=0.15, faults=("500",), seed=seed) as srv:
        first = _run(srv, tmp_path / "run", tmp_path / "c.sqlite", metrics)
        failed = {k for k, (v, err) in _values(first).items() if err}
        assert failed, "the faults must fail some tasks for the test to mean anything"
        srv.fault_rate = 0.0
        retried = _run(srv, tmp_path / "run", tmp_path / "c.sqlite", metrics, retry_errors=True)
        clean = _run(srv, tmp_path / "clean", tmp_path / "clean.sqlite")
    got, want = _values(retried), _values(clean)
    assert not [e for _, e in want.values() if e and "missing" not in e and "no retrieved" not in e]
    want = {k: v for k, v in want.items() if k[1] in metrics.split(",")}
    assert got.keys() == want.keys()
    differ = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert not differ, f"{len(differ)} of {len(want)} values depend on the faults: {sorted(differ.items())[:3]}"


async def test_an_extraction_failure_fails_the_fused_call_for_every_metric_it_serves(tmp_path, monkeypatch):
    # context_recall used to be verified alone when the response's claims failed: another
    # prompt, a value that depended on the fault
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sample = next(s for s in read_samples(DATA) if s.has("reference") and s.has("response"))
    refs = parse_metrics("faithfulness,context_recall")

    def break_response_extraction(body):  # an HTML page instead of the response's claims
        text = json.dumps(body.get("messages", []), ensure_ascii=False)
        return "<html>bad gateway</html>" if json.dumps(sample.response)[1:-1] in text else None

    with JudgeServer(raw_fn=break_response_extraction) as srv:
        backend = NativeBackend(build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)))
        faith, recall = await backend.score(sample, refs)
        asked = [json.dumps(b.get("messages", [])) for b in srv.requests]
    assert faith.error and "claims response extraction failed" in faith.error, faith.error
    assert recall.error and recall.error.startswith("verify not asked: claims response extraction failed")
    assert "retried together" in recall.error and recall.value is None
    reference = json.dumps(sample.reference)[1:-1]
    assert asked and all(json.dumps(sample.response)[1:-1] in a or reference in a for a in asked)  # no verification


async def test_a_failed_extraction_only_the_canonical_plan_asks_fails_the_metric_and_its_retry_is_clean(
    tmp_path, monkeypatch
):
    # faithfulness alone: the reference's claims are asked for its verification only; when
    # their extraction fails, faithfulness fails (never verified on the response alone),
    # pays for what was sent, and once retried it has its clean value beside the others
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sample = next(s for s in read_samples(DATA) if s.has("reference") and s.has("response"))
    reference = json.dumps(sample.reference)[1:-1]

    def break_reference_extraction(body):
        return "<html>bad gateway</html>" if reference in json.dumps(body.get("messages", [])) else None

    faithfulness = parse_metrics("faithfulness")
    with JudgeServer(raw_fn=break_reference_extraction) as srv:
        backend = NativeBackend(build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)))
        (failed,) = await backend.score(sample, faithfulness)
        assert failed.value is None and failed.error.startswith("verify not asked: claims reference extraction")
        assert failed.cost.calls == srv.chat_count == 2  # both extractions, no verification
        srv.raw_fn = None
        srv.reset_counts()
        (retried,) = await backend.score(sample, faithfulness)
        asked = [str(b["messages"]) for b in srv.requests]
        srv.reset_counts()
        beside = await backend.score(sample, parse_metrics("faithfulness,context_recall,context_precision"))
        asked_beside = [str(b["messages"]) for b in srv.requests]
    assert retried.ok and retried.value == beside[0].value
    assert len(asked) == 4 and set(asked) <= set(asked_beside)


async def test_a_metric_scored_alone_is_asked_the_prompts_of_the_full_set(tmp_path, monkeypatch):
    # what a retry or a resume scoring context_recall alone asks: its value is the first run's
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    sample = next(s for s in read_samples(DATA) if s.has("reference") and s.has("response"))
    both = parse_metrics("faithfulness,context_recall")
    with JudgeServer() as srv:
        backend = NativeBackend(build_judges(JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)))
        together = await backend.score(sample, both)
        prompts_together = sorted(str(b["messages"]) for b in srv.requests)
        srv.reset_counts()
        (alone,) = await backend.score(sample, both[1:])
        prompts_alone = sorted(str(b["messages"]) for b in srv.requests)
    assert prompts_alone == prompts_together  # the same calls, all of them
    assert alone.value == together[1].value and alone.metric == "context_recall"
    # the extraction only faithfulness reads is paid by the metric scored now, and noted
    assert alone.cost.calls == len(prompts_alone) == 4
    assert alone.details["shared_steps"]["claims:response"] == {"charged_to": "context_recall", "asked_for": "verify"}
    assert together[1].cost.calls == 1 and "asked_for" not in str(together[1].details["shared_steps"])


def test_a_group_sent_to_a_ray_actor_keeps_what_scoring_reads():
    # every TaskGroup field score_group reads crosses to the actor: the companions were
    # dropped on the wire, and a retried metric on Ray was asked its solo prompt
    import dataclasses

    from unified.platforms.ray_executor.worker import WireGroup
    from unified.run.executor import Pair, TaskGroup

    sample = next(iter(read_samples(DATA)))
    backend = NativeBackend()
    refs = parse_metrics("context_recall,context_precision")
    pairs = [Pair(metric=r, backend=backend, bit=i, config_hash=f"h{i}", needs_judge=True) for i, r in enumerate(refs)]
    sent = TaskGroup(
        sample=sample,
        backend=backend,
        pairs=pairs,
        sample_hash="s1",
        needs_judge=True,
        seed=7,
        companions=parse_metrics("faithfulness,context_relevancy"),
    )
    got = WireGroup.of(0, sent).group(backend)
    driver_only = {"where", "repeat"}  # the driver keeps the group by its index and stamps these itself
    for f in dataclasses.fields(TaskGroup):
        if f.name in driver_only:
            continue
        if f.name == "pairs":
            assert [(p.metric, p.config_hash) for p in got.pairs] == [(p.metric, p.config_hash) for p in sent.pairs]
        else:
            assert getattr(got, f.name) == getattr(sent, f.name), f.name


@pytest.mark.parametrize("repeats", [1, 2])
def test_a_metric_added_to_a_folder_is_asked_with_the_metrics_it_holds(repeats, tmp_path, monkeypatch):
    # context_recall added to a folder of faithfulness scores: its verification is the
    # clean two-metric run's call, and faithfulness's values from its solo run are those
    # of the two-metric run too
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def run(srv, out, metrics):
        judge = JudgeConfig(base_url=srv.base_url, model="fake", max_retries=0)
        return evaluate(
            str(DATA), metrics, ["native"], judge=judge, out=out, cache=tmp_path / "c.sqlite", progress=False,
            quiet=True, repeats=repeats, max_samples=10,
        )  # fmt: skip

    with JudgeServer() as srv:
        run(srv, tmp_path / "grown", "faithfulness")
        grown = run(srv, tmp_path / "grown", "faithfulness,context_recall")
        clean = run(srv, tmp_path / "clean", "faithfulness,context_recall")
    got = {(s.sample_id, s.metric): s.value for s in grown.iter_scores()}
    want = {(s.sample_id, s.metric): s.value for s in clean.iter_scores()}
    assert len(got) == 20 and got == want


#: PROMPTS_VERSION -> the digest of the prompt and answer-schema sources it names
PROMPT_PINS = {3: "c2d799e9da540c64"}


def test_a_prompt_change_comes_with_a_new_prompts_version():
    """PROMPTS_VERSION is part of every native task's fingerprint: a folder scored with
    other prompts is refused on resume. A rewording once landed without raising it, so
    folders written across that commit mixed the answers of two wordings without a word.
    When this fails: if the text or layout a judge sees changed, raise PROMPTS_VERSION and
    pin the new digest under it; if not (a comment, a refactor), pin it under the same."""
    import hashlib

    from unified.adapters.native.prompts import PROMPTS_VERSION

    root = Path(__file__).resolve().parents[1] / "unified" / "adapters" / "native"
    digest = hashlib.sha256()
    for f in sorted([*root.joinpath("prompts").glob("*.py"), root / "schemas.py"]):
        digest.update(f.name.encode() + f.read_bytes())
    assert PROMPT_PINS.get(PROMPTS_VERSION) == digest.hexdigest()[:16], (
        f"the native prompts changed (digest {digest.hexdigest()[:16]}) under PROMPTS_VERSION {PROMPTS_VERSION}"
    )
