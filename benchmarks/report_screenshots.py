"""Render a run's report and save full-page screenshots of it from headless Chromium.

    python benchmarks/report_screenshots.py RUN_ID|RUN.json OUT_DIR [--db PATH] [--width PX]

The source is a run id (or 'latest') in the results database, or a JSON export of a run
(`gpuvs export RUN_ID -f json`) — so a run made on a machine without a browser (the GPU
machine) is exported there and screenshotted here. OUT_DIR receives `report-RUN_ID.html`
and one `report-RUN_ID-WIDTHpx.png` per `--width`.

Chromium is driven over the DevTools protocol (`--remote-debugging-port` and the
websocket-client package): the page is loaded from a file, every request it makes and
every failed load is recorded, and the plots that were drawn are listed, so the report's
browser test uses the same `Chromium` to check that the page is self-contained.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0")
START_TIMEOUT_S = 30.0
LOAD_TIMEOUT_S = 60.0
LAPTOP_WIDTH, LAPTOP_HEIGHT = 1280, 800
# The plots the page drew, with a size: a figure whose SVG is missing or empty is absent.
DRAWN_PLOTS_JS = """Array.from(document.querySelectorAll('figure[data-plot]')).filter(f => {
  const svg = f.querySelector('svg'); if (!svg) return false;
  const r = svg.getBoundingClientRect(); return r.width > 0 && r.height > 0;
}).map(f => f.dataset.plot)"""
# Sentences whose text runs past the right edge of the window: cut off, or only reached by
# scrolling sideways. Their text's own box is measured, not the cell's.
CUT_OFF_JS = """Array.from(document.querySelectorAll('p, td, dd, li, caption, figcaption'))
.filter(e => {
  if (e.textContent.trim().length <= 40) return false;
  const text = document.createRange(); text.selectNodeContents(e);
  return text.getBoundingClientRect().right > document.documentElement.clientWidth + 0.5;
}).map(e => e.textContent.trim().slice(0, 80))"""


@dataclass(frozen=True)
class PageLoad:
    """What loading a page did: the URLs it asked for, the loads that failed, the plots
    drawn, the sentences that run out of the window, and a screenshot of the whole page."""

    requests: tuple[str, ...]
    failed: tuple[str, ...]
    plots: tuple[str, ...]
    title: str
    png: bytes
    cut_off: tuple[str, ...] = ()


class Chromium:
    """A headless Chromium with a fresh profile, for the length of a `with` block."""

    def __init__(self, executable: Path = CHROMIUM) -> None:
        self.executable = executable
        self._profile = Path(tempfile.mkdtemp(prefix="gpuvs-chromium-"))
        self._process: subprocess.Popen[bytes] | None = None
        self._ws: Any = None
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Chromium:
        import websocket

        self._process = subprocess.Popen(
            [str(self.executable), *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        port, path = self._devtools_address(self._process)
        # No Origin header: Chromium refuses DevTools websockets from unlisted origins.
        self._ws = websocket.create_connection(f"ws://127.0.0.1:{port}{path}",
                                               timeout=LOAD_TIMEOUT_S, suppress_origin=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._ws is not None:
            self._ws.close()
        if self._process is not None:
            # The browser and its helpers share the session it was started in.
            try:
                os.killpg(self._process.pid, signal.SIGTERM)
                self._process.wait(timeout=10)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait()
        shutil.rmtree(self._profile, ignore_errors=True)

    def _devtools_address(self, process: subprocess.Popen[bytes]) -> tuple[str, str]:
        """Chromium writes its port and browser endpoint to the profile once it listens."""
        active = self._profile / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"{self.executable} exited with {process.returncode}")
            lines = active.read_text().split() if active.exists() else []
            if len(lines) == 2:
                return lines[0], lines[1]
            time.sleep(0.05)
        raise RuntimeError(f"{self.executable} did not open DevTools in {START_TIMEOUT_S} s")

    def load(self, page: Path, width: int = LAPTOP_WIDTH) -> PageLoad:
        """Open `page` in a new tab at `width` CSS pixels; record its requests; screenshot."""
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Network.enable", "Page.enable"):
            self._call(domain, session=session)
        self._call("Emulation.setDeviceMetricsOverride", session=session, width=width,
                   height=LAPTOP_HEIGHT, deviceScaleFactor=1, mobile=False)
        self._call("Page.navigate", session=session, url=page.resolve().as_uri())
        self._wait_for("Page.loadEventFired", session)
        plots = self._evaluate(DRAWN_PLOTS_JS, session)
        cut_off = self._evaluate(CUT_OFF_JS, session)
        title = self._evaluate("document.title", session)
        size = self._call("Page.getLayoutMetrics", session=session)["cssContentSize"]
        shot = self._call("Page.captureScreenshot", session=session, format="png",
                          captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": width, "height": size["height"],
                                "scale": 1})
        self._call("Target.closeTarget", targetId=target)
        requests, failed = self._network(session)
        return PageLoad(requests, failed, tuple(plots), title, base64.b64decode(shot["data"]),
                        tuple(cut_off))

    def _network(self, session: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        urls: dict[str, str] = {}
        failed = []
        for e in self._events:
            if e.get("sessionId") != session:
                continue
            if e["method"] == "Network.requestWillBeSent":
                urls[e["params"]["requestId"]] = e["params"]["request"]["url"]
            elif e["method"] == "Network.loadingFailed":
                p = e["params"]
                failed.append(f"{urls.get(p['requestId'], p['requestId'])}: {p['errorText']}")
        return tuple(urls.values()), tuple(failed)

    def _evaluate(self, expression: str, session: str) -> Any:
        reply = self._call("Runtime.evaluate", session=session, expression=expression,
                           returnByValue=True)
        return reply["result"]["value"]

    def _call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self._ws.send(json.dumps(message))
        while True:
            reply = json.loads(self._ws.recv())
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self._events.append(reply)

    def _wait_for(self, event: str, session: str) -> None:
        if any(e.get("method") == event and e.get("sessionId") == session
               for e in self._events):
            return
        while True:  # the socket's timeout bounds each wait
            message = json.loads(self._ws.recv())
            self._events.append(message)
            if message.get("method") == event and message.get("sessionId") == session:
                return


def render(source: str, out_dir: Path, db: str | None) -> Path:
    """Write the report of a run id or a JSON export into `out_dir`; return its path."""
    from gpuvs.cli.report import load_run
    from gpuvs.report.html import render_html
    from gpuvs.store.export import write_atomic
    path = Path(source)
    from_json = path if source.endswith(".json") or path.is_file() else None
    run, measurements, ceilings = load_run(None if from_json else source, from_json, db)
    html = out_dir / f"report-{run.run_id}.html"
    write_atomic(html, render_html(run, measurements, ceilings))
    return html


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", help="a run id, 'latest', or a JSON export of a run")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--db", help="results database (default: $GPUVS_DB or the user's)")
    parser.add_argument("--width", type=int, action="append",
                        help=f"page width in CSS pixels, repeatable (default {LAPTOP_WIDTH})")
    args = parser.parse_args(argv)
    from gpuvs.errors import GpuvsError
    try:
        html = render(args.source, args.out_dir, args.db)
    except GpuvsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {html}")
    with Chromium() as browser:
        for width in args.width or [LAPTOP_WIDTH]:
            loaded = browser.load(html, width)
            png = html.with_name(f"{html.stem}-{width}px.png")
            png.write_bytes(loaded.png)
            outside = [u for u in loaded.requests if u != html.resolve().as_uri()]
            print(f"wrote {png}: {len(loaded.plots)} plots, {len(outside)} other requests, "
                  f"{len(loaded.failed)} failed loads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
