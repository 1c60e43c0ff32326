"""What the two local-judge benchmarks share: run one backend over a rows file through the
CLI exactly as a user would (``unified-eval run … --model M.gguf``, no timeout or
concurrency flags), time it, and read back its summary and scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: label -> extra CLI arguments (the backend and its mode)
CONFIGS: dict[str, list[str]] = {
    "native": ["--backend", "native"],
    "native --single-judge": ["--backend", "native", "--single-judge"],
    "ragas": ["--backend", "ragas"],
    "deepeval": ["--backend", "deepeval"],
    "embedding": ["--backend", "embedding"],
}


@dataclass
class BackendRun:
    """One CLI run: wall seconds, exit code, the summary's aggregate, every score and the
    machine's load when it ended."""

    label: str
    wall: float
    exit_code: int
    aggregate: dict[str, Any]
    scores: list[dict[str, Any]] = field(default_factory=list)
    stderr_tail: str = ""
    load: float | None = None  # the machine's 1-minute load average when the run ended

    @property
    def rows(self) -> int:
        return int(self.aggregate.get("count", 0))

    @property
    def scored(self) -> int:
        return int(self.aggregate.get("scored", 0))

    def per_sample(self, key: str) -> float:
        return float(self.aggregate.get("cost", {}).get(key, 0)) / max(self.rows, 1)


def slug(label: str) -> str:
    """``native --single-judge`` -> ``native-single-judge`` (a folder name)."""
    return "-".join(label.replace("--", "").split())


def cache_dir(out: Path, label: str) -> Path:
    """The judge cache folder of one backend configuration (never shared between two)."""
    return out / "cache" / slug(label)


def cli() -> list[str]:
    """The ``unified-eval`` of this interpreter's environment."""
    return [str(Path(sys.executable).with_name("unified-eval"))]


def run_backend(
    label: str,
    rows: Path,
    model: Path,
    out: Path,
    metric: str = "faithfulness",
    cache: Path | None = None,
    log: Path | None = None,
) -> BackendRun:
    """``unified-eval run ROWS --metrics METRIC --model MODEL`` plus ``CONFIGS[label]``,
    into a fresh folder ``out``; ``cache``: the folder of the judge cache (the user cache
    directory, ``XDG_CACHE_HOME``, of the child), None for ``--no-cache``."""
    args = [
        *cli(),
        "run",
        str(rows),
        "--metrics",
        metric,
        "--model",
        str(model),
        "--out",
        str(out),
        "--fresh",
        *CONFIGS[label],
        *([] if cache else ["--no-cache"]),
    ]
    env = {**os.environ, **({"XDG_CACHE_HOME": str(cache)} if cache else {})}
    if label == "embedding":  # judge-free: no model
        args = [a for a in args if a not in ("--model", str(model))]
    start = time.monotonic()
    with (log or Path("/dev/null")).open("a") as errf:
        proc = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        errf.write(f"$ {' '.join(args)}\n{proc.stderr}\n")
    wall = time.monotonic() - start
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").is_file() else {}
    agg = next((a for a in summary.get("aggregates", []) if a["metric"] == metric), {})
    scores = (
        [json.loads(x) for x in (out / "scores.jsonl").read_text().splitlines() if x.strip()]
        if (out / "scores.jsonl").is_file()
        else []
    )
    return BackendRun(label, wall, proc.returncode, agg, scores, proc.stderr[-2000:], os.getloadavg()[0])
