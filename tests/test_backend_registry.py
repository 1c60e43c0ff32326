"""The backend registry: static facts the core reads without importing a backend, the
scoped registration API, entry points, pass bounds per backend, judge requirements,
fingerprints and call estimates."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from unified.adapters import (
    Backend,
    available,
    backend_info,
    backend_names,
    builtin_backends,
    describe_metric,
    estimate_calls,
    get_backend,
    get_backend_class,
    implemented_metrics,
    metric_matrix,
    missing_requirements,
    register_backend,
    registered_backend,
    threshold_for,
    unregister_backend,
)
from unified.adapters.native import NativeBackend
from unified.adapters.native.prompts import PROMPTS_VERSION
from unified.judge.base import Judges
from unified.metrics import all_metrics, parse_metric, parse_metrics
from unified.sample import Sample
from unified.scores import Score

ROOT = Path(__file__).resolve().parents[1]
HAS = {
    m: importlib.util.find_spec(m) is not None for m in ("ragas", "deepeval", "sentence_transformers", "opik", "mlflow")
}
CLASSES = {
    "ragas": "ragas",
    "deepeval": "deepeval",
    "embedding": "sentence_transformers",
    "opik": "opik",
    "mlflow": "mlflow",
}


class Twin(Backend):
    name = "twin"
    metrics = frozenset({"mrr"})
    uses_judges = False

    async def score(self, sample, metrics):
        return [Score.from_raw(m.name, self.name, sample.id, 1.0) for m in metrics]


# ---------------------------------------------------------------- static facts


@pytest.mark.parametrize("name", builtin_backends())
def test_static_metric_sets_are_the_adapters_own_tables(name):
    if not available(backend_info(name)):
        pytest.skip(f"{backend_info(name).package} not installed")
    assert implemented_metrics(name) == set(get_backend_class(name).metrics)


def test_listing_and_estimating_import_no_framework_and_no_model():
    """``metrics``, ``metrics NAME`` and ``--dry-run`` over every backend read the rooms'
    facts only: no framework and no model is imported."""
    code = (
        "import json, sys\n"
        "from unified.adapters import builtin_backends, describe_metric, metric_matrix, estimate_calls\n"
        "from unified.metrics import parse_metrics\nfrom unified.sample import Sample\n"
        "m = metric_matrix(); d = describe_metric('faithfulness')\n"
        "s = [Sample(user_input='q?', response='r', retrieved_contexts=['c'])]\n"
        "rows = {b: estimate_calls(b, s, parse_metrics('faithfulness'))[0]['calls'] for b in d['backends']}\n"
        "heavy = ('ragas', 'deepeval', 'torch', 'sentence_transformers', 'opik', 'mlflow', 'phoenix.evals',"
        " 'trulens.core', 'dingo', 'evidently', 'patronus', 'autoevals')\n"
        "print(json.dumps({'rows': len(m['rows']), 'backends': sorted(d['backends']),"
        " 'builtin': list(builtin_backends()), 'calls': rows, 'imported': [x for x in heavy if x in sys.modules]}))"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["imported"] == []
    assert out["rows"] == len([s for s in all_metrics() if not s.custom])
    assert out["backends"] == sorted(b for b in out["builtin"] if "faithfulness" in implemented_metrics(b))
    # measured calls per sample (K = 1 context): native's plan, RAGAS 2, DeepEval 4, Opik 1, Phoenix 1, MLflow 1
    assert {b: out["calls"][b] for b in ("native", "ragas", "deepeval", "opik", "phoenix", "mlflow")} == {
        "native": 3,
        "ragas": 2,
        "deepeval": 4,
        "opik": 1,
        "phoenix": 1,
        "mlflow": 1,
    }


def test_backend_info_carries_what_the_core_needs():
    info = backend_info("embedding")
    assert (info.extra, info.package, info.uses_judges) == ("local", "sentence_transformers", False)
    assert available(info) == HAS["sentence_transformers"]
    assert "pip install 'unified-rag-eval[local]'" in info.hint
    assert backend_info("native").uses_judges and backend_info("native").custom_metrics
    assert list(builtin_backends()) == backend_names()[: len(builtin_backends())]
    assert builtin_backends()[:2] == ("native", "embedding")  # ours first, then the frameworks
    assert (backend_info("phoenix").package, backend_info("trulens").package) == ("phoenix.evals", "trulens.feedback")
    with pytest.raises(KeyError, match="unknown backend 'nativ'; known: " + ", ".join(sorted(builtin_backends()))):
        backend_info("nativ")


# ---------------------------------------------------------------- registration


def test_registered_backend_is_scoped_and_usable():
    with registered_backend("twin", f"{__name__}:Twin", metrics={"mrr", "MRR"}, uses_judges=False) as info:
        assert info.name == "twin" and "twin" in backend_names()
        assert implemented_metrics("twin") == {"mrr"}
        assert isinstance(get_backend("twin"), Twin)
        assert threshold_for("twin", "mrr@3") == 5.0 and threshold_for("twin", "faithfulness") is None
        assert estimate_calls("twin", [], parse_metrics("mrr"))[0]["calls"] == 0  # deterministic
    assert "twin" not in backend_names()


def test_register_backend_and_unregister():
    register_backend("twin", f"{__name__}:Twin", metrics=None, estimate=None)
    try:
        assert implemented_metrics("twin") == {"mrr"}  # metrics=None: read from the class
        with pytest.raises(ValueError, match="already registered"):
            register_backend("twin", f"{__name__}:Twin", metrics={"mrr"})
        rows = estimate_calls("twin", [Sample(user_input="q?")], parse_metrics("faithfulness"))
        assert rows[0]["calls"] is None and "no call estimate for backend 'twin'" in rows[0]["note"]
    finally:
        unregister_backend("twin")
    assert "twin" not in backend_names()
    with pytest.raises(ValueError, match="built in"):
        unregister_backend("native")
    with pytest.raises(ValueError, match="already registered"):
        register_backend("native", f"{__name__}:Twin", metrics={"mrr"})


def test_a_replaced_builtin_comes_back():
    before = backend_info("ragas")
    with registered_backend("ragas", f"{__name__}:Twin", metrics={"mrr"}):
        assert implemented_metrics("ragas") == {"mrr"}
    assert backend_info("ragas") == before


def test_entry_point_backends_keep_working(tmp_path, monkeypatch):
    (tmp_path / "twin_ep_backend.py").write_text(
        "from unified.adapters import Backend\nfrom unified.scores import Score\n"
        "class TwinEP(Backend):\n    name = 'twin_ep'\n    metrics = frozenset({'hit_rate_at_k'})\n"
        "    async def score(self, sample, metrics):\n"
        "        return [Score.from_raw(m.name, self.name, sample.id, 1.0) for m in metrics]\n"
    )
    dist = tmp_path / "twin_ep-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: twin-ep\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[unified.backends]\ntwin_ep = twin_ep_backend:TwinEP\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert backend_names()[-1] == "twin_ep"
    assert implemented_metrics("twin_ep") == {"hit_rate_at_k"}
    assert get_backend("twin_ep").name == "twin_ep"
    assert describe_metric("hit_rate@1")["backends"] == ["native", "twin_ep"]


def test_no_metric_is_listed_twice_even_when_a_backend_uses_framework_names():
    # a backend declaring "SemanticSimilarity" and "precision" must not add rows beside
    # semantic_similarity and precision_at_k
    with registered_backend("twin", f"{__name__}:Twin", metrics={"SemanticSimilarity", "precision"}):
        assert implemented_metrics("twin") == {"semantic_similarity", "precision_at_k"}
        rows = metric_matrix()["rows"]
        names = [r["metric"] for r in rows]
        assert len(names) == len(set(names))
        sem = next(r for r in rows if r["metric"] == "semantic_similarity")
        assert sem["implemented"]["twin"] and sem["implemented"]["native"]


# ---------------------------------------------------------------- pass bounds


@pytest.mark.parametrize(
    "backend, metric, expected",
    [
        ("native", "answer_relevancy", 5.0),
        ("embedding", "answer_relevancy", 5.0),  # chosen on ARES (unified/adapters/embedding/backend.py)
        ("embedding", "context_relevancy", 4.25),
        ("embedding", "context_relevancy[variant=mean]", 7.0),
        ("embedding", "faithfulness[variant=similarity]", 7.0),
        ("embedding", "context_relevancy[variant=sentence]", 0.5),
        ("embedding", "context_recall", 5.0),  # no tuned bound: the registry's
        ("embedding", "faithfulness[threshold=8]", 8.0),
        ("ragas", "faithfulness", 7.0),
        ("deepeval", "hallucination", 5.0),
        ("native", "precision@3", 5.0),  # scaled per sample by the best achievable
        ("ragas", "mrr", None),  # not implemented there
    ],
)
def test_threshold_for(backend, metric, expected):
    assert threshold_for(backend, metric) == expected


def test_threshold_for_is_what_the_embedding_backend_applies():
    from unified.adapters.embedding.backend import _threshold  # numpy only; the model loads on first use

    for name in (
        "faithfulness",
        "answer_relevancy",
        "context_relevancy",
        "context_precision",
        "semantic_similarity",
        "bertscore",
        "context_relevancy[variant=sentence]",
    ):
        assert threshold_for("embedding", name) == _threshold(parse_metric(name))


# ---------------------------------------------------------------- judge requirements and fingerprints


@pytest.mark.parametrize(
    "metric, needs",
    [
        ("faithfulness", {"chat"}),
        ("answer_relevancy", {"chat", "embedder"}),
        ("semantic_similarity", {"embedder"}),
        ("mrr@3", set()),
        ("hallucination", {"chat"}),
    ],
)
def test_native_requirements_come_from_its_table(metric, needs):
    assert NativeBackend().requirements(parse_metric(metric)) == needs


def test_requirements_of_the_other_backends():
    ragas = pytest.importorskip("ragas")
    rb = get_backend("ragas")
    assert rb.requirements(parse_metric("answer_relevancy")) == {"chat", "embedder"}
    assert rb.requirements(parse_metric("semantic_similarity")) == {"embedder"}
    assert rb.requirements(parse_metric("faithfulness")) == {"chat"}
    assert rb.fingerprint_extra() == {"framework": "ragas", "version": ragas.__version__}
    if HAS["deepeval"]:
        import deepeval

        db = get_backend("deepeval")
        assert db.requirements(parse_metric("faithfulness")) == {"chat"}
        assert db.fingerprint_extra() == {"framework": "deepeval", "version": deepeval.__version__}
    if HAS["sentence_transformers"]:
        eb = get_backend("embedding")
        assert eb.requirements(parse_metric("answer_relevancy")) == frozenset()  # its own model
        assert eb.fingerprint_extra() == {"embedder": "local:all-MiniLM-L6-v2"}


def test_missing_requirements_and_native_fingerprint():
    ref = parse_metric("answer_relevancy")
    assert missing_requirements(NativeBackend(), ref, Judges()) == {"chat", "embedder"}
    nb = NativeBackend(strictness=5, run_dir="/tmp/x", concurrency=3)
    # what changes scores only: the options metrics read and the prompts' version
    assert nb.fingerprint_extra() == {"options": {"strictness": 5}, "prompts": PROMPTS_VERSION}
    assert Twin().requirements(ref) == frozenset() and Twin().fingerprint_extra() == {}


# ---------------------------------------------------------------- call estimates


def _samples(n: int = 2, k: int = 3) -> list[Sample]:
    return [
        Sample(
            user_input="q" * 40,
            response="r" * 40,
            retrieved_contexts=["c" * 400] * k,
            reference="x" * 40,
            retrieved_ids=["1"],
            relevant_ids=["1"],
            id=f"s{i}",
        )
        for i in range(n)
    ]


def test_framework_estimates_follow_their_tables():
    rows = {r["metric"]: r for r in estimate_calls("ragas", _samples(1, 7), parse_metrics("context_precision"))}
    assert rows["context_precision"]["calls"] == 7  # one verdict per context
    rows = {
        r["metric"]: r
        for r in estimate_calls("deepeval", _samples(1, 3), parse_metrics("context_relevancy,faithfulness"))
    }
    assert rows["context_relevancy"]["calls"] == 4 and rows["faithfulness"]["calls"] == 4
    f = rows["faithfulness"]
    assert f["input_tokens"] > f["calls"] * 300 and f["output_tokens"] == 4 * 120
    rows = estimate_calls("ragas", _samples(), parse_metrics("answer_relevancy,context_sufficiency"))
    assert (rows[0]["calls"], rows[0]["embedding_calls"]) == (6, 4)
    assert rows[1]["calls"] is None and "no call estimate for metric 'context_sufficiency'" in rows[1]["note"]


def test_native_estimate_bills_shared_steps_to_the_first_metric():
    refs = parse_metrics(
        "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision,precision@3,faithfulness"
    )
    rows = estimate_calls("native", _samples(2), refs)
    assert [r["metric"] for r in rows] == [
        "faithfulness",
        "answer_relevancy",
        "context_relevancy",
        "context_recall",
        "context_precision",
        "precision@3",
    ]  # deduplicated
    assert [r["calls"] for r in rows] == [2 * 3, 2 * 2, 2 * 2, 2 * 1, 0, 0]
    assert sum(r["calls"] for r in rows) == 2 * 8 and sum(r["embedding_calls"] for r in rows) == 2
    single = estimate_calls("native", _samples(2), refs, single_judge=True)
    assert sum(r["calls"] for r in single) == 2 * 5


def test_embedding_estimate_is_one_call_per_sample():
    rows = estimate_calls("embedding", _samples(3), parse_metrics("faithfulness,answer_relevancy,bertscore"))
    assert [r["embedding_calls"] for r in rows] == [3, 0, 3] and all(r["calls"] == 0 for r in rows)


@pytest.mark.parametrize("single", [False, True])
async def test_native_estimate_of_each_metric_alone_matches_its_plan(single):
    from unified.adapters.native import LLM_METRICS
    from unified.adapters.native.testing import ScriptedEmbedder, ScriptedJudge, fill_keys

    def answer(schema, messages):
        name = schema.__name__
        if name == "ClaimList":
            return {"claims": ["one.", "two."]}
        if name == "GeneratedQuestions":
            return {"questions": ["q?"], "noncommittal": False}
        if name == "WholeRating":
            return {"reason": "ok", "rating": 1}
        return fill_keys(
            schema,
            lambda k: (
                1
                if k.endswith("relevance")
                else ("yes" if k.endswith("useful") or name.startswith("Comparison") else "supported")
            ),
        )

    s = Sample(user_input="q?", response="r.", reference="x.", retrieved_contexts=["a", "b", "c"], id="s")
    for metric in sorted(LLM_METRICS):
        j = ScriptedJudge(answer)
        judges = Judges(chat=j, embedder=ScriptedEmbedder(), single_judge=single)
        (score,) = await NativeBackend(judges).score(s, parse_metrics(metric))
        assert score.ok, (metric, score.error)
        [row] = estimate_calls("native", [s], parse_metrics(metric), single_judge=single)
        assert row["calls"] == len(j.calls) == score.cost.calls, metric


# ---------------------------------------------------------------- function length (CONTRACTS)


def test_no_function_in_my_modules_is_longer_than_80_lines():
    files = [
        *sorted((ROOT / "unified" / "adapters").glob("*.py")),
        *sorted((ROOT / "unified" / "adapters" / "native").rglob("*.py")),
        ROOT / "unified" / "metrics.py",
    ]
    long = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 80:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_dry_run_lists_a_metric_once_whatever_its_spelling():
    """issue 12: `semantic_similarity` listed twice — written once canonically and once as
    a framework's name (RAGAS v1 `answer_similarity`), it was one metric in two rows."""
    from typer.testing import CliRunner

    from unified.cli.app import app

    data = ROOT / "examples" / "data" / "rag_examples.jsonl"
    r = CliRunner().invoke(
        app,
        [
            "run",
            str(data),
            "--metrics",
            "semantic_similarity,answer_similarity,SemanticSimilarity",
            "--backend",
            "native,embedding",
            "--dry-run",
        ],
    )
    assert r.exit_code == 0, r.output
    rows = [line for line in r.output.splitlines() if "│ semantic_similarity" in line]
    assert [line.split("│")[1].strip() for line in rows] == ["native", "embedding"]


@pytest.mark.parametrize("k", [3, 10])
def test_core_metric_estimates_match_the_measured_calls_per_sample(k):
    """The figures benchmarks/calls_per_sample.py measures at the loopback server:
    native 8 dual / 5 single; ragas 8 + K; deepeval 12 + K."""
    core = parse_metrics("faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision")
    s = _samples(1, k)

    def total(backend, single=False):
        return sum(r["calls"] for r in estimate_calls(backend, s, core, single_judge=single))

    assert (total("native"), total("native", True), total("ragas"), total("deepeval")) == (8, 5, 8 + k, 12 + k)
