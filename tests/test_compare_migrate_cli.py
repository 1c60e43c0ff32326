"""`compare --jury` and `migrate` end to end against the loopback judge (issue 15's
done-when): the jury's lines and the threshold translations are written, `migrate`
writes migration.json and its exit code follows --max-flips. Plumbing only: the loopback
judge's answers are synthetic, so no figure here says anything about quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import as_read
from typer.testing import CliRunner

from unified.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"

pytestmark = [pytest.mark.slow, pytest.mark.ragas, pytest.mark.deepeval]


def invoke(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def lines(path: Path) -> list[dict]:
    """A JSONL file\'s lines; score lines in the full shape every reader sees (full_line)."""
    return [as_read(json.loads(x)) for x in path.read_text().splitlines() if x.strip()]


def test_compare_with_a_jury_writes_jury_lines_and_translations(tmp_path, judge_server):
    out = tmp_path / "cmp"
    r = invoke(
        "compare",
        DATA,
        "--backends",
        "native,ragas,deepeval",
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--max-samples",
        "6",
        "--jury",
        "median",
        "--out",
        out,
        "--quiet",
    )
    assert r.exit_code in (0, 3), r.output
    rows = lines(out / "scores.jsonl")
    jury = [d for d in rows if d["backend"] == "jury"]
    members = {d["sample_id"] for d in rows if d["backend"] != "jury" and d["value"] is not None}
    assert {d["sample_id"] for d in jury} == members and len(jury) == len(members)
    assert all(set(d["details"]["members"]) == {"native", "ragas", "deepeval"} for d in jury)
    cc = json.loads((out / "crosscheck.json").read_text())
    pairs = cc["metrics"]["faithfulness"]["pairs"]
    # the jury is not paired with its own members: it has a section of its own
    assert "jury" not in {b for p in pairs for b in (p["a"], p["b"])}
    assert set(cc["metrics"]["faithfulness"]["jury"]["members"]) == {"native", "ragas", "deepeval"}
    assert all(len(p["threshold_translation"]) == 2 for p in pairs)  # both directions of every pair
    summary = json.loads((out / "summary.json").read_text())
    assert {(a["metric"], a["backend"]) for a in summary["aggregates"]} >= {("faithfulness", "jury")}
    # a rerun recomputes the jury instead of adding a second line per sample
    invoke(
        "compare",
        DATA,
        "--backends",
        "native,ragas,deepeval",
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--max-samples",
        "6",
        "--out",
        out,
        "--quiet",
    )
    again = [d for d in lines(out / "scores.jsonl") if d["backend"] == "jury"]
    assert len(again) == len(jury)


def test_migrate_writes_the_report_and_its_exit_code_follows_max_flips(tmp_path, judge_server):
    out = tmp_path / "mig"
    args = [
        "migrate",
        DATA,
        "--from-backend",
        "deepeval",
        "--to-backend",
        "ragas",
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--max-samples",
        "6",
        "--out",
        out,
        "--fail-under",
        "faithfulness=5",
        "--allow-errors",
        "--max-error-rate",
        "1",
    ]
    r = invoke(*args, "--max-flips", "6")
    assert r.exit_code == 0 or "FAIL faithfulness" in r.output, r.output
    m = json.loads((out / "migration.json").read_text())
    fm = m["metrics"]["faithfulness"]
    assert m["from"] == "deepeval" and m["to"] == "ragas"
    assert fm["names"]["deepeval"] == "FaithfulnessMetric" and fm["names"]["ragas"] == "Faithfulness"
    n_flips = fm["n_flips"]
    strict = invoke(*args, "--max-flips", "0")
    assert strict.exit_code == (1 if n_flips > 0 else r.exit_code), strict.output


def test_the_report_shows_translations_people_and_the_migration(tmp_path, judge_server):
    """The page renders crosscheck.json's translations and calibration against people, and
    migration.json's flips (issue 15: 'in the CLI table and the report')."""
    data = tmp_path / "labelled.jsonl"
    rows = [json.loads(x) for x in DATA.read_text().splitlines()[:8]]
    for i, r in enumerate(rows):
        r["human_faithful"] = "yes" if r["metadata"]["expect"] == "good" else "no"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "cmp"
    r = invoke(
        "compare",
        data,
        "--backends",
        "native,embedding",
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--label",
        "faithfulness=human_faithful",
        "--out",
        out,
        "--quiet",
        "--allow-errors",
    )
    assert r.exit_code == 0, r.output
    page = (out / "report.html").read_text()
    assert "id='thresholds'" in page and "native → embedding" in page
    assert "id='people'" in page and "PPI pass rate" in page
    mig = tmp_path / "mig"
    r = invoke(
        "migrate",
        data,
        "--from-backend",
        "embedding",
        "--to-backend",
        "native",
        "--metrics",
        "faithfulness",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--out",
        mig,
        "--quiet",
        "--allow-errors",
        "--max-flips",
        "100",
    )
    assert r.exit_code == 0, r.output
    assert "id='migration'" in (mig / "report.html").read_text()
    # the lines change after compare and migrate wrote their files (a run into the folder,
    # an edit): the page no longer shows their alpha, translations or flips as current
    for folder, gone, name in ((out, "id='thresholds'", "crosscheck.json"), (mig, "<h2>Migration ", "migration.json")):
        lines = (folder / "scores.jsonl").read_text().splitlines(keepends=True)
        (folder / "scores.jsonl").write_text("".join(lines[:-1]))
        assert invoke("report", folder).exit_code == 0
        page = (folder / "report.html").read_text()
        assert f"{name}: not shown" in page and gone not in page and "unified-eval " in page


def test_migrate_fail_under_gates_the_means_as_on_run(tmp_path, judge_server):
    """Issue 24 item 2: migrate's --fail-under means what it means on run (exit 1 when a
    mean is below its bound), whatever --max-flips allows; --from is the file layout."""
    out = tmp_path / "mig"
    common = ["--metrics", "faithfulness", "--base-url", judge_server.base_url, "--model", "m", "--out", out]
    common += ["--max-samples", "6", "--quiet", "--allow-errors", "--max-error-rate", "1", "--max-flips", "100"]
    r = invoke(
        "migrate",
        DATA,
        "--from-backend",
        "embedding",
        "--to-backend",
        "native",
        *common,
        "--fail-under",
        "faithfulness=10",
    )
    means = [a["mean"] for a in json.loads((out / "summary.json").read_text())["aggregates"] if a["mean"] is not None]
    assert means and min(means) < 10.0
    assert r.exit_code == 1, r.output
    assert "FAIL faithfulness" in r.output
    old = invoke("migrate", DATA, "--from", "embedding", "--to", "native", *common)
    assert old.exit_code == 2 and "--from-backend" in old.output, old.output


def test_migrate_help_names_the_backend_flags_and_the_max_flips_default():
    text = invoke("migrate", "--help").output
    assert "--from-backend" in text and "--to-backend" in text
    assert "default 0" in " ".join(text.split())
