"""Render a run's report and save full-page screenshots of it from headless Chromium.

    python benchmarks/report_screenshots.py RUN_ID|RUN.json OUT_DIR [--db PATH] [--width PX]
    python benchmarks/report_screenshots.py --docs [NAME.png ...]

The source is a run id (or 'latest') in the results database, or a JSON export of a run
(`gpuvs export RUN_ID -f json`) — so a run made on a machine without a browser (the GPU
machine) is exported there and screenshotted here. OUT_DIR receives `report-RUN_ID.html`
and one `report-RUN_ID-WIDTHpx.png` per `--width`.

`--docs` re-takes the screenshots in docs/ (all of them, or those named) from the JSON
exports in docs/runs/ (`DOCS` says which page and which part of it each shows), and says
which it skipped for want of its export. Each is taken at twice the CSS pixels (a PNG
shown at half its size, as a README shows it, reads as the page at 1:1) and at the
narrowest window, from LAPTOP_WIDTH up, that shows every column of every table in it.

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
import re
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
REPO = Path(__file__).resolve().parents[1]
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--remote-debugging-port=0")
START_TIMEOUT_S = 30.0
LOAD_TIMEOUT_S = 60.0
LAPTOP_WIDTH, LAPTOP_HEIGHT = 1280, 800
DOCS_SCALE = 2  # device pixels per CSS pixel in the docs' screenshots
MAX_SHOT_HEIGHT = 2600  # CSS pixels: a docs screenshot is the top of its region
EDGE = 24  # CSS pixels kept right of the widest table (the body's padding)
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
# Tables whose columns do not all show: their box scrolls sideways. Named by their
# caption, else their header.
CUT_TABLES_JS = """Array.from(document.querySelectorAll('div.table'))
.filter(d => d.scrollWidth > d.clientWidth + 1)
.map(d => (d.querySelector('caption') || d.querySelector('thead') || d).textContent
     .trim().replace(/\\s+/g, ' ').slice(0, 80))"""
# The window width at which every table shows whole: its left edge plus its full width.
NEEDED_WIDTH_JS = f"""Math.ceil(Math.max(0, ...Array.from(document.querySelectorAll('div.table'))
  .map(d => d.getBoundingClientRect().left + window.scrollX + d.scrollWidth)) + {EDGE})"""
# The page's stretch from the top of `first` (the page's top for '') to the bottom of the
# first `last`, in CSS pixels: [top, bottom].
REGION_JS = """((first, last) => {
  const y = e => e.getBoundingClientRect();
  const top = first ? y(document.querySelector(first)).top + window.scrollY : 0;
  return [top, y(document.querySelector(last)).bottom + window.scrollY];
})(%s, %s)"""


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
    cut_tables: tuple[str, ...] = ()
    width: int = LAPTOP_WIDTH


@dataclass(frozen=True)
class Region:
    """Part of a page, by CSS selectors: from the top of `first` (the page's top for "")
    to the bottom of the first element `last` matches, at most MAX_SHOT_HEIGHT tall."""

    first: str
    last: str


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

    def load(self, page: Path, width: int = LAPTOP_WIDTH, scale: int = 1,
             region: Region | None = None, fit: bool = False) -> PageLoad:
        """Open `page` in a new tab at `width` CSS pixels (with `fit`, wider where a table
        needs it), `scale` device pixels to each; record its requests; screenshot the
        whole page or its `region`."""
        target = self._call("Target.createTarget", url="about:blank")["targetId"]
        session = self._call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Network.enable", "Page.enable"):
            self._call(domain, session=session)
        self._size(session, width, scale)
        self._call("Page.navigate", session=session, url=page.resolve().as_uri())
        self._wait_for("Page.loadEventFired", session)
        if fit and (needed := self._evaluate(NEEDED_WIDTH_JS, session)) > width:
            width = int(needed)
            self._size(session, width, scale)  # the page lays itself out again
        plots = self._evaluate(DRAWN_PLOTS_JS, session)
        cut_off = self._evaluate(CUT_OFF_JS, session)
        cut_tables = self._evaluate(CUT_TABLES_JS, session)
        title = self._evaluate("document.title", session)
        top, bottom = 0.0, self._call("Page.getLayoutMetrics",
                                      session=session)["cssContentSize"]["height"]
        if region is not None:
            top, bottom = self._evaluate(
                REGION_JS % (json.dumps(region.first), json.dumps(region.last)), session)
            bottom = min(bottom + 8, top + MAX_SHOT_HEIGHT)
        shot = self._call("Page.captureScreenshot", session=session, format="png",
                          captureBeyondViewport=True,
                          clip={"x": 0, "y": top, "width": width, "height": bottom - top,
                                "scale": 1})
        self._call("Target.closeTarget", targetId=target)
        requests, failed = self._network(session)
        return PageLoad(requests, failed, tuple(plots), title, base64.b64decode(shot["data"]),
                        tuple(cut_off), tuple(cut_tables), width)

    def _size(self, session: str, width: int, scale: int) -> None:
        self._call("Emulation.setDeviceMetricsOverride", session=session, width=width,
                   height=LAPTOP_HEIGHT, deviceScaleFactor=scale, mobile=False)

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
    from gpuvs.store.output import write_atomic
    path = Path(source)
    from_json = path if source.endswith(".json") or path.is_file() else None
    run, measurements, ceilings = load_run(None if from_json else source, from_json, db)
    html = out_dir / f"report-{run.run_id}.html"
    write_atomic(html, render_html(run, measurements, ceilings))
    return html


@dataclass(frozen=True)
class Shot:
    """One screenshot of docs/: which page (a run's report, or with `against` the
    comparison of two runs) and which part of it."""

    png: str        # its name in docs/
    source: str     # a JSON export, from the repository's root
    region: Region
    against: str = ""  # a second export: the page is `gpuvs compare source against`


def _sweep(title: str) -> Region:
    selector = f"#sweep-{re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')}"
    return Region(selector, selector)


DOCS = (
    Shot("report-cpu.png", "tests/data/golden/cpu-matmul-sweep.json",
         Region("", "section.sweep")),
    Shot("report-h100-sweep.png", "docs/runs/h100-sweep.json", Region("", "#verdict")),
    Shot("report-h100-matmul-sweep.png", "docs/runs/h100-sweep.json",
         _sweep("Square matrix product, float32")),
    Shot("report-h100-elementwise-sweep.png", "docs/runs/h100-sweep.json",
         _sweep("Elementwise x·5 in place, float32")),
    Shot("report-h100-seeds-verdict.png", "docs/runs/seeds-h100.json", Region("", "#verdict")),
    Shot("report-h100-seeds-posts.png", "docs/runs/seeds-h100.json",
         Region("#seeds", "#seeds div.table")),
    Shot("compare-h100-h200.png", "docs/runs/h100-sweep.json",
         Region("", "section div.table"), against="docs/runs/h200-sweep.json"),
)


def retake_docs(names: list[str], out: Path = REPO / "docs") -> int:
    """Each screenshot of DOCS (or those named) from its export, into `out`; 0 when every
    one named was taken, 1 when an export is missing or a table in a shot does not show
    whole."""
    import tempfile

    unknown = sorted(set(names) - {s.png for s in DOCS})
    if unknown:
        print(f"error: not a docs screenshot: {', '.join(unknown)}; known: "
              f"{', '.join(s.png for s in DOCS)}", file=sys.stderr)
        return 2
    status = 0
    with tempfile.TemporaryDirectory() as tmp, Chromium() as browser:
        for shot in (s for s in DOCS if not names or s.png in names):
            missing = [p for p in (shot.source, shot.against) if p and not (REPO / p).exists()]
            if missing:
                print(f"skipped docs/{shot.png}: {missing[0]} is not there yet (on the GPU "
                      f"machine: gpuvs export RUN_ID -f json -o {missing[0]})")
                status = 1
                continue
            loaded = browser.load(_page_of(shot, Path(tmp)), LAPTOP_WIDTH, DOCS_SCALE,
                                  shot.region, fit=True)
            (out / shot.png).write_bytes(_smaller(loaded.png))
            cut = f"; tables cut: {', '.join(loaded.cut_tables)}" if loaded.cut_tables else ""
            status |= bool(cut)
            print(f"wrote {out / shot.png}: {loaded.width} CSS px wide at {DOCS_SCALE}x, from "
                  f"{shot.source}{' against ' + shot.against if shot.against else ''}{cut}")
    return status


def _page_of(shot: Shot, tmp: Path) -> Path:
    if not shot.against:
        return render(str(REPO / shot.source), tmp, None)
    page = tmp / f"compare-{Path(shot.source).stem}.html"
    subprocess.run([sys.executable, "-m", "gpuvs", "compare", str(REPO / shot.source),
                    str(REPO / shot.against), "--report", str(page)], check=True,
                   stdout=subprocess.DEVNULL)
    return page


def _smaller(png: bytes) -> bytes:
    """The screenshot in 256 colours: text, rules and plots need no more, and the file is
    a third of the size."""
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.open(io.BytesIO(png)).convert("RGB").quantize(256).save(out, "PNG", optimize=True)
    return out.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", nargs="?",
                        help="a run id, 'latest', or a JSON export of a run")
    parser.add_argument("out_dir", type=Path, nargs="?")
    parser.add_argument("--db", help="results database (default: $GPUVS_DB or the user's)")
    parser.add_argument("--width", type=int, action="append",
                        help=f"page width in CSS pixels, repeatable (default {LAPTOP_WIDTH})")
    parser.add_argument("--docs", nargs="*", metavar="NAME.png",
                        help="re-take the screenshots in docs/ (all, or those named) from "
                             "their exports in docs/runs/")
    args = parser.parse_args(argv)
    if args.docs is not None:
        return retake_docs(args.docs)
    if args.source is None or args.out_dir is None:
        parser.error("give a SOURCE and an OUT_DIR, or --docs")
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
