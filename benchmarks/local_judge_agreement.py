"""Local judge agreement with people: each backend's faithfulness, judged by the packaged
in-process model, against human labels on RAGTruth summaries, RAGTruth data-to-text and
ARES rows (``local_judge_rows``), through the CLI with its defaults.

    python benchmarks/local_judge_agreement.py [--model M.gguf] [--per-set 4] [--out runs/local_judge]

Per backend:

- ``AUC``: ROC AUC of the score against the human label (1 = faithful), Mann–Whitney
  with ties counted ½ (``unified.analysis.stats.auc``); "undefined" when every score is
  the same — the judge then ranks nothing;
- ``bal. acc.``: balanced accuracy of ``passed`` (score ≥ the metric's bound, 7.0 for
  faithfulness) against the label: ½ (TPR + TNR), 0.5 is chance;
- ``scored``: tasks scored / tasks;
- ``collapse``: the larger share of scored values at one end of the scale (10 or 0): 1.0
  means every row got the same extreme verdict;
- ``s/sample``: wall of the CLI run / rows. Each backend reads the judge cache the speed
  benchmark filled for it (``OUT/cache/<backend>``): rows judged there cost nothing here,
  which ``cached`` says.

This measures a 1.5B model, not the backends: it judges nearly everything faithful. Use
a stronger judge for decisions; the numbers only show that every backend runs end to end
on a local model and what such a judge is worth.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from local_judge_rows import DATA, labelled_rows, write_jsonl
from local_judge_run import BackendRun, cache_dir, run_backend, slug

CONFIGS = ("native", "native --single-judge", "ragas", "deepeval", "embedding")


def figures(run: BackendRun, labels: dict[str, int]) -> dict[str, object]:
    """AUC, balanced accuracy, scored share, collapse and speed of one backend run."""
    from unified.analysis.stats import auc, balanced_accuracy

    ok = [s for s in run.scores if s.get("value") is not None and s["sample_id"] in labels]
    vals = [float(s["value"]) for s in ok]
    ys = [labels[s["sample_id"]] for s in ok]
    ends = max(sum(v >= 10.0 for v in vals), sum(v <= 0.0 for v in vals)) / len(vals) if vals else None
    return {
        "backend": run.label,
        "n": run.rows,
        "scored": run.scored,
        "auc": auc(vals, ys),
        "balanced_accuracy": balanced_accuracy([bool(s.get("passed")) for s in ok], ys),
        "collapse": ends,
        "s_per_sample": run.wall / max(run.rows, 1),
        "cached": int(run.aggregate.get("cost", {}).get("cache_hits", 0)),
        "calls": int(run.aggregate.get("cost", {}).get("calls", 0)),
    }


def _f(x: object, d: int = 2) -> str:
    return f"{x:.{d}f}" if isinstance(x, float) else str(x)


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| backend | AUC | bal. acc. | scored | collapse | s/sample | calls | cached |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {_f(r['auc'])} | {_f(r['balanced_accuracy'])} | "
            f"{r['scored']}/{r['n']} | {_f(r['collapse'])} | {_f(r['s_per_sample'], 1)} | "
            f"{r['calls']} | {r['cached']} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, default=None, help="a .gguf (default: the packaged model)")
    ap.add_argument("--per-set", type=int, default=4, help="rows per labelled set (default 4)")
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    ap.add_argument("--out", type=Path, default=Path("runs/local_judge"))
    ap.add_argument("--configs", default=",".join(CONFIGS))
    args = ap.parse_args(argv)
    if args.model is None:
        from unified.judge.packaged_model import packaged_model_path

        args.model = packaged_model_path()
    rows = labelled_rows(args.data, per_set=args.per_set)
    labels = {r["id"]: r["labels"]["faithfulness"] for r in rows}
    path = write_jsonl(rows, args.out / "agreement_rows.jsonl")
    out = []
    for label in args.configs.split(","):
        print(f"running {label} on {len(rows)} rows …", file=sys.stderr, flush=True)
        run = run_backend(
            label,
            path,
            args.model,
            args.out / "agreement" / slug(label),
            cache=cache_dir(args.out, label),
            log=args.out / "agreement.log",
        )
        out.append(figures(run, labels))
        print(f"  {label}: {run.wall:.0f}s, exit {run.exit_code}", file=sys.stderr, flush=True)
    sets = sorted({r["set"] for r in rows})
    print(
        f"model: {args.model.name} · metric: faithfulness · n = {len(rows)} rows "
        f"({args.per_set} per set: {', '.join(sets)}; {sum(labels.values())} faithful by the human label)"
    )
    print(table(out))
    (args.out / "agreement.json").write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
