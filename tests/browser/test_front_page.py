"""The front page lists a live game, keeps it up to date without reloading, and links to its board."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import wait_for
from tests.browser.players import KalahaGame

pytestmark = pytest.mark.integration


def test_the_front_page_lists_a_live_game_and_links_to_its_board(site, page, connect):
    game = KalahaGame(connect, ("carol", "dave"), "front")
    page.get(site.url + "/")

    def our_row(d):
        for row in d.find_elements(By.CSS_SELECTOR, "#games tr[data-id]"):
            if "carol" in row.text and "dave" in row.text:
                return row
        return None

    row = wait_for(page, our_row, "the game of carol and dave on the front page")
    table_id = row.get_attribute("data-id")
    assert row.get_attribute("data-game") == "kalaha"
    assert row.find_element(By.CSS_SELECTOR, "td.game").text == "Kalaha"
    assert row.find_element(By.CSS_SELECTOR, "td.turn").text == "0"
    assert row.find_element(By.CSS_SELECTOR, "td.spectators").text.isdigit()
    assert page.find_element(By.CSS_SELECTOR, "#leaderboards a[data-game=kalaha]").get_attribute("href").endswith(
        "ratings.html?game=kalaha"
    )

    game.move()  # the list follows the game live
    wait_for(
        page,
        lambda d: d.find_element(By.CSS_SELECTOR, f'#games tr[data-id="{table_id}"]').get_attribute("data-turn") == "1",
        "the front page to show turn 1",
    )
    assert page.find_element(By.CSS_SELECTOR, f'#games tr[data-id="{table_id}"] td.turn').text == "1"

    page.find_element(By.CSS_SELECTOR, f'#games tr[data-id="{table_id}"] a').click()
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#board .pit")) == 12, "the board page")
    assert page.current_url.endswith(f"game.html?id={table_id}")
    players = page.find_element(By.ID, "players").text
    assert "carol" in players and "dave" in players
