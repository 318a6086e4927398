"""The replay page steps through a finished match: forward, back, jump by the move list, the
arrow keys, the slider."""

import re

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import read_kalaha, screenshot, wait_for
from tests.browser.players import KalahaGame

pytestmark = pytest.mark.integration


def test_the_replay_page_steps_through_a_finished_match(site, page, connect):
    game = KalahaGame(connect, ("erin", "frank"), "replay")
    game.play_to_end()

    def ours(data):
        for m in data["matches"]:
            if sorted(s["name"] for s in m["seats"]) == ["erin", "frank"]:
                return m["id"]
        return None

    match_id = site.poll_api("/api/matches?game=kalaha", ours, "the finished match in the records")
    match = site.api(f"/api/matches/{match_id}")
    moves = match["moves"]
    total = len(moves)
    assert total == len(game.moves) >= 10
    states = [match["initial_state"]] + [m["state"] for m in moves]

    # The front page lists it among the recent matches and links to its replay.
    page.get(site.url + "/")
    link = f'#matches tr[data-id="{match_id}"] td.watch a'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, link), "the match on the front page")
    row = page.find_element(By.CSS_SELECTOR, f'#matches tr[data-id="{match_id}"]')
    assert "erin" in row.text and "frank" in row.text
    page.find_element(By.CSS_SELECTOR, link).click()

    def at(k: int):
        def check(d):
            step = d.find_element(By.ID, "step")
            board = read_kalaha(d)
            return (
                step.get_attribute("data-step") == str(k)
                and board["pits"] == states[k]["pits"]
                and board["stores"] == states[k]["stores"]
            )

        return check

    wait_for(page, at(0), "the start position")
    step = page.find_element(By.ID, "step")
    assert step.text == f"0 / {total}" and step.get_attribute("data-total") == str(total)
    assert read_kalaha(page)["pits"] == [[6] * 6, [6] * 6]
    assert len(page.find_elements(By.CSS_SELECTOR, "#moves li")) == total
    # Each move shows what it cost its mover's clock (the plain per-move limit: no bank left).
    for k, m in enumerate(moves, 1):
        (clock,) = page.find_elements(By.CSS_SELECTOR, f'#moves li[data-n="{k}"] span.clock')
        used = m["clock"][str(m["seat"])]["used"]
        assert clock.get_attribute("data-seat") == str(m["seat"]) and float(clock.get_attribute("data-used")) == used
        assert re.search(r"^\W*used \d+\.\d+ s$", clock.text.strip()), clock.text
    assert page.find_element(By.ID, "back").get_attribute("disabled") is not None

    page.find_element(By.ID, "forward").click()
    wait_for(page, at(1), "step 1")
    page.find_element(By.ID, "forward").click()
    wait_for(page, at(2), "step 2")
    page.find_element(By.ID, "back").click()
    wait_for(page, at(1), "back at step 1")

    jump = total // 2
    page.find_element(By.CSS_SELECTOR, f'#moves li[data-n="{jump}"] button').click()
    wait_for(page, at(jump), f"a jump to move {jump}")
    assert page.find_element(By.CSS_SELECTOR, f'#moves li[data-n="{jump}"]').get_attribute("aria-current") == "step"
    assert moves[jump - 1]["move"] in page.find_element(By.ID, "current-move").text
    screenshot(page, "replay-middle")

    body = page.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.ARROW_RIGHT)
    wait_for(page, at(jump + 1), "the right arrow key")
    body.send_keys(Keys.ARROW_LEFT)
    body.send_keys(Keys.ARROW_LEFT)
    wait_for(page, at(jump - 1), "the left arrow key")

    body.send_keys(Keys.END)
    wait_for(page, at(total), "the last position")
    result = page.find_element(By.ID, "result")
    stores = match["extra"]["final_state"]["stores"]
    names = {s["seat"]: s["name"] for s in match["seats"]}
    if stores[0] != stores[1]:  # the result in stones, not match points
        expected = f"{names[int(stores[1] > stores[0])]} won {max(stores)}\u2013{min(stores)}"
    else:
        expected = f"draw {stores[0]}\u2013{stores[1]}"
    assert result.is_displayed() and result.text == expected == match["outcome"]
    assert page.find_element(By.ID, "forward").get_attribute("disabled") is not None

    page.find_element(By.ID, "slider").send_keys(Keys.ARROW_LEFT)
    wait_for(page, at(total - 1), "the slider")
    assert not page.find_element(By.ID, "result").is_displayed()

    # Both played as guests: recorded, never rated (the leaderboard: tests/browser/test_player_page.py).
    assert [(s["kind"], s["rated"]) for s in match["seats"]] == [("guest", False), ("guest", False)]
