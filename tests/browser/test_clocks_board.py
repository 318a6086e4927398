"""The board page shows both clocks of a game on a chess clock, the one of the side to move
counting down (a Kalaha table asked for with TABLE ... CLOCK 5m+2s)."""

import pytest
from selenium.webdriver.common.by import By

from tests.browser.conftest import wait_for
from tests.browser.players import KalahaGame, find_table

pytestmark = pytest.mark.integration


def seconds(driver, seat: int):
    found = driver.find_elements(By.CSS_SELECTOR, f'#clocks li[data-seat="{seat}"]')
    value = found[0].get_attribute("data-seconds") if found else None
    return None if value in (None, "", "null") else float(value)


def test_the_clock_of_the_side_to_move_runs_and_the_other_waits(site, page, connect):
    game = KalahaGame(connect, ("carl", "dora"), "kclock CLOCK 5m+2s")
    table_id = find_table(site, "kalaha", "carl", "dora")
    page.get(f"{site.url}/game.html?id={table_id}")

    wait_for(page, lambda d: seconds(d, 0) is not None and seconds(d, 1) == 300.0, "both banks of 5 minutes")
    first = seconds(page, 0)
    assert 280 < first <= 300.0
    wait_for(page, lambda d: seconds(d, 0) < first - 0.4, "A's clock counting down")
    assert seconds(page, 1) == 300.0, "B's clock waits"
    text = page.find_element(By.CSS_SELECTOR, '#clocks li[data-seat="1"] .clock').text
    assert text == "5:00.0", text

    game.move(lambda legal: "A3")  # no extra move: 2 s are added to A's bank, and now B's clock runs
    wait_for(page, lambda d: (seconds(d, 1) or 300) < 299.6, "B's clock counting down")
    a = seconds(page, 0)
    assert 290 < a <= 302.0
    wait_for(page, lambda d: seconds(d, 0) == a and (seconds(d, 1) or 300) < 299.0, "A's clock stopped, B's running")
