"""A player's page: reached from a name on the front page, it shows the player's ratings per game
and recent matches (seat, opponents, the result in words)."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import screenshot, wait_for
from tests.browser.players import KalahaGame

pytestmark = pytest.mark.integration


def test_a_players_page_shows_ratings_and_recent_matches(site, page, connect):
    tokens = {name: site.add_account(name) for name in ("kate", "liam")}
    game = KalahaGame(connect, ("kate", "liam"), "ppage", tokens=tokens)
    game.play_to_end()

    def ours(data):
        return next((m for m in data["matches"] if sorted(s["name"] for s in m["seats"]) == ["kate", "liam"]), None)

    match = site.poll_api("/api/matches?game=kalaha&limit=100", ours, "the match of kate and liam")
    kate = kate_seat = next(s["seat"] for s in match["seats"] if s["name"] == "kate")
    player = site.api("/api/players/kate")

    page.get(site.url + "/")
    link = f'#matches tr[data-id="{match["id"]}"] a.player-link[data-name="kate"]'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, link), "kate's name on the front page")
    page.find_element(By.CSS_SELECTOR, link).click()
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#player-ratings tr[data-game]"), "kate's ratings")
    assert page.current_url.endswith("player.html?name=kate")
    assert page.find_element(By.ID, "title").text == "kate"
    (rating,) = player["ratings"]
    row = page.find_element(By.CSS_SELECTOR, '#player-ratings tr[data-game="kalaha"]')
    # "1658 ± 949 ?": the rating, the half-width of its 95 % interval, provisional after one game
    half = round((rating["high"] - rating["low"]) / 2)
    assert rating["provisional"] is True
    assert row.find_element(By.CSS_SELECTOR, "td.rating").text == f"{round(rating['rating'])} \u00b1 {half} ?"
    mark = row.find_element(By.CSS_SELECTOR, "td.rating abbr.provisional")
    assert "provisional" in mark.get_attribute("title")
    assert row.get_attribute("data-provisional") == "true" and float(row.get_attribute("data-sigma")) == rating["sigma"]
    assert row.find_element(By.CSS_SELECTOR, "td.rank").text == str(rating["rank"])
    assert row.find_element(By.CSS_SELECTOR, "td.games").text == "1"
    played = page.find_element(By.CSS_SELECTOR, f'#player-matches tr[data-id="{match["id"]}"]')
    assert played.find_element(By.CSS_SELECTOR, "td.seat").text == f"seat {kate} ({'AB'[kate]})"
    assert played.find_element(By.CSS_SELECTOR, "td.opponents").text == "liam"
    assert played.find_element(By.CSS_SELECTOR, "td.result").text == match["outcome"]
    # the live games come from a request of their own: wait for it, not for the "Loading…" row
    live = "kate is not playing right now."
    wait_for(page, lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "#player-games tr.empty") if r.text == live], live)
    screenshot(page, "player-page")

    # The match's replay shows each rated seat's rating before and after it.
    detail = site.api(f"/api/matches/{match['id']}")
    page.get(f"{site.url}/replay.html?id={match['id']}")
    for s in detail["seats"]:
        change = f'#players li[data-seat="{s["seat"]}"] span.rating-change'
        wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, change), f"{s['name']}'s rating change")
        text = page.find_element(By.CSS_SELECTOR, change).text

        def shown(mu, sigma):
            return f"{round(mu)} \u00b1 {round(1.959964 * sigma)}"

        assert text == f"{shown(s['rating_before'], s['sigma_before'])} \u2192 {shown(s['rating_after'], s['sigma_after'])}"
    assert detail["seats"][0]["rating_after"] != detail["seats"][0]["rating_before"]

    # Both are on the leaderboard, best first.
    page.get(f"{site.url}/ratings.html?game=kalaha")
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#ratings tr[data-name]")) >= 2, "the leaderboard")
    rows = {r.get_attribute("data-name"): r for r in page.find_elements(By.CSS_SELECTOR, "#ratings tr[data-name]")}
    assert {"kate", "liam"} <= rows.keys()
    order = [float(r.get_attribute("data-conservative")) for r in rows.values()]
    assert order == sorted(order, reverse=True), "best first, by the conservative rating"
    assert rows["kate"].find_element(By.CSS_SELECTOR, "td.games").text == "1"
    # the winner above the loser, with the same uncertainty (one game each), both provisional
    kate, liam = (site.api(f"/api/players/{n}")["ratings"][0] for n in ("kate", "liam"))
    mine, theirs = match["scores"][kate_seat], match["scores"][1 - kate_seat]
    if mine == theirs:  # a drawn game between newcomers moves neither
        assert kate["rating"] == pytest.approx(1500) == liam["rating"]
    else:
        winner, loser = (kate, liam) if mine > theirs else (liam, kate)
        assert winner["rating"] > 1500 > loser["rating"]
    assert kate["sigma"] == liam["sigma"] < 500
    for name, r in (("kate", kate), ("liam", liam)):
        cell = rows[name].find_element(By.CSS_SELECTOR, "td.rating").text
        assert cell == f"{round(r['rating'])} \u00b1 {round((r['high'] - r['low']) / 2)} ?"


def test_a_name_that_never_played_is_said_so_without_an_error(site, page):
    page.get(site.url + "/player.html?name=nobody-here")
    # the table shows a "Loading…" row of the same class until the answer is in: wait for the answer
    empty = "nobody-here has no finished matches yet."
    wait_for(page, lambda d: [r for r in d.find_elements(By.CSS_SELECTOR, "#player-matches tr.empty") if r.text == empty], empty)
    assert [r.text for r in page.find_elements(By.CSS_SELECTOR, "#player-matches tbody tr")] == [empty]
    assert not page.find_element(By.ID, "error").is_displayed()
