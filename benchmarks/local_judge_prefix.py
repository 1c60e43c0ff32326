"""Prompt tokens a local judge really reads per call: native faithfulness on a few rows
with the in-process ``.gguf`` judge, every call's prompt length next to the tokens
llama.cpp evaluated for it (the rest came from its prompt (KV) cache: the live state's
common prefix, or a saved state in ``LlamaRAMCache``).

    python benchmarks/local_judge_prefix.py --data ../shared/data --rows 2

The judge is the product's (``make_chat_judge``, every default); the script only watches
its ``llama_cpp.Llama``: the first ``eval`` of a call is the part of the prompt that was
not cached (later ``eval`` calls are generated tokens). To compare with another prompt
layout, run the same script with that checkout first on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import time
from pathlib import Path
from typing import Any

from local_judge_rows import DATA, ragtruth_rows

from unified.adapters.native import NativeBackend
from unified.judge.base import Judges
from unified.judge.config import JudgeConfig
from unified.judge.factory import make_chat_judge
from unified.metrics import parse_metrics
from unified.sample import Sample


class Watch:
    """Per call: prompt tokens, tokens evaluated for the prompt, tokens generated, seconds."""

    def __init__(self, llama: Any):
        self.llama = llama
        self.calls: list[dict[str, Any]] = []
        self._evals: list[int] = []
        eval_, chat = llama.eval, llama.create_chat_completion

        def counted_eval(tokens):
            self._evals.append(len(tokens))
            return eval_(tokens)

        def watched_chat(*args, **kwargs):
            self._evals = []
            start = time.perf_counter()
            resp = chat(*args, **kwargs)
            usage = resp.get("usage") or {}
            self.calls.append(
                {
                    "prompt": usage.get("prompt_tokens", 0),
                    "evaluated": self._evals[0] if self._evals else 0,
                    "generated": usage.get("completion_tokens", 0),
                    "seconds": time.perf_counter() - start,
                }
            )
            return resp

        llama.eval, llama.create_chat_completion = counted_eval, watched_chat


def rows(data: Path, n: int, max_chars: int) -> list[Sample]:
    """RAGTruth summaries (one faithful, one hallucinated, ...) with short sources."""
    out = []
    for r in ragtruth_rows(data, "summary", 200):
        if len(r["retrieved_contexts"][0]) <= max_chars:
            out.append(Sample(**{k: r[k] for k in ("id", "user_input", "response", "retrieved_contexts")}))
        if len(out) == n:
            break
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--rows", type=int, default=2)
    ap.add_argument("--max-chars", type=int, default=1500, help="longest source kept")
    ap.add_argument("--model", default=None, help="a .gguf (default: the packaged model)")
    ap.add_argument("--single-judge", action="store_true")
    args = ap.parse_args()
    if args.model is None:
        from unified.judge.packaged_model import packaged_model_path

        args.model = str(packaged_model_path())
    judge = make_chat_judge(JudgeConfig(model=args.model))
    watch = Watch(judge._load())  # the product's model, opened with its own settings
    backend = NativeBackend(Judges(chat=judge, single_judge=args.single_judge))
    print("row\tcall\tprompt tokens\tevaluated\tgenerated\tseconds")
    for s in rows(args.data, args.rows, args.max_chars):
        first = len(watch.calls)
        score = (await backend.score(s, parse_metrics("faithfulness")))[0]
        for i, c in enumerate(watch.calls[first:], 1):
            print(f"{s.id[-24:]}\t{i}\t{c['prompt']}\t{c['evaluated']}\t{c['generated']}\t{c['seconds']:.1f}")
        print(f"  value {score.value} error {score.error}")
    total = {k: sum(c[k] for c in watch.calls) for k in ("prompt", "evaluated", "generated")}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"total: {len(watch.calls)} calls, {total['prompt']} prompt tokens, {total['evaluated']} evaluated, "
        f"{total['generated']} generated; peak RSS {rss:.0f} MB"
    )


if __name__ == "__main__":
    asyncio.run(main())
