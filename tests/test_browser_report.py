"""The HTML report of a real native / ragas / deepeval compare (loopback judge) in a real
headless Chromium, driven over the DevTools protocol: it loads with no console error and
no network request but the file itself, the plots render (a non-blank screenshot), a
per-sample drill-down opens on a real click, the odd one out is marked where the scores
say so, ``report.html#<sample-id>`` opens that sample (ids with spaces, slashes, ``#``,
quotes and non-ASCII), and the errors are grouped by cause."""

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
from urllib.parse import quote

import pytest
from judge_server import JudgeServer
from report_runs import ODD_IDS, three_backend_run
from support import as_read

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
    pytest.importorskip("ragas")
    pytest.importorskip("deepeval")
    out = tmp_path_factory.mktemp("compare")
    mp = pytest.MonkeyPatch()
    mp.setenv("OPENAI_API_KEY", "sk-loopback-not-a-secret")
    try:
        with JudgeServer() as srv:
            three_backend_run(out, srv.base_url)
    finally:
        mp.undo()
    return out / "run" / "report.html"


def expected_odd(scores_file: Path) -> dict[tuple[str, str], str | None]:
    """(metric, sample) -> the backend standing apart, recomputed from scores.jsonl: its
    distance to the nearest other backend exceeds the others' spread, and is ≥ 1."""
    vals: dict[tuple[str, str], dict[str, float]] = {}
    for line in scores_file.read_text().splitlines():
        d = as_read(json.loads(line))
        if d["value"] is not None:
            vals.setdefault((d["metric"], d["sample_id"]), {})[d["backend"]] = d["value"]
    out = {}
    for key, v in vals.items():
        out[key] = None
        for b, x in v.items():
            rest = [y for c, y in v.items() if c != b]
            if (
                len(rest) >= 2
                and min(abs(x - y) for y in rest) > max(rest) - min(rest)
                and min(abs(x - y) for y in rest) >= 1
            ):
                out[key] = b
    return out


