"""What the ``lynx`` backend serves, read without importing anything: Patronus AI's
published hallucination judge, Lynx, run through our judge.

Lynx is an open model (Llama-3 fine-tunes, 8B and 70B) and a published contract: the
prompt it was fine-tuned on, and its answer, a JSON object
``{"REASONING": <bullet points>, "SCORE": "PASS" | "FAIL"}`` (PASS: the answer is
faithful to the document). Here the "framework" is that contract: the backend
(``backend.py``) renders the published prompt with the row, asks the configured judge
(best: a Lynx model served by vLLM or llama.cpp; any chat judge works), and parses the
answer strictly — anything but that object with SCORE exactly "PASS" or "FAIL" is the
task's error, never a number. The raw value is the verdict as a number:

    faithfulness, hallucination   SCORE "PASS" → raw 1, "FAIL" → raw 0    value = 10 · raw

One judge call per metric per sample; the two metrics ask the same question, so the
second one of a sample is answered from the judge cache when a cache is on. Lynx was
fine-tuned on question–document–answer triples: a row without a question is refused
(``needs``), the retrieved contexts are joined into its one DOCUMENT with blank lines.
"""

from __future__ import annotations

from unified.adapters.facts import BackendFacts, FrameworkMetric

Q = "user_input"
VERDICT = 'SCORE "PASS" (raw 1) or "FAIL" (raw 0); value = 10·raw'


def _lynx(alias: str | None = None) -> FrameworkMetric:
    return FrameworkMetric(cls="lynx", scale=VERDICT, needs=(Q,), calls=(1, 0, 0), alias=alias)


#: canonical metric -> the Lynx verdict. "lynx" names ``hallucination`` (Patronus's own
#: use: ``RemoteEvaluator("lynx", "patronus:hallucination")``); a name names one metric,
#: so ``faithfulness`` takes no alias of its own.
LYNX_METRICS: dict[str, FrameworkMetric] = {
    "faithfulness": _lynx(alias=""),
    "hallucination": _lynx(),
}

FACTS = BackendFacts(
    name="lynx",
    title="Patronus Lynx",
    summary="Patronus AI's open hallucination judge: its published prompt and PASS/FAIL verdict, over your judge",
    backend="unified.adapters.lynx.backend:LynxBackend",
    order=90,
    hint="the lynx backend needs nothing beyond the core install",
    metrics=LYNX_METRICS,
    # no package: the prompt and the parser are the room's own (no SDK is imported, so
    # there is no telemetry to switch off and no file a framework could write)
    doc="lynx.md",
)
