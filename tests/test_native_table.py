"""The native metric table: a new native LLM metric needs only its table entry, its
function and its prompt, and then appears everywhere — the metric registry, the backend's
implemented set, the catalog, the call estimate (``--dry-run``), and real scoring through
the judge layer against the loopback judge server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified.adapters import describe_metric, estimate_calls, implemented_metrics, threshold_for
from unified.adapters.native import NativeBackend
from unified.adapters.native.dual import combine
from unified.adapters.native.prompts import Ask, system, user
from unified.adapters.native.schemas import WholeRating
from unified.adapters.native.table import (
    NATIVE_METRICS,
    STEPS,
    NativeMetric,
    judged,
    native_metric,
    register_native_metric,
    unregister_native_metric,
)
from unified.data.io import read_samples
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges
from unified.metrics import MetricSpec, UnknownMetricError, get_metric, metric_names, parse_metrics
from unified.sample import Sample
from unified.scores import Score

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "rag_examples.jsonl"


# ---------------------------------------------------------------- the toy metric: prompt, function, entry


def politeness_prompt(ctx, variant) -> Ask:
    """The prompt: judge A and judge B word it differently."""
    text = (
        (
            "Rate how polite the response is: 2 = polite, 1 = neutral, 0 = rude. "
            'JSON: {"reason": string, "rating": 0|1|2}.'
        )
        if variant == "A"
        else ('Is this reply courteous? 2 yes, 1 so-so, 0 no. JSON {"reason": "...", "rating": 0, 1 or 2}.')
    )
    return Ask(
        [system(text), user(f"RESPONSE\n{ctx.sample.response}\n\nJSON:")],
        WholeRating,
        lambda ans: (int(ans.rating), ans.reason),
    )


async def politeness(ctx) -> Score:
    """toy_politeness = r̄ / 2 → × 10, r̄ the mean of the two judges' 0/1/2 ratings."""
    res = await ctx.step("politeness")
    comb = combine(res, lambda r: [float(r[0])], 2.0)
    return Score.from_raw(
        ctx.ref.name,
        "native",
        ctx.sample.id,
        comb.mean[0],
        raw_range=(0.0, 2.0),
        threshold=ctx.threshold,
        reason=f"rating {comb.mean[0]:g} of 2",
        details={"judges": ctx.judges_info(), "shared_steps": ctx.shared_steps()},
    )


SPEC = MetricSpec(
    name="toy_politeness",
    description="Politeness of the response, rated 0/1/2 by two judges.",
    required=("user_input", "response"),
    kind="llm",
    threshold=6.0,
)
ENTRY = NativeMetric(politeness, steps=("politeness",))


@pytest.fixture
def toy():
    with native_metric("toy_politeness", ENTRY, spec=SPEC, steps={"politeness": judged(politeness_prompt)}):
        yield


def loopback_judges(server, single=False):
    return build_judges(
        JudgeConfig(base_url=server.base_url, model="fake", max_retries=1),
        embedding=EmbeddingConfig(kind="openai", base_url=server.base_url, model="fake-embed"),
        cache=False,
        single_judge=single,
    )


def samples() -> list[Sample]:
    return [s for s in read_samples(DATA) if hasattr(s, "user_input")]


# ---------------------------------------------------------------- it shows up everywhere


def test_toy_metric_is_in_the_registry_the_backend_and_the_catalog(toy):
    assert get_metric("toy_politeness") is SPEC and "toy_politeness" in metric_names()
    assert "toy_politeness" in implemented_metrics("native")
    assert "toy_politeness" in NativeBackend.metrics and NativeBackend().implements("toy_politeness")
    assert "toy_politeness" not in implemented_metrics("ragas")
    ref = parse_metrics("toy_politeness")[0]
    assert NativeBackend().requirements(ref) == {"chat"}
    d = describe_metric("toy_politeness")
    assert d["backends"] == ["native"] and d["thresholds"] == {"native": 6.0}
    assert d["formula"].startswith("toy_politeness = r̄ / 2") and d["required"] == ["user_input", "response"]
    assert threshold_for("native", "toy_politeness[threshold=8]") == 8.0


def test_scoped_registration_leaves_nothing_behind():
    before = (dict(NATIVE_METRICS), dict(STEPS), metric_names())
    with native_metric("toy_politeness", ENTRY, spec=SPEC, steps={"politeness": judged(politeness_prompt)}):
        assert "toy_politeness" in NATIVE_METRICS and "politeness" in STEPS
    assert (dict(NATIVE_METRICS), dict(STEPS), metric_names()) == before
    with pytest.raises(UnknownMetricError):
        get_metric("toy_politeness")
    assert "toy_politeness" not in implemented_metrics("native")


