"""Judge calls per sample for the five core RAG metrics, by backend, at K = 3 and K = 10.

Builds one sample with K retrieved contexts, scores faithfulness, answer_relevancy,
context_relevancy, context_recall and context_precision on each importable backend
(native dual, native single, ragas, deepeval, opik, mlflow, phoenix, trulens) through the judge layer
against the loopback judge server (tests/judge_server.py, with the frameworks' answer
modules so their values stay in range), and counts the chat and embedding requests the
server received (cross-checked with the Scores' ``cost``). A backend that serves only
some of the five (opik: not context_relevancy; mlflow: not context_precision; phoenix and
trulens: the RAG triad's parts they have) is scored
on those it serves, and the note says which. No cache, so
every request reaches the server. A backend that cannot be imported is shown with the
counts read from its framework's code, marked "from code, not measured".

Run: ``.venv/bin/python benchmarks/calls_per_sample.py``. The loopback server's answers
are synthesised from the schema: this measures call plans, not judgment quality.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from pathlib import Path

# frameworks quiet and offline before anything imports them
for _k, _v in {
    "RAGAS_DO_NOT_TRACK": "true",
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_DISABLE_DOTENV": "1",
    "DEEPEVAL_DISABLE_LEGACY_KEYFILE": "1",
    "DEEPEVAL_FILE_SYSTEM": "READ_ONLY",
    "HF_HUB_OFFLINE": "1",
}.items():
    os.environ.setdefault(_k, _v)
# the loopback server ignores keys; the OpenAI client only wants one to exist
os.environ.setdefault("OPENAI_API_KEY", "loopback-no-key")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from judge_server import JudgeServer, framework_answers  # noqa: E402

from unified.adapters import get_backend, implemented_metrics  # noqa: E402
from unified.judge import EmbeddingConfig, JudgeConfig, build_judges  # noqa: E402
from unified.metrics import parse_metrics  # noqa: E402
from unified.sample import Sample  # noqa: E402

CORE = "faithfulness,answer_relevancy,context_relevancy,context_recall,context_precision"
KS = (3, 10)
# read from the frameworks' code (FRAMEWORK_NOTES.md), chat calls for the five core metrics
# (phoenix: faithfulness 1 + context_relevancy K; trulens: groundedness 1 split + 1 per sentence
# of the one-sentence response, answer_relevancy 1, context_relevancy K)
FROM_CODE = {
    "ragas": {3: 11, 10: 18},
    "deepeval": {3: 15, 10: 22},
    "phoenix": {3: 4, 10: 11},
    "trulens": {3: 6, 10: 13},
}


@dataclass
class Count:
    chat: int | None
    embedding: int | None
    errors: int = 0
    measured: bool = True
    note: str = ""


def make_sample(k: int) -> Sample:
    facts = [f"Fact {i}: the river Seine has feature number {i} on its way to the sea." for i in range(k)]
    facts[0] = "The Seine flows through Paris before reaching the English Channel at Le Havre."
    return Sample(
        user_input="Which river flows through Paris, and where does it end?",
        response="The Seine flows through Paris and ends in the English Channel at Le Havre.",
        reference="The Seine; it flows into the English Channel at Le Havre.",
        retrieved_contexts=facts,
        id=f"bench-k{k}",
    )


async def measure(server: JudgeServer, backend_name: str, k: int, single: bool = False) -> Count:
    judges = build_judges(
        JudgeConfig(base_url=server.base_url, model="loopback", max_retries=1),
        embedding=EmbeddingConfig(kind="openai", base_url=server.base_url, model="loopback-embed"),
        single_judge=single,
        cache=False,
    )
    backend = get_backend(backend_name, judges)
    served = [m for m in parse_metrics(CORE) if m.canonical in implemented_metrics(backend_name)]
    server.reset_counts()
    try:
        scores = await backend.score(make_sample(k), served)
    finally:
        await backend.aclose()
        await judges.aclose()
    errors = sum(1 for s in scores if not s.ok)
    billed = sum(s.cost.calls for s in scores)
    note = "" if billed == server.chat_count else f"Score.cost says {billed}"
    if len(served) < len(CORE.split(",")):
        note = "; ".join(filter(None, [note, "serves " + ",".join(m.name for m in served)]))
    return Count(server.chat_count, server.embedding_count, errors, True, note)


def available(name: str) -> str | None:
    """None when backend ``name`` imports, else the reason it does not."""
    try:
        from unified.adapters import get_backend_class

        get_backend_class(name)
        return None
    except Exception as e:
        return f"{type(e).__name__}: {e}".splitlines()[0][:80]


async def main() -> None:
    rows: dict[str, dict[int, Count]] = {}
    with JudgeServer(answer_fn=framework_answers) as server:
        for label, name, single in (
            ("native (dual)", "native", False),
            ("native (single)", "native", True),
            ("ragas", "ragas", False),
            ("deepeval", "deepeval", False),
            ("opik", "opik", False),
            ("mlflow", "mlflow", False),
            ("phoenix", "phoenix", False),
            ("trulens", "trulens", False),
        ):
            why = available(name)
            rows[label] = {}
            for k in KS:
                if why is None:
                    try:
                        rows[label][k] = await measure(server, name, k, single)
                        continue
                    except Exception as e:
                        why = f"{type(e).__name__}: {e}".splitlines()[0][:80]
                code = FROM_CODE.get(name, {}).get(k)
                rows[label][k] = Count(code, None, 0, False, f"from code, not measured ({why})")

    print(f"Judge calls per sample, five core metrics ({CORE}); loopback server, no cache\n")
    head = f"{'backend':<16}" + "".join(f"{'K=' + str(k) + ' chat':>11}{'emb':>5}{'err':>5}" for k in KS) + "  note"
    print(head)
    print("-" * len(head))
    for label, per_k in rows.items():
        line = f"{label:<16}"
        notes = []
        for k in KS:
            c = per_k[k]
            line += (
                f"{'-' if c.chat is None else c.chat:>11}{'-' if c.embedding is None else c.embedding:>5}"
                f"{c.errors if c.measured else '-':>5}"
            )
            if c.note:
                notes.append(f"K={k}: {c.note}")
        print(line + ("  " + "; ".join(dict.fromkeys(notes)) if notes else ""))
    print()
    for other in ("ragas", "deepeval", "phoenix", "trulens"):
        for k in KS:
            n, o = rows["native (dual)"][k], rows[other][k]
            if n.chat and o.chat:
                src = "measured" if o.measured else "from code"
                print(f"native dual / {other} at K={k}: {n.chat}/{o.chat} = {n.chat / o.chat:.2f}  ({other} {src})")
    for k in KS:
        n = rows["native (dual)"][k].chat
        s = rows["native (single)"][k].chat
        print(
            f"goal at K={k}: dual {n} <= 9: {'yes' if n is not None and n <= 9 else 'NO'}; "
            f"single {s} <= 5: {'yes' if s is not None and s <= 5 else 'NO'}"
        )


if __name__ == "__main__":
    asyncio.run(main())
