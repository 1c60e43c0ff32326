"""The API, the notebook and the CLI as a user meets them (issue 12's done-when): the
README's ten lines inside a running event loop, the judge from Python with the shared
cache, and the CLI's one vocabulary."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from unified.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"


def invoke(*args, env=None):
    return CliRunner().invoke(app, [str(a) for a in args], env=env)


def readme_python_block() -> str:
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API in ten lines") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


# ---------------------------------------------------------------- the notebook


async def test_the_readme_ten_lines_run_inside_a_running_event_loop(tmp_path, monkeypatch, judge_server):
    """Jupyter runs every cell inside an event loop; the README's lines must work there
    as written (only the judge's URL points at the loopback server)."""
    monkeypatch.chdir(ROOT)
    code = readme_python_block().replace("http://127.0.0.1:8080/v1", judge_server.base_url)
    code = code.replace('"runs/quick', f'"{tmp_path}/quick')
    assert len(code.strip().splitlines()) <= 10
    scope: dict = {}
    exec(compile(code, "docs/python-api.md", "exec"), scope)
    report = scope["report"]
    rows = report.to_pandas(samples=True)
    assert set(rows["metric"]) == {"precision@3", "ndcg@5", "faithfulness", "context_recall"}
    assert {"user_input", "response", "reference"} <= set(rows.columns)
    assert rows["value"].notna().all() and judge_server.chat_count > 0
    assert (tmp_path / "quick" / "report.html").exists()
    assert "<table" in report._repr_html_() and "runs" not in repr(report).split()[0]


def test_judge_from_python_uses_the_shared_cache_across_folders(tmp_path, judge_server):
    from unified import evaluate

    judge = {"base_url": judge_server.base_url, "model": "loopback"}
    first = evaluate(
        DATA, "faithfulness", ["native"], judge=judge, out=tmp_path / "a", quiet=True, max_samples=3, single_judge=True
    )
    paid = judge_server.chat_count
    assert paid > 0 and all(s.ok for s in first.scores)
    second = evaluate(
        DATA, "faithfulness", ["native"], judge=judge, out=tmp_path / "b", quiet=True, max_samples=3, single_judge=True
    )
    assert judge_server.chat_count == paid  # a new folder, 0 calls: the cache outlives run folders
    assert {s.sample_id: s.value for s in second.scores} == {s.sample_id: s.value for s in first.scores}
    assert sum(s.cost.cache_hits for s in second.scores) == paid


# ---------------------------------------------------------------- one vocabulary


def test_run_takes_backends_and_compare_takes_backend(tmp_path):
    r = invoke("run", DATA, "--metrics", "mrr", "--backends", "native", "--out", tmp_path / "r", "--quiet")
    assert r.exit_code == 0, r.output
    r = invoke("compare", DATA, "--metrics", "mrr", "--backend", "native,embedding", "--out", tmp_path / "c", "--quiet")
    assert r.exit_code == 0, r.output
    # only native implements mrr: said, and no crosscheck.json pretending to compare
    assert "no crosscheck.json written" in r.output and not (tmp_path / "c" / "crosscheck.json").exists()


def test_compare_dry_run_calls_nothing(tmp_path, judge_server):
    r = invoke(
        "compare",
        DATA,
        "--metrics",
        "faithfulness,mrr",
        "--backends",
        "native,ragas",
        "--dry-run",
        "--base-url",
        judge_server.base_url,
        "--model",
        "m",
        "--out",
        tmp_path / "o",
    )
    assert r.exit_code == 0, r.output
    assert "dry run: 28 samples" in r.output and "ragas" in r.output
    assert judge_server.chat_count == 0 and not (tmp_path / "o").exists()


def test_compare_says_when_a_metric_has_fewer_than_two_backends(tmp_path):
    r = invoke(
        "compare",
        DATA,
        "--metrics",
        "mrr,semantic_similarity",
        "--backends",
        "native,embedding",
        "--out",
        tmp_path / "o",
        "--quiet",
    )
    assert r.exit_code == 0, r.output
    assert "only native scored mrr: nothing to compare it with" in r.output
    cc = json.loads((tmp_path / "o" / "crosscheck.json").read_text())
    assert not cc["metrics"]["mrr"]["pairs"]  # one backend: no pair pretends to agree
    assert [(p["a"], p["b"]) for p in cc["metrics"]["semantic_similarity"]["pairs"]] == [("embedding", "native")]


@pytest.mark.parametrize(
    "command", ["run", "compare", "migrate", "validate", "convert", "report", "diff", "metrics", "cache"]
)
def test_every_option_has_help_readable_at_80_columns(command):
    r = invoke(command, "--help", env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert r.exit_code == 0, r.output
    assert "…" not in r.output, r.output  # nothing cut
    assert all(len(line) <= 80 for line in r.output.splitlines())
    from typer.main import get_command

    cmd = get_command(app).commands[command]  # type: ignore[attr-defined]
    for sub in getattr(cmd, "commands", {None: cmd}).values():
        for p in sub.params:
            if p.param_type_name == "option" and p.name != "help":
                assert p.help, f"{command} {p.opts}: no help text"


def test_metrics_name_prints_formula_fields_thresholds_and_names():
    r = invoke("metrics", "ContextualRecallMetric")
    assert r.exit_code == 0, r.output
    out = r.output
    assert out.startswith("context_recall (llm)")
    assert "needs: user_input, retrieved_contexts, reference" in out
    for backend, name in (("ragas", "ContextRecall"), ("deepeval", "ContextualRecallMetric")):
        assert re.search(rf"{backend}\s+│\s+5\s+│\s+{name}", out), out
    assert invoke("metrics", "nosuch").exit_code == 2


def test_metric_matrix_lists_each_metric_once():
    r = invoke("metrics")
    # the backends come in as many tables as the terminal's width needs, then the facts
    # table; a row may wrap over several lines, its name on the first
    tables: list[list[str]] = []
    for line in r.output.splitlines():
        if "metrics × backends" in line or "metrics: what they need" in line:
            tables.append([])
        elif line.startswith("│") and tables and (name := line.split("│")[1].strip()):
            tables[-1].append(name)
    assert len(tables) >= 2, r.output[:2000]
    for rows in tables:
        assert len(rows) == len(set(rows)) and "semantic_similarity" in rows and "precision@k" in rows
        assert "context_entity_recall" in rows  # never cut to "cont…"
        assert rows == tables[0]  # every table lists every metric, in one order


def test_validate_imports_no_llm_client_and_is_quick():
    code = (
        "import sys, time; t = time.perf_counter()\n"
        "from typer.testing import CliRunner; from unified.cli.app import app\n"
        f"r = CliRunner().invoke(app, ['validate', {str(DATA)!r}, '--metrics', 'faithfulness'])\n"
        "print(r.exit_code, 'openai' in sys.modules, 'ragas' in sys.modules, 'torch' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["0", "False", "False", "False"], r.stderr[-2000:]


def test_dry_run_prices_the_calls_and_says_what_a_run_would_skip(tmp_path, monkeypatch):
    for k in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(k, raising=False)
    r = invoke("run", DATA, "--metrics", "faithfulness,mrr", "--dry-run")
    assert r.exit_code == 0 and "skipping faithfulness (native): no LLM judge configured" in r.output
    assert "native │ faithfulness" not in r.output.replace("  ", " ")
    r = invoke(
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--dry-run",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "gpt-4o-mini",
        "--price",
        "gpt-4o-mini=0.15/0.60",
    )
    assert r.exit_code == 0, r.output
    row = next(line for line in r.output.splitlines() if "faithfulness" in line and "│" in line)
    cells = [c.strip() for c in row.split("│") if c.strip()]
    tokens_in, tokens_out, usd, usd_batch = int(cells[5]), int(cells[6]), float(cells[-2]), float(cells[-1])
    assert usd == pytest.approx((tokens_in * 0.15 + tokens_out * 0.60) / 1e6, abs=1e-6)
    # the same calls through the Batch API: OpenAI's 50 % batch discount (unified.judge.prices)
    assert usd_batch == pytest.approx(usd / 2, abs=1e-6)


def _dry_row(output: str, backend: str, metric: str) -> dict[str, str]:
    lines = [line for line in output.splitlines() if "│" in line or "┃" in line]
    head = [c.strip() for c in lines[0].replace("┃", "│").split("│") if c.strip()]
    for line in lines[1:]:
        cells = [c.strip() for c in line.split("│") if c.strip()]
        if cells[:2] == [backend, metric]:
            return dict(zip(head, cells))
    raise AssertionError(f"no {backend}/{metric} row in:\n{output}")


def test_dry_run_prices_judge_b_share_at_judge_b_price(monkeypatch):
    """A dual-judge step asks each judge once; judge B's calls are priced at B's model."""
    for k in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(k, raising=False)
    base = [
        "run",
        DATA,
        "--metrics",
        "faithfulness",
        "--backend",
        "native,ragas",
        "--dry-run",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "a",
        "--judge2-model",
        "b",
        "--price",
        "a=1/2",
    ]
    once = _dry_row(invoke(*base, "--single-judge").output, "native", "faithfulness")
    r = invoke(*base, "--price", "b=10/20")
    assert r.exit_code == 0, r.output
    dual = _dry_row(r.output, "native", "faithfulness")
    b_in, b_out = (int(dual[k]) - int(once[k]) for k in ("input_tokens", "output_tokens"))
    assert int(dual["judge_b_calls"]) == int(dual["calls"]) - int(once["calls"]) > 0
    a_in, a_out = int(dual["input_tokens"]) - b_in, int(dual["output_tokens"]) - b_out
    assert float(dual["usd"]) == pytest.approx((a_in + 2 * a_out + 10 * b_in + 20 * b_out) / 1e6, abs=1e-6)
    ragas = _dry_row(r.output, "ragas", "faithfulness")  # ragas judges with A alone
    assert ragas["judge_b_calls"] == "0"
    assert float(ragas["usd"]) == pytest.approx(
        (int(ragas["input_tokens"]) + 2 * int(ragas["output_tokens"])) / 1e6, abs=1e-6
    )
    r = invoke(*base)  # no price for b: unknown, and said
    assert (
        _dry_row(r.output, "native", "faithfulness")["usd"] == "—"
        and _dry_row(r.output, "ragas", "faithfulness")["usd"] != "—"
    )
    assert "no price for model 'b'" in r.output


def test_to_pandas_rows_follow_the_input_not_the_finishing_order(tmp_path):
    import asyncio
    import random

    from unified import Sample, evaluate
    from unified.adapters import Backend
    from unified.scores import Score

    class Jittery(Backend):
        name = "jittery"
        metrics = frozenset({"mrr", "precision_at_k"})
        uses_judges = False

        async def score(self, sample, metrics):
            await asyncio.sleep(random.random() / 50)
            return [Score.from_raw(m.name, self.name, sample.id, 0.5) for m in metrics]

    samples = [Sample(id=f"s{i}", user_input=f"q{i}?") for i in range(12)]
    orders = []
    for n in range(2):
        report = evaluate(samples, "precision@3,mrr", [Jittery()], out=tmp_path / str(n), quiet=True)
        orders.append(list(zip(report.to_pandas()["sample_id"], report.to_pandas()["metric"])))
    assert orders[0] == orders[1]
    assert [sid for sid, _ in orders[0][::2]] == [s.id for s in samples]  # as read
    assert [m for _, m in orders[0][:2]] == ["precision@3", "mrr"]  # as asked


def test_dry_run_into_a_folder_counts_only_what_a_run_would_still_score(tmp_path, monkeypatch):
    """A dry run with --out of a half-done folder estimated every task, as if nothing were
    there: a resumed nightly job looked as dear as a fresh one. Failed tasks are left out
    as a run leaves them, unless --retry-errors."""
    import sys as _sys

    _sys.path.insert(0, str(ROOT / "tests"))
    from judge_server import JudgeServer

    for k in ("UNIFIED_JUDGE_BASE_URL", "UNIFIED_JUDGE_MODEL"):
        monkeypatch.delenv(k, raising=False)
    lines = DATA.read_text().splitlines()
    first4 = tmp_path / "four.jsonl"
    first4.write_text("\n".join(lines[:4]) + "\n")
    rest = tmp_path / "rest.jsonl"  # the samples the first run does not reach
    rest.write_text("\n".join(lines[2:4]) + "\n")
    out = tmp_path / "o"
    judge = ["--model", "m", "--single-judge", "--price", "m=1/2"]
    with JudgeServer(answer_fn=lambda body: "no verdict") as srv:  # faithfulness fails, mrr scores
        first = invoke(
            "run", first4, "--metrics", "faithfulness,mrr", *judge, "--base-url", srv.base_url,
            "--max-samples", "2", "--out", out, "-q",
        )  # fmt: skip
    assert first.exit_code == 3, first.output
    dry = ["run", first4, "--metrics", "faithfulness,mrr", *judge, "--base-url", "http://127.0.0.1:9/v1", "--dry-run"]
    held = invoke(*dry, "--out", out)
    assert held.exit_code == 0, held.output
    expected = _dry_row(invoke(*dry[:1], rest, *dry[2:]).output, "native", "faithfulness")
    row = _dry_row(held.output, "native", "faithfulness")
    assert row == expected and row["samples"] == "2"
    assert _dry_row(held.output, "native", "mrr")["samples"] == "2"
    assert "4 task(s) already there are left out" in " ".join(held.output.split())
    retried = invoke(*dry, "--out", out, "--retry-errors")
    assert _dry_row(retried.output, "native", "faithfulness") == _dry_row(invoke(*dry).output, "native", "faithfulness")
    assert _dry_row(retried.output, "native", "mrr")["samples"] == "2"
    assert "2 task(s) already there are left out" in " ".join(retried.output.split())
    for start_over in ("--fresh", "--no-resume"):  # either clears the folder: every task is scored
        fresh = invoke(*dry, "--out", out, start_over)
        assert _dry_row(fresh.output, "native", "mrr")["samples"] == "4" and "left out" not in fresh.output
