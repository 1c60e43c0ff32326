"""`unified-eval export` and `report --worst` (issue 45, item 11): a run folder's per-sample
scores as CSV / Parquet / JSON Lines with `details` as JSON (never a Python repr) and
spreadsheet formulas neutralised, and the lowest-scoring samples by file and row. Real
processes on a real run of the deterministic retrieval metrics (no judge)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import cli_env

ROOT = Path(__file__).resolve().parents[1]
CLI = Path(sys.executable).parent / "unified-eval"


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = cli_env() | {"COLUMNS": "200"}
    return subprocess.run([str(CLI), *args], env=env, capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("export")
    rows = [json.loads(x) for x in (ROOT / "examples" / "data" / "rag_examples.jsonl").read_text().splitlines()[:6]]
    rows[0]["response"] = '=HYPERLINK("http://example.invalid")'  # a formula a spreadsheet would run
    (where / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    r = _cli(where, "run", "data.jsonl", "--metrics", "precision@3,mrr", "--out", "run")
    assert r.returncode == 0, r.stdout + r.stderr
    return where


def test_export_csv_has_one_row_per_task_and_details_as_json(run_dir):
    r = _cli(run_dir, "export", "run", "--out", "scores.csv")
    assert r.returncode == 0 and "wrote 12 row(s) to scores.csv" in r.stdout, r.stdout + r.stderr
    df = pd.read_csv(run_dir / "scores.csv")
    assert len(df) == 12 and set(df["metric"]) == {"precision@3", "mrr"}
    lines = [json.loads(x) for x in (run_dir / "run" / "scores.jsonl").read_text().splitlines()]
    by_key = {(d["metric"], d["sample_id"]): d for d in lines}
    for _, row in df.iterrows():
        line = by_key[(row["metric"], row["sample_id"])]
        assert row["value"] == pytest.approx(line["value"]) and row["row"] == line["row"]
        assert json.loads(row["details"]) == (line.get("details") or {})  # JSON, not "{'k': …}"
    first = df[df["sample_id"] == "q01"].iloc[0]
    assert first["response"].startswith("'=HYPERLINK")  # neutralised: no formula runs on open


def test_export_parquet_and_jsonl_read_back(run_dir):
    assert _cli(run_dir, "export", "run", "--out", "s.parquet").returncode == 0
    pq = pd.read_parquet(run_dir / "s.parquet")
    assert len(pq) == 12 and all(isinstance(json.loads(d), dict) for d in pq["details"])
    assert _cli(run_dir, "export", "run", "--out", "s.out", "--format", "jsonl").returncode == 0
    records = [json.loads(x) for x in (run_dir / "s.out").read_text().splitlines()]
    assert len(records) == 12 and all(isinstance(d["details"], dict) for d in records)
    bad = _cli(run_dir, "export", "run", "--out", "s.txt")
    assert bad.returncode == 2 and "choose one of csv, parquet, jsonl" in bad.stderr
    assert not (run_dir / "s.txt").exists()


def test_report_worst_lists_the_lowest_samples_by_file_and_row(run_dir):
    r = _cli(run_dir, "report", "run", "--worst", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [json.loads(x) for x in (run_dir / "run" / "scores.jsonl").read_text().splitlines()]
    mrr = sorted((d["value"], d["sample_id"], d["row"]) for d in lines if d["metric"] == "mrr")[:2]
    block = r.stdout.split("mrr (native) — lowest 2", 1)[1]
    for value, sid, row in mrr:
        assert f"data.jsonl:{row}" in block and sid in block and f"{value:.2f}" in block, block
