"""The board page of a running Kalaha game follows the game move by move, then shows the result."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import read_kalaha, screenshot, wait_for
from tests.browser.players import KalahaGame, find_table

pytestmark = pytest.mark.integration


def test_the_board_of_a_running_kalaha_game_updates_as_moves_are_played(site, page, connect):
    game = KalahaGame(connect, ("alice", "bob"), "kboard")
    table_id = find_table(site, "kalaha", "alice", "bob")
    page.get(f"{site.url}/game.html?id={table_id}")

    def shows(position, moves):
        pits, stores, _ = position
        return lambda d: (b := read_kalaha(d))["pits"] == pits and b["stores"] == stores and b["moves"] == moves

    wait_for(page, shows(game.position, 0), "the start position")
    assert read_kalaha(page)["pits"] == [[6] * 6, [6] * 6]
    assert page.find_element(By.CSS_SELECTOR, "#board").get_attribute("data-game") == "kalaha"
    assert page.find_element(By.CSS_SELECTOR, '#players li[data-seat="0"]').text.endswith(game.names["A"] + " (guest) (to move)")

    for n in range(1, 7):
        pit = game.move()
        wait_for(page, shows(game.position, n), f"move {n} ({pit}) on the board")
        assert page.find_element(By.ID, "turn").text == str(n)
        last = page.find_element(By.CSS_SELECTOR, "#moves li:last-child")
        assert last.get_attribute("data-n") == str(n) and pit.upper() in last.text.upper()
        mover = game.names["AB"[game.position[2]]]
        assert mover in page.find_element(By.ID, "to-move").text
    screenshot(page, "kalaha-board-after-6-moves")
    assert not page.find_element(By.ID, "result").is_displayed()

    game.play_to_end()
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed(), "the result")
    pits, stores, _ = game.position
    board = read_kalaha(page)
    assert (board["pits"], board["stores"], board["moves"]) == (pits, stores, len(game.moves))
    result = page.find_element(By.ID, "result").text
    if stores[0] != stores[1]:  # the result in stones, the winner's first
        winner = game.names["AB"[stores[1] > stores[0]]]
        assert f"{winner} won {max(stores)}\u2013{min(stores)}" in result, result
    else:
        assert f"draw {stores[0]}\u2013{stores[1]}" in result, result
    assert "(end)" not in result and " 1, " not in result, "no jargon and no match points"
    # Once over, the page no longer says who is to move but how the game ended.
    assert not page.find_element(By.ID, "to-move").is_displayed()
    assert page.find_element(By.ID, "over").text.startswith("; finished: ")
