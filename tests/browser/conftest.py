"""Fixtures for the browser tests: a real headless Chromium driven by selenium, a real daemon with
its web site, and blocking line clients that play games on it.

Chromium and chromedriver are the Debian packages (``/usr/bin/chromium``, ``/usr/bin/chromedriver``;
``.ci/run`` installs them). Without them these tests are skipped with a loud reason, except when
``GAMED_REQUIRE_BROWSER=1`` (set by ``.ci/run``): then a missing browser fails the tests.

The tests are synchronous: selenium blocks, so the daemon runs as a plain subprocess and the
players are blocking sockets, each wait bounded. Every test saves a screenshot of the page it ended
on under ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import warnings

import pytest

from gamed.ports import parse_ready_line
from tests.integration.support import LOOPBACK, ROOT, TWISTD, child_env, flag_capture_config, gamed_args

CHROMIUM = os.environ.get("GAMED_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("GAMED_CHROMEDRIVER", "/usr/bin/chromedriver")
ARTIFACTS = ROOT / "test-artifacts" / "browser"
WAIT = 10  # seconds: the bound of every wait for the page


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} is missing (apt-get install {package})"
    return None


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for the whole session (window 1280x900)."""
    why = _missing()
    if why:
        message = f"BROWSER TESTS NOT RUN: {why}"
        if os.environ.get("GAMED_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (GAMED_REQUIRE_BROWSER=1)", pytrace=False)
        warnings.warn(message, stacklevel=1)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # CSP violations are logged there
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    yield driver
    driver.quit()


def csp_violations(driver) -> list[str]:
    """The Content-Security-Policy refusals the browser logged since the last call."""
    return [e["message"] for e in driver.get_log("browser") if "Content Security Policy" in e.get("message", "")]


@pytest.fixture
def page(browser, request):
    """The browser for one test; the page the test ends on is saved as a screenshot artifact.
    The test fails if the site's Content-Security-Policy blocked anything on its pages."""
    csp_violations(browser)
    yield browser
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(ARTIFACTS / f"{request.node.name}.png"))
    assert csp_violations(browser) == [], "the pages need something their Content-Security-Policy refuses"


def screenshot(driver, name: str) -> pathlib.Path:
    """Save a screenshot artifact now (for a state in the middle of a test)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    return path


def wait_for(driver, condition, what: str, timeout: float = WAIT):
    """WebDriverWait with a message that says what did not happen; an element the page replaced
    while the condition read it is read again at the next poll."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, timeout, poll_frequency=0.05, ignored_exceptions=(StaleElementReferenceException,))
    return wait.until(condition, f"timed out waiting for {what}")


