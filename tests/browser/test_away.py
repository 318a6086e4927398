"""A spectator sees a player who dropped as away, until when, and back again (issue 14)."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import wait_for
from tests.browser.players import find_table

pytestmark = pytest.mark.integration


def _seat_text(driver, seat: int) -> str:
    found = driver.find_elements(By.CSS_SELECTOR, f'#players li[data-seat="{seat}"]')
    return found[0].text if found else ""


def test_the_board_page_shows_a_dropped_player_away_and_back(site, page, connect):
    first, second = connect("connect4"), connect("connect4")
    for player, name in ((first, "wanda"), (second, "xavier")):
        player.send(f"NAME {name}", "BOARD OFF", "TABLE away-test")
        player.expect("OK TABLE")
    first.expect("YOURMOVE")
    second.expect("START")
    second.send("TOKEN")
    token = second.expect("TOKEN ").split()[1]
    table_id = find_table(site, "connect4", "wanda", "xavier")
    page.get(f"{site.url}/game.html?id={table_id}")
    wait_for(page, lambda d: "xavier" in _seat_text(d, 1), "the players")
    assert "away" not in _seat_text(page, 1)
    second.close()  # xavier drops: the Connect Four grace (60 s) keeps his seat
    assert first.expect("AWAY").startswith("AWAY 1 xavier ")
    wait_for(page, lambda d: "(away until" in _seat_text(d, 1), "xavier shown away")
    assert "away" not in _seat_text(page, 0)
    again = connect("connect4")
    again.send(f"RESUME {token}")
    again.expect("OK RESUME")
    assert first.expect("BACK") == "BACK 1 xavier"
    wait_for(page, lambda d: "xavier" in _seat_text(d, 1) and "away" not in _seat_text(d, 1), "xavier back")
    first.send("RESIGN")
    again.expect("RESULT")