def _launch(profile: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
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
        await cdp.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 1600, "deviceScaleFactor": 1, "mobile": False},
            session=sid,
        )
        cdp.events.clear()
        await cdp.send("Page.navigate", {"url": page_url}, session=sid)
        await cdp.wait_event("Page.loadEventFired")
        await asyncio.sleep(0.3)

        async def js(expr: str):
            r = await cdp.send("Runtime.evaluate", {"expression": expr, "returnByValue": True}, session=sid)
            return r["result"].get("value")

        info = {
            "svgs": await js("document.querySelectorAll('svg').length"),
            "svg_width": await js("document.querySelector('#dist svg').getBoundingClientRect().width"),
        }
        shot = await cdp.send("Page.captureScreenshot", {"format": "png"}, session=sid)
        info["png"] = base64.b64decode(shot["data"])

        # a real mouse click on the first sample's <summary>
        sel = "document.querySelector('details.sample')"
        info["open_before"] = await js(f"{sel}.open")
        # checkVisibility: a closed <details> hides its content with content-visibility
        info["visible_before"] = await js(f"{sel}.querySelector('div').checkVisibility()")
        await js(f"{sel}.scrollIntoView({{block:'center'}})")
        rect = await js(
            f"(()=>{{const r={sel}.querySelector('summary').getBoundingClientRect();"
            "return [r.left+8, r.top+r.height/2]})()"
        )
        for kind in ("mousePressed", "mouseReleased"):
            await cdp.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": rect[0], "y": rect[1], "button": "left", "clickCount": 1},
                session=sid,
            )
        await asyncio.sleep(0.2)
        info["open_after"] = await js(f"{sel}.open")
        info["visible_after"] = await js(f"{sel}.querySelector('div').checkVisibility()")
        info["text_after"] = await js(f"{sel}.innerText")
        # a disagreement link opens its sample through the inline script
        link = await js(
            "(()=>{const a=document.querySelector('a[data-open]');"
            "if(!a)return null;a.click();return a.getAttribute('data-open')})()"
        )
        info["link_target_open"] = await js(f"document.getElementById('{link}').open") if link else None

        # the disagreement table: metric, sample, and the backend whose cell is marked
        info["disagree"] = await js("""[...document.querySelectorAll('#disagree tr')].slice(1).map(tr=>{
            const td=[...tr.children], heads=[...document.querySelectorAll('#disagree th')];
            const odd=td.findIndex(c=>c.classList.contains('odd'));
            return [td[0].innerText, td[1].querySelector('a,span')?.innerText ?? td[1].innerText.split('\\n')[0],
                    odd<0?null:heads[odd].innerText, odd<0?null:td[odd].innerText]})""")
        info["errors"] = await js("""[...document.querySelectorAll('#errors tr')].slice(1).map(tr=>
            [...tr.children].slice(0,4).map(c=>c.innerText))""")

        seen: list[dict] = []

        async def opened_by(url: str, reload: bool = True) -> dict:
            if reload:  # a fresh load (a new fragment alone would not reload the page)
                for target_url in ("about:blank", url):
                    seen.extend(cdp.events)
                    cdp.events.clear()
                    await cdp.send("Page.navigate", {"url": target_url}, session=sid)
                    await cdp.wait_event("Page.loadEventFired")
            else:
                await js(f"location.hash={json.dumps(url)}")
            await asyncio.sleep(0.3)
            return await js("""(()=>{const o=[...document.querySelectorAll('details.sample')].filter(d=>d.open);
                const m=document.getElementById('missing-sample');
                return {open:o.map(d=>d.getAttribute('data-sid')),
                        visible:o.map(d=>d.querySelector('div').checkVisibility()),
                        missing:m.hidden?null:m.innerText}})()""")

        odd_id = ODD_IDS["q02"]
        info["deep_encoded"] = await opened_by(page_url + "#" + quote(odd_id, safe=""))
        info["deep_plain"] = await opened_by(page_url + "#q04")
        info["deep_hashchange"] = await opened_by("#" + quote(ODD_IDS["q03"], safe=""), reload=False)
        info["deep_missing"] = await opened_by(page_url + "#no-such-sample")

        info["events"] = seen + list(cdp.events)
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
    errors = [
        e
        for e in events
        if e.get("method") == "Runtime.exceptionThrown"
        or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] == "error")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")
    ]
    assert errors == []
    urls = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert urls and all(u.split("#")[0] == report_file.as_uri() or u.startswith(("data:", "about:")) for u in urls), (
        urls
    )

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
    shown_id = text.split(" — ")[0].strip()
    rows = {ODD_IDS.get(d["id"], d["id"]): d for d in map(json.loads, DATA.read_text().splitlines())}
    shown = rows[shown_id]
    assert shown["user_input"] in text and shown["retrieved_contexts"][0][:60] in text
    assert "retrieved ids" in text.lower() and "relevant" in text and "claims" in text
    assert "✓" in text or "✗" in text
    assert info["link_target_open"] is True

    # the odd one out: marked exactly where the scores put one, on every row shown
    expected = expected_odd(report_file.parent / "scores.jsonl")
    table = info["disagree"]
    assert table and any(r[2] for r in table), table
    for metric, sample, odd_backend, cell in table:
        assert expected[(metric, sample)] == odd_backend, (metric, sample)
        if odd_backend:
            assert "odd one out" in cell

    # report.html#<id> opens that sample, whatever characters its id holds
    assert info["deep_encoded"]["open"] == [ODD_IDS["q02"]] and info["deep_encoded"]["visible"] == [True]
    assert info["deep_plain"]["open"] == ["q04"]
    assert ODD_IDS["q03"] in info["deep_hashchange"]["open"]
    assert info["deep_missing"]["open"] == [] and "no-such-sample" in info["deep_missing"]["missing"]

    # errors grouped by cause: 3 samples without a reference × 3 backends = one cause
    (count, cause, backends, metrics), *rest = info["errors"]
    assert (count, metrics) == ("9", "context_recall")
    assert cause == "sample '<sample>': field 'reference' is missing or empty (needed by context_recall)"
    assert backends == "deepeval, native, ragas"
    # the only other cause: the fake judge's synthetic answers outside what ragas allows
    assert all("outside its own range" in c for _, c, _, _ in rest), rest
