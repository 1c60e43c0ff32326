"""The HTML report in a real headless Chromium, driven over the DevTools protocol: it
loads with no console error and no network request but the file itself, the plots
render (a non-blank screenshot), and a per-sample drill-down opens on a real click."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from unified.adapters import Backend
from unified.judge.base import Judges
from unified.runner import evaluate
from unified.scores import Score

CHROMIUM = "/usr/bin/chromium"
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "rag_examples.jsonl"

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")]


class LastRelevant(Backend):
    """Second backend for a compare-style report: reciprocal rank of the last relevant id."""

    name = "lastrel"
    metrics = frozenset({"mrr", "precision_at_k"})

    async def score(self, sample, metrics):
        rel = set(sample.relevant_ids or [])
        ranks = [i + 1 for i, d in enumerate(sample.retrieved_ids or []) if d in rel]
        return [Score.from_raw(m.name, self.name, sample.id, 1.0 / ranks[-1] if ranks else 0.0,
                               threshold=5.0, reason=f"last relevant rank {ranks[-1] if ranks else None}",
                               details={"judge_a": {"rating": 2}, "judge_b": {"rating": 1}})
                for m in metrics]


class CDP:
    """Minimal DevTools-protocol client over one websocket (flattened sessions)."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending: dict[int, asyncio.Future] = {}
        self.events: list[dict] = []
        self.reader = asyncio.create_task(self._read())

    async def _read(self):
        async for raw in self.ws:
            msg = json.loads(raw)
            if "id" in msg and msg["id"] in self.pending:
                self.pending.pop(msg["id"]).set_result(msg)
            else:
                self.events.append(msg)

    async def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = fut
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        await self.ws.send(json.dumps(msg))
        reply = await asyncio.wait_for(fut, 30)
        if "error" in reply:
            raise AssertionError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    async def wait_event(self, method: str, timeout: float = 30) -> dict:
        end = asyncio.get_running_loop().time() + timeout
        while asyncio.get_running_loop().time() < end:
            for e in self.events:
                if e.get("method") == method:
                    return e
            await asyncio.sleep(0.05)
        raise AssertionError(f"no {method} event")


@pytest.fixture(scope="module")
def report_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("compare")
    evaluate(DATA, "mrr,precision@3", ["native", LastRelevant()], judges=Judges(), out=out, quiet=True)
    return out / "report.html"


def _launch(profile: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for _ in range(400):
        line = proc.stderr.readline()
        m = re.search(r"DevTools listening on (ws://\S+)", line)
        if m:
            return proc, m.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("chromium did not start its DevTools endpoint")


async def _drive(ws_url: str, page_url: str) -> dict:
    import websockets

    async with websockets.connect(ws_url, max_size=None) as ws:
        cdp = CDP(ws)
        target = (await cdp.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        sid = (await cdp.send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            await cdp.send(f"{domain}.enable", session=sid)
        await cdp.send("Emulation.setDeviceMetricsOverride",
                       {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False}, session=sid)
        cdp.events.clear()
        await cdp.send("Page.navigate", {"url": page_url}, session=sid)
        await cdp.wait_event("Page.loadEventFired")
        await asyncio.sleep(0.3)

        async def js(expr: str):
            r = await cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=sid)
            return r["result"].get("value")

        info = {"svgs": await js("document.querySelectorAll('svg').length"),
                "svg_width": await js("document.querySelector('#dist svg').getBoundingClientRect().width")}
        shot = await cdp.send("Page.captureScreenshot", {"format": "png"}, session=sid)
        info["png"] = base64.b64decode(shot["data"])

        # a real mouse click on the first sample's <summary>
        sel = "document.querySelector('details.sample')"
        info["open_before"] = await js(f"{sel}.open")
        # checkVisibility: a closed <details> hides its content with content-visibility
        info["visible_before"] = await js(f"{sel}.querySelector('div').checkVisibility()")
        await js(f"{sel}.scrollIntoView({{block:'center'}})")
        rect = await js(f"(()=>{{const r={sel}.querySelector('summary').getBoundingClientRect();"
                        "return [r.left+8, r.top+r.height/2]})()")
        for kind in ("mousePressed", "mouseReleased"):
            await cdp.send("Input.dispatchMouseEvent", {"type": kind, "x": rect[0], "y": rect[1],
                                                        "button": "left", "clickCount": 1}, session=sid)
        await asyncio.sleep(0.2)
        info["open_after"] = await js(f"{sel}.open")
        info["visible_after"] = await js(f"{sel}.querySelector('div').checkVisibility()")
        info["text_after"] = await js(f"{sel}.innerText")
        # a disagreement link opens its sample through the inline script
        link = await js("(()=>{const a=document.querySelector('a[data-open]');"
                        "if(!a)return null;a.click();return a.getAttribute('data-open')})()")
        info["link_target_open"] = await js(f"document.getElementById('{link}').open") if link else None

        info["events"] = list(cdp.events)
        cdp.reader.cancel()
        return info


def test_report_in_headless_chromium(report_file, tmp_path):
    from PIL import Image

    profile = tempfile.mkdtemp(prefix="chromium-profile-", dir=tmp_path)
    proc, ws_url = _launch(profile)
    try:
        info = asyncio.run(_drive(ws_url, report_file.as_uri()))
    finally:
        proc.kill()
        proc.wait(timeout=10)
        shutil.rmtree(profile, ignore_errors=True)

    events = info["events"]
    errors = [e for e in events if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    assert errors == []
    urls = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert urls and all(u == report_file.as_uri() or u.startswith("data:") for u in urls), urls

    # plots: distributions, heatmap, scatters, all rendered with a real size
    assert info["svgs"] >= 2 + 1 + 2 and info["svg_width"] > 200
    img = Image.open(io.BytesIO(info["png"])).convert("RGB")
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # not a blank page
    assert max(c for c, _ in colours) < 0.97 * img.width * img.height

    # the drill-down was closed, opens on a click, and shows the sample's content
    assert info["open_before"] is False and info["visible_before"] is False
    assert info["open_after"] is True and info["visible_after"] is True
    text = info["text_after"]
    rows = {d["id"]: d for d in map(json.loads, DATA.read_text().splitlines())}
    shown = rows[text.split(" — ")[0].strip()]
    assert shown["user_input"] in text and shown["retrieved_contexts"][0][:60] in text
    assert "retrieved ids" in text.lower() and "last relevant rank" in text and "judge_a" in text
    assert info["link_target_open"] is True
