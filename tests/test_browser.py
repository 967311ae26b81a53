"""End to end in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``, driven by
selenium): open the board, play a whole short game against ``random`` by clicking (placements, a jump
chain hop by hop, a square capture with victims chosen by clicking), check that an illegal click is
refused with the rule's reason, download the record and replay it with ``python cli.py replay``; then
check that an agent's top-3 candidates are drawn. Skipped, saying why, where no browser is installed.

Set ``JIU_SCREENSHOTS=DIR`` to save screenshots of the board in play (the ones in docs/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.board import POINT_NAMES
from core.rules import Ruleset
from core.state import GameState

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
try:
    import selenium  # noqa: F401
    HAVE_SELENIUM = True
except ImportError:
    HAVE_SELENIUM = False

pytestmark = pytest.mark.skipif(
    not (CHROMIUM and DRIVER and HAVE_SELENIUM),
    reason="no headless browser: needs Debian's chromium and chromium-driver (apt-get install -y chromium "
           "chromium-driver) and selenium (pip install selenium); .ci/run installs them",
)

ROOT = Path(__file__).resolve().parent.parent
RULES = {"max_battle_plies": 12, "adjudicate": "stones"}
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1180,1000")


@pytest.fixture
def browser(tmp_path, monkeypatch):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # never let selenium look for a browser or driver online
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    opts.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                           "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def board_url():
    from frontends.server import create_app, running_server

    with running_server(create_app("random")) as url:
        yield url


class Page:
    def __init__(self, driver) -> None:
        from selenium.webdriver.common.by import By

        self.d, self.By = driver, By

    def body(self, key: str) -> str:
        return self.d.find_element(self.By.TAG_NAME, "body").get_attribute(f"data-{key}") or ""

    def wait(self, condition, timeout: float = 30.0, what: str = "") -> None:
        t0 = time.monotonic()
        while not condition():
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"timed out waiting for {what}; status: {self.text('status')!r}, "
                                     f"message: {self.text('message')!r}")
            time.sleep(0.02)

    def idle(self) -> None:
        self.wait(lambda: self.body("busy") == "0" and self.body("turn") in ("human", "over"), what="the page")

    def text(self, element_id: str) -> str:
        return self.d.find_element(self.By.ID, element_id).text

    def click(self, point: str) -> None:
        self.d.find_element(self.By.CSS_SELECTOR, f'[data-point="{point}"]').click()
        self.wait(lambda: self.body("busy") == "0" and self.body("turn") != "agent", what=f"the click on {point}")

    def fill(self, element_id: str, value: str) -> None:
        e = self.d.find_element(self.By.ID, element_id)
        e.clear()
        e.send_keys(value)

    def start(self, agent: str, human: str = "w", rules: str = "", seed: int = 0) -> None:
        from selenium.webdriver.support.ui import Select

        self.fill("ng-agent", agent)
        Select(self.d.find_element(self.By.ID, "ng-human")).select_by_value(human)
        self.fill("ng-rules", rules)
        self.fill("ng-seed", str(seed))
        self.d.find_element(self.By.ID, "ng-start").click()
        self.idle()

    def state(self) -> GameState:
        return GameState.from_jfen(self.body("jfen"), Ruleset(**RULES))

    def count(self, selector: str) -> int:
        return len(self.d.find_elements(self.By.CSS_SELECTOR, selector))


def choose(state: GameState):
    """The test player's move: the first free point in the layout; in the battle a chain of two or
    more hops, else a square-forming move, else a jump, else the first path (path, jump, squares)."""
    if state.phase == 0:
        return (min(state.placements()),), False, 0
    ps = state.paths()
    paths = [(tuple(int(x) for x in ps.pts[ps.off[i]:ps.off[i + 1]]), bool(ps.jump[i]), int(ps.nsq[i]))
             for i in range(ps.m)]
    return min(paths, key=lambda p: (-(p[1] and len(p[0]) >= 3), -(p[2] > 0), -p[1], p[0]))


def screenshot(driver, name: str) -> None:
    folder = os.environ.get("JIU_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(folder) / name))


def test_whole_game_against_random_in_chromium(browser, board_url):
    page = Page(browser)
    browser.get(board_url)
    page.wait(lambda: page.body("ready") == "1", what="the page to load")
    page.start("random", "w", ", ".join(f"{k}={v}" for k, v in RULES.items()), seed=1)
    assert page.body("turn") == "human" and "your move" in page.text("status")
    # an illegal click is refused with the rule's reason, and nothing is played
    page.click("a1")
    assert page.text("message") == "placement a1: the first two placements go on the centre points g7 and h8"
    assert page.state().ply == 0
    played = {"placements": 0, "chains": 0, "squares": 0, "refused_in_battle": False}
    while page.body("turn") == "human":
        state = page.state()
        path, jump, squares = choose(state)
        names = [POINT_NAMES[p] for p in path]
        if state.phase == 0:
            page.click(names[0])
            played["placements"] += 1
            continue
        if not played["refused_in_battle"]:  # a click on an opponent stone is refused with the reason
            enemy = POINT_NAMES[int((state.board == 2 - state.side).nonzero()[0][0])]
            page.click(enemy)
            assert page.text("message") == f"{enemy} is an opponent stone: a move starts from a stone of the side to move"
            played["refused_in_battle"] = True
        ply = state.ply
        page.click(names[0])
        assert page.count("[data-step], [data-hop]") > 0  # the server's next points are shown
        for name in names[1:]:
            page.click(name)
        if page.state().ply == ply and page.d.find_element(page.By.ID, "stop-chain").is_enabled():
            page.click(names[-1])  # the chain could go on: stop it here by clicking its end again
        if squares:
            left = state.victims_left(path, jump)
            victims = [POINT_NAMES[v] for v in left[-min(squares, len(left)):]]  # not the engine's first choice
            assert page.count(".victim-choice") == len(left)
            for v in victims:
                page.click(v)
            played["squares"] += 1
        played["chains"] += jump and len(path) >= 3
        page.idle()
        assert page.state().ply > ply or page.body("turn") == "over", page.text("message")
    page.idle()
    assert page.body("turn") == "over" and "game over" in page.text("status")
    assert played["placements"] == 98 and played["chains"] >= 1 and played["squares"] >= 1
    screenshot(browser, "board-game-over.png")

    # download the record through the page and replay it with the command line
    browser.find_element(page.By.ID, "dl-json").click()
    page.wait(lambda: [p for p in browser.downloads.iterdir() if p.suffix == ".json"], what="the download")
    record = next(p for p in browser.downloads.iterdir() if p.suffix == ".json")
    page.wait(lambda: record.stat().st_size > 0 and json.loads(record.read_text()), what="the whole download")
    data = json.loads(record.read_text())
    white_moves = data["moves"][0::2][:98] + data["moves"][196::2]
    assert any("x" in m.split("/")[0] and m.count("x") >= 2 for m in data["moves"][197::2])  # White's chain
    assert any("/" in m for m in data["moves"][197::2]) and white_moves
    out = subprocess.run([sys.executable, "cli.py", "replay", str(record)], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    summary = json.loads(out.stdout)
    assert summary["moves"] == len(data["moves"]) and summary["terminal"] is True
    assert summary["engine_result"] == data["result"] and summary["final_fen"] == page.body("jfen")


def test_agent_candidates_are_drawn(browser, board_url):
    page = Page(browser)
    browser.get(board_url)
    page.wait(lambda: page.body("ready") == "1", what="the page to load")
    page.start("mcts:sims=32", "w", "max_battle_plies=40, adjudicate=stones")
    for point in ("g7", "a1"):
        page.click(point)
        page.idle()
    rows = browser.find_elements(page.By.CSS_SELECTOR, "#candidates tbody tr")
    assert len(rows) == 3 and page.count("[data-candidate-marker]") == 3
    assert "P(White wins)" in page.text("win")
    moves = [li.text for li in browser.find_elements(page.By.CSS_SELECTOR, "#moves li")]
    assert rows[0].text.split()[1] == moves[-1]  # the agent played its most visited candidate
    screenshot(browser, "board-layout-candidates.png")
    if os.environ.get("JIU_SCREENSHOTS"):  # play on into the battle for a second picture
        typed = browser.find_element(page.By.ID, "move-text")
        while page.state().phase == 0 and page.body("turn") == "human":
            typed.send_keys(POINT_NAMES[min(page.state().placements())] + "\n")
            page.idle()
        for _ in range(6):
            if page.body("turn") != "human":
                break
            path, jump, squares = choose(page.state())
            state = page.state()
            from core.notation import Move

            left = state.victims_left(path, jump)
            move = Move(path, jump, tuple(left[:min(squares, len(left))]) if squares else ())
            typed.send_keys(str(move) + "\n")
            page.idle()
        screenshot(browser, "board-battle-candidates.png")
