"""Guests (players without an account, never rated) are shown as guests: "dora (guest)" on the
front page's list of matches, the replay page and the other player's page."""

import sqlite3

import pytest
from selenium.webdriver.common.by import By

from gamed import records
from tests.browser.conftest import wait_for

pytestmark = pytest.mark.integration


def _store(path, record):
    """Store ``record`` in the running daemon's SQLite records (WAL: the daemon keeps reading)."""
    conn = sqlite3.connect(path)
    try:
        records._sqlite_opened(conn)
        match_id = records._store(conn.cursor(), records.SQLITE, record)
        conn.commit()
    finally:
        conn.close()
    return match_id


def test_a_guest_seat_is_shown_as_a_guest(site, page):
    match_id = _store(
        site.records,
        records.MatchRecord(
            game="connect4",
            started=1700000000.0,
            ended=1700000060.0,
            seats=(records.Seat(0, "dora", False, "guest"), records.Seat(1, "emil", True, "player", 7)),
            options={},
            moves=(),
            scores=(1.0, 0.0),
            reason="four in a row",
        ),
    )
    seats = site.api(f"/api/matches/{match_id}")["seats"]
    assert [(s["name"], s["kind"], s["account"], s["rated"], s["rating_after"]) for s in seats] == [
        ("dora", "guest", False, False, None),
        ("emil", "player", True, True, None),  # rated, but a guest is no opponent to be rated against
    ]

    page.get(site.url + "/")
    row = f'#matches tr[data-id="{match_id}"]'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, row), "the match on the front page")
    players = page.find_element(By.CSS_SELECTOR, row + " td.players")
    assert players.text == "dora (guest) vs emil"
    assert [a.text for a in players.find_elements(By.CSS_SELECTOR, "a.player-link")] == ["dora", "emil"]

    page.get(f"{site.url}/replay.html?id={match_id}")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, '#players li[data-seat="1"]'), "the replay's players")
    texts = [li.text for li in page.find_elements(By.CSS_SELECTOR, "#players li")]
    assert texts[0].endswith("dora (guest)") and texts[1].endswith("emil") and "guest" not in texts[1]

    page.get(site.url + "/player.html?name=emil")
    mine = f'#player-matches tr[data-id="{match_id}"]'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, mine), "emil's match")
    assert page.find_element(By.CSS_SELECTOR, mine + " td.opponents").text == "dora (guest)"
    page.get(site.url + "/player.html?name=dora")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, mine), "dora's match")
    assert page.find_element(By.CSS_SELECTOR, mine + " td.seat").text.endswith("(guest)")
    assert page.find_element(By.CSS_SELECTOR, mine + " td.opponents").text == "emil"
