"""The board page of a running Connect Four game follows the game move by move and marks the
winning line at the end (every line, when the last stone completes two)."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import screenshot, wait_for
from tests.browser.players import find_table

pytestmark = pytest.mark.integration

_READ = """
const discs = {};
document.querySelectorAll('#board .cell').forEach(c => {
  const d = c.querySelector('.disc');
  if (d) discs[c.dataset.x + ',' + c.dataset.y] = Number(d.dataset.seat);
});
const win = Array.from(document.querySelectorAll('#board .cell.win')).map(c => c.dataset.x + ',' + c.dataset.y);
return {discs: discs, win: win.sort(), moves: document.querySelectorAll('#moves li').length};
"""


def _watch_a_game(site, page, connect, table, columns):
    """carla (seat 0) and dimitri (seat 1) play ``columns`` at ``table`` while the page watches
    each move appear; returns the page's board at the end."""
    alice, bob = connect("connect4"), connect("connect4")
    for player, name in ((alice, "carla"), (bob, "dimitri")):
        player.send(f"NAME {name}", "BOARD OFF", f"TABLE {table}")
        player.expect("OK TABLE")  # carla is seated first, so she is seat 0 whatever the load
    alice.expect("START")
    bob.expect("START")
    table_id = find_table(site, "connect4", "carla", "dimitri")
    page.get(f"{site.url}/game.html?id={table_id}")
    wait_for(page, lambda d: d.execute_script(_READ)["moves"] == 0 and d.find_elements(By.CSS_SELECTOR, "#board .cell"),
             "the empty board")
    assert len(page.find_elements(By.CSS_SELECTOR, "#board .cell")) == 7 * 6
    played = {}
    for n, column in enumerate(columns, 1):
        player = alice if n % 2 else bob
        player.expect("YOURMOVE")
        player.send(str(column))
        row = sum(1 for (x, _) in played if x == column)
        played[(column, row)] = (n - 1) % 2
        expected = {f"{x},{y}": seat for (x, y), seat in played.items()}
        wait_for(page, lambda d: d.execute_script(_READ)["discs"] == expected, f"move {n} on the board")
        if n == 1:
            assert page.find_element(By.ID, "to-move").text == "seat 1 (O) dimitri (guest)"
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed(), "the result")
    return page.execute_script(_READ)


def test_the_board_of_a_running_connect4_game_updates_and_marks_the_win(site, page, connect):
    board = _watch_a_game(site, page, connect, "c4web", [0, 1, 0, 1, 0, 1, 0])
    assert board["win"] == ["0,0", "0,1", "0,2", "0,3"] and board["moves"] == 7
    assert page.find_element(By.ID, "result").text.startswith("carla won: four in a row")
    # Over: no "to move" any more, the result in words instead.
    assert not page.find_element(By.ID, "to-move").is_displayed()
    assert page.find_element(By.CSS_SELECTOR, ".turn-line").text == "Turn 7; finished: carla won: four in a row"
    screenshot(page, "connect4-board-won")


def test_a_last_stone_that_completes_two_lines_marks_both(site, page, connect):
    # dimitri's stone in column 2 completes the row y=1 and the falling diagonal (0,3)-(3,0).
    board = _watch_a_game(site, page, connect, "c4double", [1, 1, 0, 0, 0, 0, 2, 3, 4, 3, 0, 1, 4, 2])
    row = ["0,1", "1,1", "2,1", "3,1"]
    diagonal = ["0,3", "1,2", "2,1", "3,0"]
    assert board["win"] == sorted(set(row + diagonal))
    assert page.find_element(By.ID, "result").text.startswith("dimitri won: four in a row")
    screenshot(page, "connect4-board-two-lines")
