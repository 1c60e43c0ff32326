"""Messages in the user's own vocabulary (issue 45, item 9): a DeepEval-shaped file is told
`expected_output` is missing, not our `reference`; a misspelt field gets a "did you mean";
the end of a run names the file and row of a failed task, not a content hash.

The CLI tests run `unified-eval` as a process on real files; the run uses the loopback
judge (plumbing only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support import cli_env

from unified.adapters import missing_field_error
from unified.data.io import read_samples
from unified.metrics import parse_metric
from unified.sample import did_you_mean

CLI = Path(sys.executable).parent / "unified-eval"

DEEPEVAL_ROWS = [
    {
        "input": "What is the capital of France?",
        "actual_output": "Paris.",
        "expected_output": "Paris",
        "retrieval_context": ["Paris is the capital of France."],
    },
    {"input": "Where is the Seine?", "actual_output": "In Paris.", "retrieval_context": ["The Seine is in Paris."]},
    {
        "input": "Who wrote Hamlet?",
        "actual_ouput": "Shakespeare.",
        "expected_output": "Shakespeare",
        "retrieval_context": ["Hamlet is a play by Shakespeare."],
    },
]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env() | {"COLUMNS": "250"}
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_did_you_mean_finds_a_misspelt_field_and_nothing_for_a_real_extra():
    assert did_you_mean("actual_ouput") == "; did you mean 'actual_output'?"
    assert did_you_mean("retreived_contexts") == "; did you mean 'retrieved_contexts'?"
    assert did_you_mean("groundtruth") == "; did you mean 'ground_truth'?"
    assert did_you_mean("category") == "" and did_you_mean("customer_tier") == ""


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"question": "q?", "answer": "a", "contexts": ["c"]}, "field 'ground_truth' (reference) is missing"),
        ({"prompt": "q?", "content": "a", "context": ["c"]}, "field 'reference' is missing"),  # dingo's own name
        ({"user_input": "q?", "response": "a", "retrieved_contexts": ["c"]}, "field 'reference' is missing"),
        ({"task_input": "q?", "task_output": "a", "task_context": ["c"]}, "field 'gold_answer' (reference) is missing"),
    ],
)
def test_a_missing_field_is_named_as_the_file_names_it(tmp_path, row, expected):
    reader = read_samples(_write(tmp_path / "rows.jsonl", [row]))
    (sample,) = [s for _, s in reader.rows()]
    msg = missing_field_error(sample, parse_metric("answer_correctness"), names=reader.field_names)
    assert msg is not None and expected in msg, msg


def test_validate_speaks_deepeval_to_a_deepeval_file(tmp_path):
    data = _write(tmp_path / "de.jsonl", DEEPEVAL_ROWS)
    r = _cli(tmp_path, "validate", str(data), "--metrics", "answer_correctness")
    out = r.stdout + r.stderr
    assert "de.jsonl:2: sample" in out and "field 'expected_output' (reference) is missing or empty" in out, out
    assert "field 'reference' is missing" not in out, out
    assert "de.jsonl:3: sample" in out and "field 'actual_output' (response) is missing or empty" in out, out
    assert "unknown field 'actual_ouput' kept in metadata (first at de.jsonl:3); did you mean 'actual_output'?" in out


@pytest.mark.slow
def test_the_end_of_a_run_names_the_file_and_row(tmp_path, judge_server):
    rows = [dict(r, id=f"case-{i}") if i == 1 else r for i, r in enumerate(DEEPEVAL_ROWS)]
    data = _write(tmp_path / "de.jsonl", rows)
    out_dir = tmp_path / "out"
    r = _cli(
        tmp_path,
        "run",
        data.name,  # as the user types it (cwd is tmp_path): the message names it so
        "--metrics",
        "answer_correctness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--out",
        str(out_dir),
    )
    assert r.returncode == 3, r.stdout + r.stderr  # failed tasks: never exit 0
    # row 2 has an id of its own: the row and the id; row 3 has a content hash: the row alone
    assert (
        "field 'expected_output' (reference) is missing or empty (needed by answer_correctness)  "
        "(e.g. de.jsonl:2, sample 'case-1', answer_correctness (native))" in r.stderr
    ), r.stderr
    assert "(e.g. de.jsonl:3, answer_correctness (native))" in r.stderr, r.stderr
    lines = [json.loads(x) for x in (out_dir / "scores.jsonl").read_text().splitlines()]
    hashed = next(d for d in lines if d.get("row") == 3)
    assert hashed["sample_id"] not in r.stderr  # the hash is in the folder, not in the message
    groups = json.loads((out_dir / "summary.json").read_text())["error_groups"]
    assert {g["example"]["row"] for g in groups} == {2, 3}
