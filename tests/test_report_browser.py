"""The report in a real browser: headless Chromium, driven over the DevTools protocol.

The page must render without a script error (a CSP hash that does not match its own
script would show up here as a blocked script), load nothing from the network, let
the filters change the listed samples, and show hostile model text as text. A
screenshot goes to ``test-artifacts/report.png`` for a human to look at.

The DevTools client is a few lines over aiohttp's websocket (already a dependency):
commands are sent one at a time and replies read in order, events are kept as they
pass by.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from harness.report import write_report

from .test_report_data import HOSTILE, make_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                "(apt-get install chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1"]


class DevTools:
    """One page target: ``call`` a command and get its result; ``events`` seen so far."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def _next(self) -> dict[str, Any]:
        msg = await self.ws.receive()
        if msg.type != aiohttp.WSMsgType.TEXT:
            raise RuntimeError(f"DevTools connection ended: {msg.type}")
        return json.loads(msg.data)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send a command and wait for its reply (events on the way are recorded)."""
        ident = next(self.ids)
        await self.ws.send_json({"id": ident, "method": method, "params": params})
        with anyio.fail_after(30):
            while True:
                data = await self._next()
                if data.get("id") == ident:
                    if "error" in data:
                        raise RuntimeError(f"{method}: {data['error']}")
                    return data["result"]
                self.events.append(data)

    async def wait_for(self, event: str) -> dict[str, Any]:
        """The first ``event`` (already seen or still to come)."""
        with anyio.fail_after(30):
            for data in self.events:
                if data.get("method") == event:
                    return data
            while True:
                data = await self._next()
                self.events.append(data)
                if data.get("method") == event:
                    return data

    async def js(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page; its value (JSON-serializable)."""
        result = await self.call("Runtime.evaluate", expression=expression,
                                 returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def errors(self) -> list[str]:
        """Uncaught exceptions, console errors and error log entries (CSP violations)."""
        out = []
        for e in self.events:
            method, params = e.get("method"), e.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(json.dumps(params["exceptionDetails"])[:500])
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                out.append(json.dumps(params.get("args"))[:500])
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                out.append(params["entry"].get("text", ""))
        return out

    def requested_urls(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]


async def _devtools_endpoint(stderr: Any) -> str:
    """``host:port`` from Chromium's "DevTools listening on ws://…" line."""
    buffer = b""
    with anyio.fail_after(60):
        async for chunk in stderr:
            buffer += chunk
            match = re.search(rb"DevTools listening on ws://([^/\s]+)/", buffer)
            if match:
                return match.group(1).decode()
    raise RuntimeError(f"chromium exited before listening: {buffer.decode(errors='replace')}")


async def _drain(stream: Any) -> None:
    # Chromium keeps logging to stderr; an unread pipe would eventually block it.
    with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError):
        async for _ in stream:
            pass


@contextlib.asynccontextmanager
async def chromium_page(profile: Path) -> AsyncIterator[DevTools]:
    """A headless Chromium with one blank page, as a :class:`DevTools` connection."""
    process = await anyio.open_process([CHROMIUM, *FLAGS, f"--user-data-dir={profile}",
                                        "about:blank"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        async with anyio.create_task_group() as tg:
            endpoint = await _devtools_endpoint(process.stderr)
            tg.start_soon(_drain, process.stderr)
            async with aiohttp.ClientSession() as http:
                async with http.get(f"http://{endpoint}/json/list") as resp:
                    targets = await resp.json()
                page = next(t for t in targets if t["type"] == "page")
                async with http.ws_connect(page["webSocketDebuggerUrl"],
                                           max_msg_size=0) as ws:
                    yield DevTools(ws)
            tg.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # A failed assertion in the test body arrives wrapped by the drain task group.
        if len(group.exceptions) == 1:
            raise group.exceptions[0] from None
        raise
    finally:
        with contextlib.suppress(ProcessLookupError):
            process.terminate()
        with anyio.move_on_after(10) as scope:
            await process.wait()
        if scope.cancelled_caught:
            process.kill()
            await process.wait()
        await process.aclose()


async def test_report_renders_filters_and_escapes_in_chromium(tmp_path):
    cascade, _ = await make_runs(tmp_path)
    report = write_report(cascade)
    async with chromium_page(tmp_path / "profile") as page:
        for domain in ("Runtime", "Log", "Network", "Page"):
            await page.call(f"{domain}.enable")
        await page.call("Emulation.setDeviceMetricsOverride", width=1280, height=900,
                        deviceScaleFactor=1, mobile=False)
        await page.call("Page.navigate", url=report.as_uri())
        await page.wait_for("Page.loadEventFired")
        assert await page.js("document.documentElement.dataset.ready") == "1"

        rows = "document.querySelectorAll('#samples-0 tr.sample')"
        badges = f"Array.from({rows}).map(r => r.children[1].textContent)"

        async def choose(key: str) -> list[str]:
            await page.js(f"document.querySelector('#samples-0 [data-filter={key}]').click()")
            return await page.js(badges)

        assert len(await page.js(badges)) == 24
        assert sorted(set(await choose("wrong"))) == ["wrong"] and len(await choose("wrong")) == 7
        assert await choose("rescued") == ["judge-rescued"] * 4
        assert await choose("disagree") == ["judge-rescued"] * 4
        assert await choose("errors") == ["errors"]
        assert len(await choose("extract")) == 1
        assert len(await choose("all")) == 24
        shown = await page.js("document.querySelector('#samples-0 .shown').textContent")
        assert shown.startswith("Showing 24 of 24 samples (all)")

        # Open the hostile sample: its reply is on the page as text, nothing ran.
        await page.js("document.querySelector('#samples-0 tr[data-index=\"5\"]').click()")
        detail = await page.js("document.querySelector('#samples-0 .detail').textContent")
        assert HOSTILE in detail
        assert await page.js("window.__pwned === undefined")
        assert await page.js("document.querySelectorAll('img').length") == 0
        await page.js("document.querySelector('#samples-0 tr[data-index=\"1\"]').click()")

        assert page.errors() == []
        assert [u for u in page.requested_urls() if not u.startswith(("file:", "data:"))] == []

        metrics = await page.call("Page.getLayoutMetrics")
        height = min(int(metrics["cssContentSize"]["height"]), 4000)
        await page.call("Emulation.setDeviceMetricsOverride", width=1280, height=height,
                        deviceScaleFactor=1, mobile=False)
        shot = await page.call("Page.captureScreenshot", format="png")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(base64.b64decode(shot["data"]))
