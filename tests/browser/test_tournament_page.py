"""The tournament pages: a real SPRT match between hosted bots (``gamed tournament run`` into the
site's records database) shown with its standings, crosstable, LLR curve and links to each game's
replay."""

import sys

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import screenshot, wait_for
from tests.competition.test_tournament_cli import BOT, gamed

pytestmark = pytest.mark.integration


def test_a_tournament_page_shows_the_match_its_curve_crosstable_and_replays(site, page, tmp_path):
    conf = tmp_path / "gamed.conf"
    conf.write_text(
        f'[records]\ndatabase = "{site.records}"\n[bots]\nisolation = "none"\n'
        f'[bots.newbot]\ngame = "kalaha"\ncommand = "{sys.executable} {BOT} 1 {tmp_path}"\n'
        f'[bots.oldbot]\ngame = "kalaha"\ncommand = "{sys.executable} {BOT} 2 {tmp_path}"\n'
        '[tournaments.tune]\ngame = "kalaha"\nformat = "sprt"\nbots = ["newbot", "oldbot"]\n'
        "elo0 = 0\nelo1 = 400\nalpha = 0.2\nbeta = 0.2\nmax_games = 6\n"
    )
    run = gamed("tournament", "run", "tune", "--config", str(conf), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    exported = site.api("/api/tournaments/tune")
    played = [g for g in exported["games"] if g["scores"] is not None]
    assert played and exported["match"] is not None

    page.get(site.url + "/")
    wait_for(page, lambda d: d.find_elements(By.ID, "tournaments-link"), "the tournaments link")
    page.find_element(By.ID, "tournaments-link").click()
    row = 'tr[data-name="tune"] td.name a'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, row), "the tournament in the list")
    listed = page.find_element(By.CSS_SELECTOR, 'tr[data-name="tune"]')
    assert "sprt" in listed.text and f"{len(played)}/" in listed.text
    page.find_element(By.CSS_SELECTOR, row).click()
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#standings tr[data-bot]"), "the standings")

    standings = {r.get_attribute("data-bot"): r for r in page.find_elements(By.CSS_SELECTOR, "#standings tr[data-bot]")}
    assert set(standings) == {"newbot", "oldbot"}
    for s in exported["standings"]:
        cells = standings[s["bot"]]
        assert float(cells.find_element(By.CSS_SELECTOR, ".points").text) == s["points"]
        assert cells.find_element(By.CSS_SELECTOR, ".games").text == str(s["games"])
    cross = exported["crosstable"]["newbot"]["oldbot"]
    cell = page.find_element(By.CSS_SELECTOR, '#crosstable tr[data-bot="newbot"] td[data-against="oldbot"]')
    points, games = cell.text.split("/")
    assert (float(points), int(games)) == (cross[0], cross[1])
    match = exported["match"]
    line = page.find_element(By.ID, "match-line").text
    assert f"{match['wins']} won, {match['draws']} drawn, {match['losses']} lost" in line and "LLR" in line
    curve = page.find_element(By.CSS_SELECTOR, "#llr-curve polyline.llr")
    assert curve.get_attribute("data-pairs") == str(len(exported["llr_curve"])) and exported["llr_curve"]
    assert page.find_elements(By.CSS_SELECTOR, "#llr-curve line.bound.upper")
    assert page.find_elements(By.CSS_SELECTOR, "#llr-curve line.bound.lower")
    assert page.find_element(By.ID, "progress").get_attribute("value") == str(len(played))

    links = page.find_elements(By.CSS_SELECTOR, "#tournament-games td.watch a")
    assert len(links) == len(played)
    first = played[0]
    assert links[0].get_attribute("href").endswith(f"replay.html?id={first['match_id']}")
    screenshot(page, "tournament")
    links[0].click()
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#step[data-total]"), "the game's replay")
    names = page.find_element(By.ID, "players").text
    assert "newbot" in names and "oldbot" in names
