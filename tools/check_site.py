"""Check the built documentation site in a real browser: serve it, load pages in headless Chromium (Debian's
``chromium`` package), save a screenshot of each, and fail on a console message or a missing file.

    uv run --group dev python tools/check_site.py site --screenshots site-screenshots

(after ``mkdocs build``; .ci/run does both). Checked, for each page (by default the home page and the tensors
guide):

- every request the page makes to the site is answered: a missing image, stylesheet or script (a 404) fails;
- the browser's console stays silent: any message (an uncaught error, a ``console.error``, a failed load) fails
  (Chromium logs every level alike, and the site logs nothing when all is well);
- the screenshot is written and is a PNG.

Exit status 0 when every page passes, 1 otherwise (each problem printed), 2 when Chromium is not installed.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

PAGES = {"home": "", "tensors": "guides/tensors/"}
_CONSOLE = re.compile(r":CONSOLE[:(]\d+\)?\] (.*)$")


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the site and records every request's path and status."""

    requests: list[tuple[str, int]]

    def log_request(self, code="-", size="-"):
        self.requests.append((self.path, int(code) if str(code).isdigit() else 0))

    def log_message(self, format, *args):  # quiet: the requests are checked, not printed
        pass


def find_chromium() -> str | None:
    """The Chromium executable (``chromium`` from Debian's package, or a ``chromium-browser``)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def check_page(chromium: str, base_url: str, path: str, screenshot: Path, requests: list) -> list[str]:
    """Load one page, save its screenshot; the problems found (empty when it passes)."""
    start = len(requests)
    with tempfile.TemporaryDirectory() as profile:
        run = subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
             "--window-size=1280,1600", f"--screenshot={screenshot}", base_url + path],
            capture_output=True, text=True, timeout=120)
    problems = [f"{path or '/'}: console: {m[1]}" for line in run.stderr.splitlines()
                if (m := _CONSOLE.search(line))]
    problems += [f"{path or '/'}: {url} answered {code}" for url, code in requests[start:] if code >= 400]
    if not screenshot.exists() or screenshot.read_bytes()[:8] != b"\x89PNG\r\n\x1a\n":
        problems.append(f"{path or '/'}: no screenshot (chromium exit status {run.returncode}): {run.stderr[-500:]}")
    return problems


def check_site(site: Path, screenshots: Path, pages: dict[str, str] = PAGES) -> list[str]:
    """Serve ``site`` and check each of ``pages`` ({name: path}); screenshots go to ``screenshots/<name>.png``."""
    chromium = find_chromium()
    if chromium is None:
        raise FileNotFoundError("Chromium is not installed: apt-get install chromium")
    screenshots.mkdir(parents=True, exist_ok=True)
    requests: list[tuple[str, int]] = []
    handler = type("Handler", (_Handler,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/"
        problems = []
        for name, path in pages.items():
            problems += check_page(chromium, base_url, path, screenshots / f"{name}.png", requests)
        return problems
    finally:
        server.shutdown()
        server.server_close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build's site_dir)")
    parser.add_argument("--screenshots", type=Path, default=Path("site-screenshots"), help="where the PNGs go")
    args = parser.parse_args(argv)
    try:
        problems = check_site(args.site, args.screenshots)
    except FileNotFoundError as error:
        print(f"check_site: {error}", file=sys.stderr)
        return 2
    for problem in problems:
        print(f"check_site: {problem}", file=sys.stderr)
    if not problems:
        print(f"check_site: {', '.join(PAGES)}: no console message, no missing file; screenshots in "
              f"{args.screenshots}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
