"""`migrate`'s printed output agrees with itself (issue 45, item 7): every flipped value is
printed on the side of the printed bound its verdict says, the undefined translation names
the backend (not an internal "a"/"b"), the gate line states the bound the run's gate uses,
and a translation from a handful of samples says it is a rough guide.

The CLI test runs `unified-eval` as a process against the loopback judge: plumbing only,
its synthetic answers say nothing about quality (they make the embedding backend's
context_precision 0 on every sample, which is what the undefined translation needs)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from support import cli_env

from unified.analysis.migrate import (
    bound_text,
    migration_report,
    render_migration,
    short_bound,
    value_text,
)
from unified.report.html_compare import render_migration_html
from unified.scores import Score

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"
CLI = Path(sys.executable).parent / "unified-eval"


def _line(backend: str, sid: str, value: float) -> Score:
    return Score.from_raw("faithfulness", backend, sid, value, raw_range=(0, 10), threshold=7.0, reason="r")


def _near_the_top() -> list[Score]:
    """The old backend spread over 0–10; the new one crowded just under 10, so the
    translated bound falls between 9.9991 and 9.9996 — values that print as "10.00"."""
    old = [2.0, 3.0, 4.0, 5.0, 6.0, 7.5, 8.0, 8.5, 9.0, 9.5]
    new = [9.9990, 9.9991, 9.9996, 9.9997, 9.9998, 9.9991, 10.0, 10.0, 9.9990, 9.9996]
    return [_line("deepeval", f"s{i}", v) for i, v in enumerate(old)] + [
        _line("ragas", f"s{i}", v) for i, v in enumerate(new)
    ]


def test_value_text_never_prints_a_value_across_its_bound():
    assert value_text(9.9996, 10.0) == "9.9996"  # not "10.00": it fails at 10
    assert value_text(10.0, 10.0) == "10.00"
    assert value_text(6.5, 7.0) == "6.50"
    assert value_text(6.999, 7.0) == "6.999"
    assert bound_text(7.0) == "7" and bound_text(5.83) == "5.83" and bound_text(9.9995) == "9.9995"
    values = np.array([9.999, 9.9991, 9.9996, 10.0])
    # the midpoint 9.99935 shortened to the fewest decimals that pass the same two samples:
    # 2 and 3 decimals (10.0, 9.999) would pass one and four; 4 decimals lands inside the gap
    s = short_bound(9.99935, values)
    assert 9.9991 < s < 9.9996 and s in (9.9993, 9.9994) and int(np.sum(values >= s)) == 2
    assert short_bound(4.50000001, np.array([4.0, 5.0])) == 4.5


def test_every_flip_is_printed_on_the_side_its_verdict_says():
    m = migration_report(_near_the_top(), None, "deepeval", "ragas", gates={"faithfulness": 7.0})
    r = m["metrics"]["faithfulness"]
    used = r["threshold_used"]
    assert used == r["threshold_to"] and 9.999 < used < 10.0
    assert r["flips"], "the constructed data has flips"
    text = render_migration(m, width=200, max_flips=0)
    header = re.search(r"ragas \(pass ≥ ([0-9.]+)\)", text)
    assert header and float(header.group(1)) == used  # the printed bound is the bound used
    for f in r["flips"]:
        # the printed value, compared with the printed bound, gives the verdict the report says
        shown = value_text(f["to"]["value"], used)
        assert (float(shown) >= float(header.group(1))) == f["to"]["passed"], (shown, f)
        assert re.search(rf"│ {f['sample_id']} .*│ {re.escape(shown)} ", text), text
    page = render_migration_html(m)
    assert all(value_text(f["to"]["value"], used) in page for f in r["flips"])
    # the figures in migration.json agree with the verdicts too
    assert all((f["to"]["value"] >= used) == f["to"]["passed"] for f in r["flips"])


def _migrate(tmp_path: Path, server, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [
        str(CLI),
        "migrate",
        str(DATA),
        "--from-backend",
        "native",
        "--to-backend",
        "embedding",
        "--metrics",
        "faithfulness,context_precision",
        "--base-url",
        server.base_url,
        "--model",
        "m",
        "--embedding",
        server.base_url,
        "--embedding-model",
        "e",
        "--max-samples",
        "5",
        "--out",
        str(tmp_path / "mig"),
        *extra,
    ]
    env = cli_env() | {"COLUMNS": "250"}
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.mark.slow
def test_migrate_says_what_its_gate_compares_and_names_the_backends(tmp_path, judge_server):
    r = _migrate(tmp_path, judge_server, "--fail-under", "context_precision=7", "--fail-under", "faithfulness=7")
    out = r.stdout + r.stderr
    assert r.returncode == 1, out  # the gates fail (and the flips): exit 1, not a crash
    m = json.loads((tmp_path / "mig" / "migration.json").read_text())
    cp = m["metrics"]["context_precision"]
    assert cp["threshold_to"] == "undefined" and cp["threshold_used"] == 7.0 and cp["n"] == 5
    # the reason names the backend, never the statistics module's "a"/"b"
    assert "embedding has a single distinct value (0.0) on all 5 samples" in out, out
    assert not re.search(r"\b[ab] has a single distinct value", out), out
    # the gate line compares with the bound the run's gate uses (7), never "≥ undefined? undefined"
    assert "undefined?" not in out, out
    assert "embedding 0.00 ≥ 7? no; no translated bound for embedding" in out, out
    assert "FAIL context_precision (embedding): mean 0.00 < 7.00" in out, out  # the run's own gate line
    assert "flip at 7 → 7 (unchanged: no translation)" in out, out
    # a translation from 5 samples is flagged as a rough guide
    fa = m["metrics"]["faithfulness"]
    assert fa["threshold_to"] != "undefined" and fa["n"] == 5
    assert any("translated from only 5 samples" in n for n in fa["notes"]), fa["notes"]
    assert "translated from only 5 samples scored by both" in out, out
    assert f"at the translated bound embedding {value_text(fa['gate']['mean_to'], fa['threshold_to'])}" in out, out
