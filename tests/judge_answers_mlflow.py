"""Loopback answers for MLflow 3's built-in judges (plumbing, never evidence of judgment
quality): every built-in judge asks for ``JudgeEvaluation`` = ``{"result": ...,
"rationale": ...}`` and reads "yes" or "no" from ``result``. ``answer_fn`` answers
"yes" or "no", deterministic per prompt; ``unknown_fn`` answers a label MLflow does
not know, to check that it is refused rather than counted as "no".
"""

from __future__ import annotations

import random
from typing import Any

from judge_server import _phrase, _seed_for, _text_of, request_schema

MLFLOW_SCHEMA = "JudgeEvaluation"


def _is_mlflow(body: dict) -> bool:
    schema, _mode = request_schema(body)
    return bool(schema) and schema.get("title") == MLFLOW_SCHEMA


def answer_fn(body: dict, seed: int = 13) -> Any:
    """``{"result": "yes"|"no", "rationale": ...}`` for MLflow's judges; None (the
    server's default) for any other request."""
    if not _is_mlflow(body):
        return None
    rng = random.Random(_seed_for(_text_of(body), seed))
    return {"result": rng.choice(("yes", "no")), "rationale": "The " + _phrase(rng) + "."}


def unknown_fn(body: dict) -> Any:
    """A label that is neither yes nor no."""
    return {"result": "maybe", "rationale": "undecided"} if _is_mlflow(body) else None
