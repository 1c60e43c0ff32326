"""Where a local judge's wall goes, per backend: reading prompts, generating answers, and
the rest (sampling under the JSON grammar, Python), from llama.cpp's own counters.

    python benchmarks/local_judge_split.py --rows OUT/speed_rows.jsonl --backends native,ragas

Runs ``unified-eval run ROWS --metrics faithfulness --model M --backend B --no-cache``
for each backend B, one after another in this process (``× ragas``: its model wall over
ragas's, when ragas is among them), the product's in-process judge with every default, and wraps the one
method that calls the model (``LlamaCppJudge._generate``) to read
``llama_perf_context`` after each call: ``t_p_eval`` / ``n_p_eval`` (prompt tokens read,
i.e. not restored from the prompt cache) and ``t_eval`` / ``n_eval`` (tokens generated).

    rest = wall − prompt seconds − generation seconds

``rest`` is mostly the sampler: llama-cpp-python applies the JSON-schema grammar to every
one of the vocabulary's 151,936 candidates at every generated token. ``ROWS``: any rows
file, e.g. the one ``local_judge_speed.py`` writes (``OUT/speed_rows.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from local_judge_run import slug
from local_judge_speed import default_model


def watch(calls: list[dict[str, Any]]) -> None:
    """Record llama.cpp's counters of every in-process judge call into ``calls``."""
    import llama_cpp

    from unified.judge import llama as judge_llama

    generate = judge_llama.LlamaCppJudge._generate

    def timed(self: Any, messages: Any, kwargs: dict[str, Any]) -> dict:
        ctx = self._load()._ctx.ctx
        llama_cpp.llama_perf_context_reset(ctx)
        start = time.perf_counter()
        answer = generate(self, messages, kwargs)
        perf = llama_cpp.llama_perf_context(ctx)
        calls.append(
            {
                "wall": time.perf_counter() - start,
                "prompt_s": perf.t_p_eval_ms / 1000,
                "prompt_read": perf.n_p_eval,
                "prompt_sent": answer["usage"]["prompt_tokens"],
                "gen_s": perf.t_eval_ms / 1000,
                "generated": perf.n_eval,
            }
        )
        return answer

    judge_llama.LlamaCppJudge._generate = timed  # type: ignore[method-assign]


def split(calls: list[dict[str, Any]]) -> dict[str, float]:
    """Totals over the calls, and each part's share of the wall."""
    tot = {
        k: sum(c[k] for c in calls) for k in ("wall", "prompt_s", "prompt_read", "prompt_sent", "gen_s", "generated")
    }
    tot["rest_s"] = tot["wall"] - tot["prompt_s"] - tot["gen_s"]
    tot["calls"] = len(calls)
    return tot


def row(backend: str, t: dict[str, float], ragas_wall: float | None) -> str:
    def share(k: str) -> str:
        return f"{t[k]:.0f} s ({t[k] / t['wall']:.0%})"

    read = t["prompt_read"] / t["prompt_s"] if t["prompt_s"] else 0.0
    gen = t["generated"] / t["gen_s"] if t["gen_s"] else 0.0
    ratio = f"{t['wall'] / ragas_wall:.2f}" if ragas_wall else "–"
    return (
        f"| {backend} | {t['calls']:.0f} | {t['wall']:.0f} s | {ratio} | {share('prompt_s')} | {t['prompt_read']:.0f} "
        f"({read:.0f}/s) | {share('gen_s')} | {t['generated']:.0f} ({gen:.1f}/s) | {share('rest_s')} |"
    )


HEADER = (
    "| backend | calls | model wall | × ragas | reading prompts | tokens read | generating | tokens generated | rest |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def run_one(label: str, args: argparse.Namespace, calls: list[dict[str, Any]]) -> dict[str, float] | None:
    """One backend's CLI run over the rows; its totals, or None when the run failed."""
    from unified.cli.app import app

    calls.clear()
    name, *flags = label.split()
    run = ["run", str(args.rows), "-m", "faithfulness", "--backend", name, *flags, "--model"]
    run += [str(args.model or default_model()), "--out", str(args.out / slug(label)), "--fresh", "--no-cache", "-q"]
    try:
        code = app(run, standalone_mode=False)
    except SystemExit as e:
        code = e.code
    if code or not calls:  # a failed run's calls are no speed figure
        print(f"{label}: the run exited {code} after {len(calls)} judge call(s): left out", file=sys.stderr)
        return None
    totals = split(calls)
    (args.out / f"{slug(label)}.calls.json").write_text(json.dumps({"calls": calls, "totals": totals}, indent=1))
    return totals


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=Path, required=True)
    ap.add_argument(
        "--backends",
        default="native,ragas",
        help="comma-separated, run one after another in this process: native, ragas, deepeval, 'native --single-judge'",
    )
    ap.add_argument("--model", type=Path, default=None, help="a .gguf (default: the packaged model)")
    ap.add_argument("--out", type=Path, default=Path("runs/local_judge_split"))
    args = ap.parse_args(argv)
    calls: list[dict[str, Any]] = []
    watch(calls)
    labels = [b.strip() for b in args.backends.split(",") if b.strip()]
    totals = {label: run_one(label, args, calls) for label in labels}
    ragas = totals.get("ragas")
    print(HEADER)
    for label, t in totals.items():
        if t is not None:
            print(row(label, t, ragas["wall"] if ragas else None))
    return 0 if all(t is not None for t in totals.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
