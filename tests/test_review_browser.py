"""`unified-eval review` in a real browser (issue 43's done-when): Debian's chromium driven
by Playwright against a real `unified-eval review` process on a `compare --jury` run folder
of native, ragas and deepeval (loopback judge). The queue comes in disagreement order,
three samples are labelled by keyboard, a reload and a second server resume at the fourth,
labels.jsonl holds three lines that `compare --labels` and `calibrate --labels` take, and
hostile sample text renders as text. Plumbing only: the loopback judge's values are
synthetic, so no figure here says anything about quality."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from judge_server import JudgeServer
from review_runs import BIG_CONTEXT, HOSTILE_ANSWER, RTL_QUESTION, ReviewServer, hostile_run
from typer.testing import CliRunner

from unified.cli.app import app

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.ragas,
    pytest.mark.deepeval,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium"),
]


def compare_args(out: Path, base_url: str) -> list[str]:
    return [
        "compare", str(DATA), "--backends", "native,ragas,deepeval", "--metrics", "faithfulness",
        "--base-url", base_url, "--model", "m", "--max-samples", "8", "--jury", "median", "--out", str(out), "--quiet",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    """One loopback judge for the module: the rerun with --labels must see the same judge
    URL (it is part of every task's configuration), or it would score everything again."""
    pytest.importorskip("ragas")
    pytest.importorskip("deepeval")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")
    mp.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg")))
    try:
        with JudgeServer() as srv:
            yield srv
    finally:
        mp.undo()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)  # its own download cannot work here
        yield b
        b.close()


def shown(page) -> str:
    return page.inner_text("#sample-id")


def press(page, key: str) -> None:
    with page.expect_navigation():
        page.keyboard.press(key)


def voices(run: Path) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for raw in (run / "scores.jsonl").read_text().splitlines():
        d = json.loads(raw)
        if d["backend"] != "jury" and d.get("value") is not None:
            out.setdefault(d["sample_id"], []).append(d)
    return out


def test_label_three_by_keyboard_reload_resume_and_compare_takes_them(tmp_path, judge, browser):
    run = tmp_path / "cmp"
    r = CliRunner().invoke(app, compare_args(run, judge.base_url))
    assert r.exit_code in (0, 3), r.output
    with ReviewServer(run, "ana") as srv:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(srv.url + "&metric=faithfulness")
        order = [shown(page)]
        while page.locator("#next").count():
            press(page, "n" if len(order) % 2 else "ArrowRight")
            order.append(shown(page))
        # the queue in disagreement order: every pass/fail split first, widest spread first
        per = voices(run)
        assert sorted(order) == sorted(per)
        splits = [len({d["passed"] for d in per[s]}) == 2 for s in order]
        assert splits == sorted(splits, reverse=True) and splits[0], splits
        split_ids = [s for s, split in zip(order, splits) if split]
        spread = [max(d["value"] for d in per[s]) - min(d["value"] for d in per[s]) for s in split_ids]
        assert spread == sorted(spread, reverse=True)
        press(page, "p")
        assert shown(page) == order[-2]
        page.goto(srv.url + "&metric=faithfulness")
        assert shown(page) == order[0] and page.locator(".metric.active").count() == 1
        for key in ("1", "0", "1"):
            press(page, key)
        page.reload()
        assert shown(page) == order[3]
        assert page.inner_text("#position") == f"sample 4 of {len(order)} · {len(order) - 3} open"
        page.keyboard.press("?")
        assert page.locator("#keys").is_visible()
        page.close()  # closing the browser loses nothing: each label is on disk already
    assert srv.proc.returncode == 0, srv.proc.stderr.read()
    lines = [json.loads(x) for x in (run / "labels.jsonl").read_text().splitlines()]
    assert [(d["sample_id"], d["metric"], d["label"], d["annotator"]) for d in lines] == [
        (order[0], "faithfulness", 1, "ana"),
        (order[1], "faithfulness", 0, "ana"),
        (order[2], "faithfulness", 1, "ana"),
    ]
    with ReviewServer(run, "ana") as again:  # a second `review` resumes where the first stopped
        page = browser.new_page()
        page.goto(again.url + "&metric=faithfulness")
        assert shown(page) == order[3]
        press(page, "p")
        assert shown(page) == order[2] and "your label: 1" in page.inner_text(".metric")
        page.close()
        assert again.stop(signal.SIGTERM) == 0  # a service manager's stop ends it as Ctrl-C does
    # the format compare --labels and calibrate --labels read
    r = CliRunner().invoke(app, [*compare_args(run, judge.base_url), "--labels", str(run / "labels.jsonl")])
    assert r.exit_code in (0, 3) and "error" not in r.output, r.output
    human = json.loads((run / "crosscheck.json").read_text())["metrics"]["faithfulness"]["human"]
    assert human["labelled"] == 3 and human["kind"] == "binary", human
    assert {b: h["positives"] for b, h in human["backends"].items()} == dict.fromkeys(
        ["deepeval", "jury", "native", "ragas"], 2
    )
    r = CliRunner().invoke(
        app, ["calibrate", str(run), "--labels", str(run / "labels.jsonl"), "-o", str(tmp_path / "c.json")]
    )
    assert r.exit_code == 0 and "faithfulness (native): 3 labelled, 2 pass" in r.output, r.output
    assert {e["backend"] for e in json.loads((tmp_path / "c.json").read_text())["entries"]} >= {
        "native",
        "ragas",
        "deepeval",
    }


def test_hostile_text_renders_as_text(tmp_path, browser):
    run = hostile_run(tmp_path)
    with ReviewServer(run, "ana") as srv:
        page = browser.new_page(viewport={"width": 800, "height": 900})
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        t0 = time.monotonic()
        page.goto(f"{srv.base}/sample?id=q01&token={srv.token}")
        assert time.monotonic() - t0 < 20  # a 1 MB context does not stall the page
        assert page.inner_text("#answer") == HOSTILE_ANSWER
        assert page.inner_text("#question") == RTL_QUESTION
        assert page.eval_on_selector("#question", "e => getComputedStyle(e).direction") == "rtl"
        assert page.eval_on_selector(".context", "e => e.lastChild.textContent") == BIG_CONTEXT
        assert page.locator("script").count() == 1 and page.locator("main img").count() == 0
        press(page, "0")  # the keys still work on a hostile page
        assert not dialogs
        page.close()
    assert json.loads((run / "labels.jsonl").read_text())["label"] == 0