class Site:
    """The running daemon: its ports, its log, its HTTP API."""

    def __init__(self, proc: subprocess.Popen, ports: dict[str, int], output: list[str], records: pathlib.Path):
        self.proc = proc
        self.ports = ports
        self.output = output
        self.records = records  # its SQLite database

    def add_account(self, name: str) -> str:
        """Register ``name`` with ``gamed player add``; returns its token."""
        done = subprocess.run(
            [sys.executable, "-m", "gamed.cli", "player", "add", name, "--records", f"sqlite:{self.records}"],
            cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=30,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        found = re.search(r"token for (\S+): ([A-Za-z0-9_-]{16,128})", done.stdout)
        assert found and found[1] == name, done.stdout
        return found[2]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports['web']}"

    @property
    def text(self) -> str:
        return "".join(self.output)

    def api(self, path: str):
        with urllib.request.urlopen(self.url + path, timeout=5) as r:
            return json.loads(r.read())

    def poll_api(self, path: str, predicate, what: str, timeout: float = WAIT):
        """GET ``path`` until ``predicate(json)`` returns something true; returns that."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = predicate(self.api(path))
            except (urllib.error.URLError, OSError):
                found = None
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}\n{self.text[-3000:]}")
            time.sleep(0.05)


@pytest.fixture(scope="session")
def site(browser, tmp_path_factory):
    """One daemon for the browser tests: Kalaha, Virtual Fight, Connect Four (built-in engines), a
    Stratego tournament of two one-move games, the web site, records in SQLite."""
    if not TWISTD or not pathlib.Path(TWISTD).exists():
        pytest.fail(f"{TWISTD} is missing")
    state = tmp_path_factory.mktemp("state")
    records = state / "gamed.sqlite"
    config = flag_capture_config(state)
    # A Virtual Fight AI that leaves forfeits at once (the board test ends its game that way); a
    # Kalaha player who drops forfeits (or, before any move, the game ends) a second later.
    config.write_text(config.read_text() + "\n[fight]\ngrace = 0\n[kalaha]\ngrace = 1\n")
    args = gamed_args(
        "--config", str(config),
        "--web", LOOPBACK, "--records", str(records), "--max-per-peer", "0", "--line-rate", "0",
        "--kalaha-move-time", "0", "--fight-clock", "10m+0,move=20s",
        "--connect4", LOOPBACK, "--connect4-engines", "", "--connect4-move-time", "0",
        kalaha=LOOPBACK, fight=LOOPBACK, fight_gui="none",
    )
    proc = subprocess.Popen(
        [TWISTD, *args], cwd=ROOT, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, errors="replace", start_new_session=True,
    )
    output: list[str] = []
    ports: dict[str, int] = {}
    ready = threading.Event()

    def read():
        for line in proc.stdout:
            output.append(line)
            found = parse_ready_line(line)
            if found is not None:
                ports.update({option: where[0][1] for option, where in found.items()})
                ready.set()
        ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not ready.wait(20) or proc.poll() is not None or not {"web", "kalaha", "fight", "connect4"} <= ports.keys():
            pytest.fail(f"the daemon did not start listening (ports {ports}):\n{''.join(output)}", pytrace=False)
        yield Site(proc, ports, output, records)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
    assert "Traceback" not in "".join(output), "".join(output)


class LineSocket:
    """A blocking line client with bounded waits (``\\r\\n`` lines, ASCII)."""

    def __init__(self, port: int, timeout: float = WAIT):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.timeout = timeout
        self.buffer = b""
        self.seen: list[str] = []

    def send(self, *lines: str) -> None:
        self.sock.sendall(b"".join(line.encode("ascii") + b"\r\n" for line in lines))

    def line(self) -> str:
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no line within {self.timeout} s; seen: {self.seen[-10:]}")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise AssertionError(f"connection closed; seen: {self.seen[-10:]}")
            self.buffer += data
        raw, self.buffer = self.buffer.split(b"\n", 1)
        text = raw.rstrip(b"\r").decode("ascii")
        self.seen.append(text)
        return text

    def expect(self, *prefixes: str) -> str:
        """Skip lines until one starts with one of ``prefixes``; return it."""
        while True:
            text = self.line()
            if text.startswith(prefixes):
                return text

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def connect(site):
    """``connect(port_name)`` opens a LineSocket to the daemon; all are closed after the test."""
    opened: list[LineSocket] = []

    def open_(name: str) -> LineSocket:
        c = LineSocket(site.ports[name])
        opened.append(c)
        return c

    yield open_
    for c in opened:
        c.close()


_READ_KALAHA = """
const pits = [[], []];
document.querySelectorAll('#board .pit').forEach(p => {
  pits[Number(p.dataset.seat)][Number(p.dataset.index)] = Number(p.textContent);
});
const stores = [0, 1].map(s => {
  const e = document.querySelector('#board .store[data-seat="' + s + '"]');
  return e ? Number(e.textContent) : null;
});
return {pits: pits, stores: stores, moves: document.querySelectorAll('#moves li').length,
        turn: (document.getElementById('turn') || {}).textContent};
"""


def read_kalaha(driver) -> dict:
    """The Kalaha board on the page: ``{"pits", "stores", "moves" (count), "turn" (text)}``."""
    return driver.execute_script(_READ_KALAHA)
