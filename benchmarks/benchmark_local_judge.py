"""The table of docs/benchmark.md, regenerated with one command: ``unified-eval benchmark``
over the labelled sets of a data folder laid out like the project's shared one, with the
packaged local judge (Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, run in-process by
llama.cpp), then the table as Markdown.

    python benchmarks/benchmark_local_judge.py --data /path/to/labelled-data --out runs/bench-local
    python benchmarks/benchmark_local_judge.py --backends embedding --out runs/bench-embedding

Sets (each skipped when its file is absent), 100 rows each by default (``--limit``,
label-balanced): RAGTruth summaries (the FaithJudge per-source redistribution), ARES
(its TSV), BEGIN WoW test, SummaC SummEval and WiCE test (the shared folder's converted
JSONL: their own rows with ``labels``). The run folder is resumable: run the same command
again after an interruption and it continues. On 2 cores the local judge makes ~10 tokens/s;
native alone is hours for 500 rows, the four backends many CPU hours — ``--dry-run``
first prices it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

#: NAME=FORMAT:relative path under the data folder
SETS = (
    "ragtruth-summary=ragtruth:labelled/ragtruth/ragtruth_summary.jsonl",
    "ares=ares:ares/LLM_Judge_Test_Set_Human_Annotations_V1.1_Filtered.tsv",
    "begin-wow-test=jsonl:labelled/begin/test_wow.jsonl",
    "summac-summeval=jsonl:labelled/summac/summeval_val.jsonl",
    "wice-test=jsonl:labelled/wice/test.jsonl",
)
JUDGE_FREE = {"embedding"}


def set_args(data: Path) -> list[str]:
    """``--set`` arguments for the sets present under ``data``."""
    out = []
    for spec in SETS:
        name, rest = spec.split("=", 1)
        fmt, rel = rest.split(":", 1)
        if (data / rel).exists():
            out += ["--set", f"{name}={fmt}:{data / rel}"]
        else:
            print(f"skipped {name}: {data / rel} is absent", file=sys.stderr)
    return out


def command(args: argparse.Namespace) -> list[str]:
    """The ``unified-eval benchmark`` command line."""
    argv = ["unified-eval", "benchmark", *set_args(args.data), "--limit", str(args.limit)]
    argv += ["--backends", args.backends, "--metrics", args.metric, "--out", str(args.out)]
    if set(args.backends.split(",")) - JUDGE_FREE:
        model = args.model
        if model is None:
            from unified.judge.packaged_model import packaged_model_path

            model = str(packaged_model_path())
        argv += ["--model", model]
    return argv + (["--dry-run"] if args.dry_run else [])


def markdown(table: dict[str, Any]) -> str:
    """The table as Markdown (docs/benchmark.md)."""

    def f(v: Any, d: int = 3) -> str:
        return f"{v:.{d}f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else "—"

    lines = [
        "| set | backend | n | AUC [95% CI] | BA @ bound | BA @ tuned | ECE (cal.) | failed | judge calls | task s/sample |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in table["entries"]:
        if "note" in e:
            lines.append(
                f"| {e['set']} | {e['backend']} | {e.get('n', 0)} | {e['note']} | | | | {f(e.get('failed'), 2)} | | |"
            )
            continue
        ci = e.get("auc_ci")
        auc = (
            f(e.get("auc"))
            + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if isinstance(ci, list) else "")
            + (" ★" if e.get("winner") else "")
        )
        lines.append(
            f"| {e['set']} | {e['backend']} | {e['n']} | {auc} | {f(e.get('ba_default'))} | {f(e.get('ba_tuned'))} "
            f"| {f(e.get('ece'))} | {f(e.get('failed'), 2)} | {e.get('judge_calls', 0)} | {f(e.get('seconds_per_sample'), 2)} |"
        )
    lines += ["", "| backend | mean AUC | mean BA @ bound | mean BA @ tuned | sets |", "|---|---|---|---|---|"]
    for a in table["averages"]:
        lines.append(
            f"| {a['backend']} | {f(a.get('auc'))} | {f(a.get('ba_default'))} | {f(a.get('ba_tuned'))} | {a.get('auc_sets', 0)} |"
        )
    wall = table.get("wall_per_sample")
    lines += [
        "",
        f"Run wall time: {f(table.get('wall_seconds'), 0)} s for {table.get('samples')} rows ({f(wall, 2)} s per row).",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    p.add_argument("--out", type=Path, default=Path("runs/bench-local-judge"))
    p.add_argument("--backends", default="native,ragas,deepeval,embedding")
    p.add_argument("--metric", default="faithfulness")
    p.add_argument("--limit", type=int, default=100)
    p.add_argument("--model", default=None, help="a .gguf path or URL (default: the packaged local judge)")
    p.add_argument("--dry-run", action="store_true")
    args = p.parse_args(argv)
    code = subprocess.run(command(args)).returncode
    if args.dry_run:
        return code
    table_file = args.out / "benchmark.json"
    if table_file.is_file():
        print(markdown(json.loads(table_file.read_text(encoding="utf-8"))))
    return code


if __name__ == "__main__":
    sys.exit(main())
