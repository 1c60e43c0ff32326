"""Local judge speed: seconds and judge calls per sample, one run each of native (two
judges), native ``--single-judge``, ragas and deepeval on the same in-process model and
the same rows, through the CLI with its defaults (no ``--timeout``, no ``--concurrency``).

    python benchmarks/local_judge_speed.py [--model M.gguf] [--n 6] [--out runs/local_judge]

``--model`` defaults to the packaged Qwen2.5-Coder-1.5B-Instruct Q4_K_M (extra
``local-model``, assembled once into the user cache). Rows: the first ``n`` of
``local_judge_rows.labelled_rows`` (RAGTruth summary, RAGTruth data-to-text and ARES,
interleaved). Each backend gets its own judge cache, emptied first
(``OUT/cache/<backend>``), so every call is a cold one and no backend profits from
another's answers; the agreement benchmark reuses these caches for the same rows.

Columns: ``scored`` tasks scored / tasks; ``s/sample`` wall of the whole CLI run (model
load included) / rows; ``calls/sample`` LLM requests sent / rows; ``out tok/sample``
generated tokens / rows; ``× ragas``, ``× deepeval`` this wall / that wall (the target
for native is ≤ 0.5), per sample, so runs over a different number of the same rows
compare; ``in tok/sample`` prompt tokens sent / rows; ``load`` the machine's 1-minute load
average when the backend's run ended (wall is only comparable between rows of similar load;
calls and tokens per sample do not depend on it). Sequential runs on a shared machine:
compare rows of one run, not runs of different days.

    python benchmarks/local_judge_speed.py --collect OUT1/speed.json OUT2/speed.json

prints one table from the ``speed.json`` of several runs (each written as its backends
finish), for backends that had to be run apart; the table then names each row's rows and load.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from local_judge_rows import DATA, labelled_rows, write_jsonl
from local_judge_run import BackendRun, cache_dir, run_backend, slug

CONFIGS = ("native", "native --single-judge", "ragas", "deepeval")


def default_model() -> Path:
    from unified.judge.packaged_model import packaged_model_path

    return packaged_model_path()


def table(runs: list[BackendRun]) -> str:
    """The markdown table of the module docstring."""
    per_sample = {r.label: r.wall / max(r.rows, 1) for r in runs}
    lines = [
        "| backend | scored | s/sample | calls/sample | in tok/sample | out tok/sample | × ragas | × deepeval | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        mine = per_sample[r.label]
        ratio = [f"{mine / per_sample[k]:.2f}" if per_sample.get(k) else "–" for k in ("ragas", "deepeval")]
        load = r.load
        lines.append(
            f"| {r.label} | {r.scored}/{r.rows} | {mine:.1f} | "
            f"{r.per_sample('calls'):.1f} | {r.per_sample('input_tokens'):.0f} | {r.per_sample('output_tokens'):.0f} | "
            f"{ratio[0]} | {ratio[1]} | {'–' if load is None else f'{load:.1f}'} |"
        )
    return "\n".join(lines)


def collect(paths: list[Path]) -> list[BackendRun]:
    """The backend runs recorded in several ``speed.json`` files, in the order given."""
    runs = []
    for path in paths:
        for rec in json.loads(path.read_text()):
            runs.append(BackendRun(rec["backend"], rec["wall"], rec["exit"], rec["aggregate"], load=rec.get("load")))
    return runs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="a .gguf (default: the packaged model)")
    ap.add_argument("--n", type=int, default=6, help="rows (default 6)")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=Path("runs/local_judge"))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--collect", type=Path, nargs="+", help="print one table from these speed.json files")
    args = ap.parse_args(argv)
    if args.collect:
        print(table(collect(args.collect)))
        return 0
    model = args.model or default_model()
    rows = labelled_rows(args.data, per_set=(args.n + 2) // 3)[: args.n]
    path = write_jsonl(rows, args.out / "speed_rows.jsonl")
    runs = []
    for label in args.configs.split(","):
        print(f"running {label} on {len(rows)} rows …", file=sys.stderr, flush=True)
        cache = cache_dir(args.out, label)
        shutil.rmtree(cache, ignore_errors=True)
        r = run_backend(label, path, model, args.out / "speed" / slug(label), cache=cache, log=args.out / "speed.log")
        print(f"  {label}: {r.wall:.0f}s, exit {r.exit_code}, scored {r.scored}/{r.rows}", file=sys.stderr, flush=True)
        runs.append(r)
        # written after every backend: a long run interrupted still leaves what it measured
        (args.out / "speed.json").write_text(
            json.dumps(
                [
                    {"backend": r.label, "wall": r.wall, "exit": r.exit_code, "aggregate": r.aggregate, "load": r.load}
                    for r in runs
                ],
                indent=1,
            )
        )
    print(f"model: {model.name} · rows: {len(rows)} · metric: faithfulness")
    print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