def test_registration_refuses_what_would_break_the_table():
    with pytest.raises(ValueError, match="already in the table"):
        register_native_metric("faithfulness", ENTRY)
    with pytest.raises(ValueError, match="unknown step 'politeness'"):
        register_native_metric("toy_politeness", ENTRY, spec=SPEC)
    with pytest.raises(ValueError, match="already exists"):
        register_native_metric("toy_politeness", ENTRY, spec=SPEC, steps={"verify": judged(politeness_prompt)})
    with pytest.raises(KeyError):
        unregister_native_metric("faithfulness")  # built-ins stay
    assert "toy_politeness" not in metric_names() and "politeness" not in STEPS


@pytest.mark.parametrize("single, per_sample", [(False, 2), (True, 1)])
def test_toy_metric_is_in_the_call_estimate(toy, single, per_sample):
    rows = samples()
    est = estimate_calls("native", rows, parse_metrics("toy_politeness,faithfulness"), single_judge=single)
    by = {r["metric"]: r for r in est}
    assert by["toy_politeness"]["calls"] == per_sample * len(rows)
    assert by["toy_politeness"]["embedding_calls"] == 0 and by["toy_politeness"]["input_tokens"] > 0
    # its own steps, unchanged, and the reference's extraction its verification asks (the
    # canonical plan): every row has what context_recall reads
    assert all(s.has("reference") and s.has("user_input") for s in rows)
    assert by["faithfulness"]["calls"] == (2 + per_sample) * len(rows)


def test_toy_metric_in_the_cli_dry_run_and_metric_matrix(toy):
    from unified.cli.app import app

    n = len(samples())
    r = CliRunner().invoke(
        app,
        [
            "run",
            str(DATA),
            "--metrics",
            "toy_politeness",
            "--dry-run",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ],
    )  # nothing is called
    assert r.exit_code == 0, r.output
    row = next(x for x in r.output.splitlines() if "toy_politeness" in x)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:4] == ["native", "toy_politeness", str(n), str(2 * n)]
    m = CliRunner().invoke(app, ["metrics"])
    assert m.exit_code == 0 and "toy_politeness" in m.output


# ---------------------------------------------------------------- and it scores


async def test_toy_metric_scores_against_the_loopback_judge(toy, judge_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-test-key")
    rows = samples()[:5]
    backend = NativeBackend(loopback_judges(judge_server))
    scores = [sc for s in rows for sc in await backend.score(s, parse_metrics("toy_politeness"))]
    assert all(sc.ok for sc in scores), [sc.error for sc in scores]
    assert {sc.value for sc in scores} <= {0.0, 2.5, 5.0, 7.5, 10.0}  # mean of two 0/1/2 ratings
    assert all(sc.threshold == 6.0 and sc.passed == (sc.value >= 6.0) for sc in scores)
    assert judge_server.chat_count == 2 * len(rows) == sum(sc.cost.calls for sc in scores)
    assert all(sc.details["judges"]["mode"] == "dual" for sc in scores)


async def test_two_requests_of_the_toy_metric_share_its_step(toy, judge_server):
    s = samples()[0]
    refs = parse_metrics("toy_politeness,toy_politeness[threshold=9]")
    a, b = await NativeBackend(loopback_judges(judge_server)).score(s, refs)
    assert a.ok and b.ok and a.value == b.value and b.threshold == 9.0
    assert judge_server.chat_count == 2  # one step, asked once, billed to the first
    assert (a.cost.calls, b.cost.calls) == (2, 0)
    assert b.details["shared_steps"]["politeness"]["charged_to"] == "toy_politeness"
    json.dumps(a.details)  # the details stay JSON-serialisable


async def test_toy_metric_without_a_judge_fails_in_the_precheck(toy):
    [sc] = await NativeBackend().score(samples()[0], parse_metrics("toy_politeness"))
    assert sc.value is None and "needs an LLM judge" in sc.error


async def test_the_documented_example_registers_a_working_metric(judge_server):
    """docs/readme-snippets/native.md's "Adding a native metric" code, run as written."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "readme-snippets" / "native.md").read_text()
    section = doc[doc.index("## Adding a native metric") :]
    code = section[section.index("```python\n") + 10 : section.index("```\n", section.index("```python"))]
    exec(compile(code, "native.md", "exec"), {})
    try:
        assert "politeness" in implemented_metrics("native")
        [sc] = await NativeBackend(loopback_judges(judge_server)).score(samples()[0], parse_metrics("politeness"))
        assert sc.ok and judge_server.chat_count == 2
    finally:
        unregister_native_metric("politeness")
    assert "politeness" not in metric_names()
