"""The board page of a running Virtual Fight game follows it turn by turn: warriors' squares and
facings, the last turn's shots, the move list; then the result."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import screenshot, wait_for
from tests.browser.players import FightTeam, find_table

pytestmark = pytest.mark.integration

MOVES = ("MOVE&RIGHT", "MOVE&DOWN", "MOVE&UP", "MOVE&LEFT")


def warrior(driver, team: int, n: int):
    found = driver.find_elements(By.CSS_SELECTOR, f'#board .warrior[data-team="{team}"][data-id="{n}"]')
    return found[0] if found else None


def square(driver, team: int, n: int):
    """(x, y, facing) of a warrior as drawn, or None."""
    return driver.execute_script(
        """const w = document.querySelector('#board .warrior[data-team="' + arguments[0] + '"][data-id="' + arguments[1] + '"]');
           if (!w) return null;
           const c = w.closest('.cell');
           return [Number(c.dataset.x), Number(c.dataset.y), w.dataset.facing];""",
        team,
        n,
    )


def test_the_board_of_a_running_fight_updates_as_turns_are_played(site, page, connect):
    red = FightTeam(connect, "red", "fboard")  # joins first: team 0
    blue = FightTeam(connect, "blue", "fboard")
    assert red.wait_ready() == "READY" and blue.wait_ready() == "READY"
    table_id = find_table(site, "fight", "red", "blue")
    page.get(f"{site.url}/game.html?id={table_id}")

    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#board .warrior")) == 10, "ten warriors")
    assert page.find_elements(By.CSS_SELECTOR, "#board .cell.wall"), "the map's walls are drawn"
    assert "red" in page.find_element(By.CSS_SELECTOR, '#players li[data-seat="0"]').text
    start = red.position(0)
    wait_for(page, lambda d: square(d, 0, 0)[:2] == list(start), "red warrior 0 on its start square")
    assert not page.find_elements(By.CSS_SELECTOR, "#board .shot")

    for turn, facing in enumerate(("UP", "DOWN", "UP"), 1):
        red.act(0, *MOVES)
        red.act(1, "SHOOT")
        for n in (2, 3, 4):
            red.act(n, "NONE")
        blue.act(0, f"NONE&{facing}")
        for n in (1, 2, 3, 4):
            blue.act(n, "NONE")
        assert red.wait_ready() == "READY" and blue.wait_ready() == "READY"
        x, y = red.position(0)
        assert blue.facing(0) == facing

        wait_for(
            page,
            lambda d: (square(d, 0, 0) or [None] * 3)[:2] == [x, y]
            and (square(d, 1, 0) or [None] * 3)[2] == facing
            and len(d.find_elements(By.CSS_SELECTOR, "#moves li")) == turn,
            f"turn {turn} on the board",
        )
        assert page.find_elements(By.CSS_SELECTOR, '#board svg .shot[data-team="0"][data-id="1"]'), "the shot"
        assert page.find_element(By.ID, "turn").text == str(turn)
        row, col = red.ask("1&POS").split(",")  # the protocol's POS: row,col
        shots = page.find_element(By.CSS_SELECTOR, "#board .shot-list").text
        assert f"team 0 warrior 1 {row},{col} \u2192 " in shots and "(squares as row,col)" in shots
        if turn == 2:
            screenshot(page, "fight-board-after-2-turns")

    # blue leaves (this site has no grace: its team forfeits at once); red finishes the turn and wins.
    blue.c.close()
    for n in range(5):
        red.act(n, "NONE")
    assert red.wait_ready() == "GAMEOVER&WIN"
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed(), "the result")
    assert page.find_element(By.ID, "result").text.startswith("red won: blue forfeited")


def test_a_fight_replay_lists_each_turns_moves_shots_and_deaths(site, page, connect):
    red = FightTeam(connect, "scarlet", "freplay")  # team 0
    blue = FightTeam(connect, "azure", "freplay")
    assert red.wait_ready() == "READY" and blue.wait_ready() == "READY"
    above, below, mover = red.position(0), red.position(1), red.position(2)
    assert above[0] == below[0] and below[1] - above[1] == 3, "the default map: warriors 0 and 1 in one column"
    assert red.act(0, "SHOOT&DOWN") == "SHOOT&DOWN"  # three squares: warrior 1 is hit (its own team)
    red.act(2, "MOVE&RIGHT", "MOVE&LEFT", "MOVE&UP", "MOVE&DOWN")
    for n in (1, 3, 4):
        red.act(n, "NONE")
    for n in range(5):
        blue.act(n, "NONE")
    assert red.wait_ready() == "READY"
    moved = red.position(2)
    blue.c.close()
    for n in (0, 2, 3, 4):
        red.act(n, "NONE")
    assert red.wait_ready() == "GAMEOVER&WIN"

    def ours(data):
        return next((m for m in data["matches"] if sorted(s["name"] for s in m["seats"]) == ["azure", "scarlet"]), None)

    match = site.poll_api("/api/matches?game=fight&limit=100", ours, "the fight of scarlet and azure")
    page.get(f"{site.url}/replay.html?id={match['id']}")
    first = '#moves li[data-n="1"]'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, first), "the replay's turns")
    text = page.find_element(By.CSS_SELECTOR, first).text
    rc = lambda xy: f"{xy[1]},{xy[0]}"  # noqa: E731 - (x, y) as the protocol's row,col
    assert text.startswith("turn 1: 0.0 shoots down (own)"), text
    assert f"0.1 dies at {rc(below)}" in text and f"0.2 moves to {rc(moved)}" in text, text
    screenshot(page, "fight-replay")


def test_every_teams_bank_runs_during_a_simultaneous_turn(site, page, connect):
    # The site's Virtual Fight plays on a chess clock (10m+0, 20 s a turn at most).
    red = FightTeam(connect, "ruby", "fclock")
    blue = FightTeam(connect, "navy", "fclock")
    assert red.wait_ready() == "READY" and blue.wait_ready() == "READY"
    table_id = find_table(site, "fight", "ruby", "navy")
    page.get(f"{site.url}/game.html?id={table_id}")

    def seconds(d, team):
        found = d.find_elements(By.CSS_SELECTOR, f'#clocks li[data-seat="{team}"]')
        value = found[0].get_attribute("data-seconds") if found else None
        return None if value in (None, "", "null") else float(value)

    wait_for(page, lambda d: all(seconds(d, t) is not None for t in (0, 1)), "both teams' banks")
    start = [seconds(page, t) for t in (0, 1)]
    assert all(590 < s <= 600 for s in start), start
    wait_for(page, lambda d: all(seconds(d, t) < s - 0.4 for t, s in enumerate(start)), "both banks counting down")
    for team in (red, blue):
        for n in range(5):
            team.act(n, "NONE")
    assert red.wait_ready() == "READY"
    blue.c.close()  # its team forfeits: the game ends
    for n in range(5):
        red.act(n, "NONE")
    assert red.wait_ready() == "GAMEOVER&WIN"
