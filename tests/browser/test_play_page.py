"""People play in the browser (play.html, through the bot API): as a guest against the computer
to the end by clicking the highlighted pits or columns, and against a person on the Kalaha port."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.integration

# What a legal action is on each board: the clickable element play.html marks.
LEGAL = {"kalaha": ".pit.legal", "connect4": ".cell.legal"}


def start(page, site, game, name, opponent, table=""):
    page.get(f"{site.url}/play.html?game={game}")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, f'#game option[value="{game}"]'), f"{game} offered")
    assert Select(page.find_element(By.ID, "game")).first_selected_option.get_attribute("value") == game
    page.find_element(By.ID, "name").send_keys(name)
    Select(page.find_element(By.ID, "opponent")).select_by_value(opponent)
    if table:
        page.find_element(By.ID, "table").send_keys(table)
    page.find_element(By.ID, "play").click()


def legal_and_buttons(page):
    """(the board's highlighted actions, the action buttons' texts), read at one moment."""
    return page.execute_script(
        "return [Array.from(document.querySelectorAll('#board .legal')).map(e => e.getAttribute('data-action')),"
        " Array.from(document.querySelectorAll('#actions button')).map(e => e.getAttribute('data-action')),"
        " document.getElementById('board').getAttribute('data-turn')]"
    )


@pytest.mark.parametrize("game, level", [("kalaha", "random"), ("connect4", "")])
def test_a_guest_plays_the_computer_to_the_end_by_clicking_the_legal_actions(site, page, game, level):
    games = [g["name"] for g in site.api("/api/bot/games")["games"]]
    if game not in games:
        pytest.fail(f"{game} is not offered by the bot API: {games}")
    levels = [g for g in site.api("/api/bot/games")["games"] if g["name"] == game][0].get("levels") or {}
    start(page, site, game, f"web-{game}", "engine:" + (level if level in levels else next(iter(levels), "")))
    clicks = 0
    for _ in range(200):
        wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed()
                 or d.find_elements(By.CSS_SELECTOR, LEGAL[game]), "a move to make or the end")
        if page.find_element(By.ID, "result").is_displayed():
            break
        legal, buttons, turn = legal_and_buttons(page)
        if not legal:
            continue  # the page was between two states
        # Every legal action is highlighted on the board (a column: each of its cells).
        assert sorted(set(legal)) == sorted(buttons), (legal, buttons)
        if clicks == 2:
            screenshot(page, f"play-{game}-mid-game")
        page.find_element(By.CSS_SELECTOR, f'#board .legal[data-action="{legal[0]}"]').click()
        clicks += 1
        wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed()
                 or d.find_element(By.ID, "board").get_attribute("data-turn") != turn, "the move played")
    result = page.find_element(By.ID, "result")
    assert result.is_displayed() and clicks >= 3
    assert result.get_attribute("data-reason") not in ("strikes", "timeout"), result.text
    assert any(word in result.text for word in ("won", "draw")), result.text
    matches = site.poll_api(f"/api/players/web-{game}", lambda p: p["matches"], "the match recorded")
    assert matches[0]["game"] == game


def test_a_person_in_the_browser_meets_a_person_on_telnet(site, page, connect):
    start(page, site, "kalaha", "webby", "person:", table="web-t1")
    wait_for(page, lambda d: "Waiting" in d.find_element(By.ID, "status").text, "waiting at the table")
    tel = connect("kalaha")
    tel.send("NAME telly", "BOARD OFF", "TABLE web-t1")
    assert tel.expect("START").split()[2] == "B"
    wait_for(page, lambda d: "telly" in d.find_element(By.ID, "seats").text, "the opponent's name")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".pit.legal"), "the pits to play")
    legal, buttons, _ = legal_and_buttons(page)
    assert legal == ["A1", "A2", "A3", "A4", "A5", "A6"] and buttons == legal
    page.find_element(By.CSS_SELECTOR, '#board .pit[data-action="A3"]').click()
    assert tel.expect("PLAYED").startswith("PLAYED A A3")
    tel.expect("YOURMOVE")
    tel.send("MOVE B1")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, ".pit.legal"), "the bot's turn again")
    page.find_element(By.ID, "resign").click()
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed(), "the result")
    assert "telly won" in page.find_element(By.ID, "result").text
    assert tel.expect("RESULT").startswith("RESULT WIN")


def test_a_guest_sets_up_and_moves_in_stratego_against_an_ai_program(site, page):
    """Stratego: the setup typed into the form (its grammar shown, examples as buttons), then a
    move by clicking a unit and one of its highlighted destinations; the AI program (which as
    BLUE never moves) loses on time, and the match is recorded."""
    start(page, site, "stratego", "web-stratego", "engine:taker")
    wait_for(page, lambda d: d.find_element(By.ID, "typed").is_displayed(), "the setup to make")
    assert page.find_element(By.ID, "grammar").text, "the setup's grammar is shown"
    examples = [b.get_attribute("data-action") for b in page.find_elements(By.CSS_SELECTOR, "#actions button")]
    assert len(examples) == 3 and all(len(e.split("/")) == 4 for e in examples), examples
    page.find_element(By.ID, "typed-action").send_keys(examples[1])
    page.find_element(By.CSS_SELECTOR, "#typed button[type=submit]").click()
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#board .cell.source"), "units to move")
    assert not page.find_element(By.ID, "typed").is_displayed()
    screenshot(page, "play-stratego-first-move")
    source = page.find_element(By.CSS_SELECTOR, "#board .cell.source")
    x, y = int(source.get_attribute("data-x")), int(source.get_attribute("data-y"))
    source.click()
    targets = page.find_elements(By.CSS_SELECTOR, "#board .cell.target")
    assert targets, "a selected unit shows where it can go"
    moves = [t.get_attribute("data-action") for t in targets]
    assert all(m.split()[:2] == [str(x), str(y)] for m in moves), moves
    buttons = [b.get_attribute("data-action") for b in page.find_elements(By.CSS_SELECTOR, "#actions button")]
    assert set(moves) <= set(buttons), (moves, buttons)
    turn = page.find_element(By.ID, "board").get_attribute("data-turn")
    targets[0].click()
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed()
             or d.find_element(By.ID, "board").get_attribute("data-turn") != turn, "the move played")
    wait_for(page, lambda d: d.find_element(By.ID, "result").is_displayed(), "the end (the AI does not move)", timeout=30)
    result = page.find_element(By.ID, "result")
    assert result.text == "web-stratego won: taker ran out of time", result.text
    matches = site.poll_api("/api/players/web-stratego", lambda p: p["matches"], "the match recorded")
    assert matches[0]["game"] == "stratego"
