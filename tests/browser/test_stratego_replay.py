"""Stratego and Combat boards for people: a stored Stratego match won by taking the flag replays
to a last frame with the capture applied, its move in words, RED drawn red, classic ranks with a
legend and seats numbered from 0 with names; Combat's units and moves likewise."""

import re

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from tests.browser.conftest import screenshot, wait_for

pytestmark = pytest.mark.integration

_UNIT = """
const c = document.querySelector('#board .cell[data-x="' + arguments[0] + '"][data-y="' + arguments[1] + '"]');
const u = c && c.querySelector('.unit');
return u ? {owner: Number(u.dataset.owner), unit: u.dataset.unit, text: u.textContent,
            colour: getComputedStyle(u).backgroundColor} : null;
"""
RED, BLUE = "rgb(192, 57, 43)", "rgb(31, 95, 191)"


def test_a_stratego_replay_ends_on_the_flag_capture_with_the_move_in_words(site, page):
    match = site.poll_api(
        "/api/matches?game=stratego", lambda d: d["matches"] and d["matches"][-1], "a stored Stratego match"
    )
    red, blue = (s["name"] for s in match["seats"])
    page.get(f"{site.url}/replay.html?id={match['id']}")
    wait_for(page, lambda d: d.find_element(By.ID, "step").get_attribute("data-total") == "1", "the replay")
    start = page.execute_script(_UNIT, 0, 3)
    assert (start["owner"], start["text"]) == (0, "?"), "RED's scout, not shown yet"
    assert start["colour"] == RED, "RED is drawn red"
    assert page.execute_script(_UNIT, 0, 6)["colour"] == BLUE
    players = {li.get_attribute("data-seat"): li.text for li in page.find_elements(By.CSS_SELECTOR, "#players li")}
    for seat, shown in (("0", f"seat 0 (red): {red}"), ("1", f"seat 1 (blue): {blue}")):
        # a rated program's seat is followed by its rating before and after the match
        assert players[seat] == shown or re.fullmatch(re.escape(shown) + r" \d+ \u00b1 \d+ \u2192 \d+ \u00b1 \d+", players[seat])
    legend = page.find_element(By.CSS_SELECTOR, "#board .legend").text
    assert "1 marshal" in legend and "9 scout" in legend and "S spy, B bomb, F flag" in legend
    assert [e.text for e in page.find_elements(By.CSS_SELECTOR, "#board .col-label")][:3] == ["A", "B", "C"]
    move = page.find_element(By.CSS_SELECTOR, '#moves li[data-n="1"]').text
    assert move.startswith(f"1. seat 0 (red) {red}: A3 \u2192 A6: takes the flag"), move

    page.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    wait_for(page, lambda d: d.find_element(By.ID, "step").get_attribute("data-step") == "1", "the last frame")
    attacker = page.execute_script(_UNIT, 0, 6)
    assert attacker == {"owner": 0, "unit": "scout", "text": "9", "colour": RED}, "the scout on the flag's square"
    assert page.execute_script(_UNIT, 0, 3) is None, "it left its own square"
    units = page.execute_script("return Array.from(document.querySelectorAll('#board .unit')).map(u => u.dataset.owner + u.dataset.unit)")
    assert "1flag" not in units and "0flag" in units, "BLUE's flag is gone, every other unit shown"
    assert page.find_element(By.ID, "current-move").text == f"seat 0 (red) {red}: A3 \u2192 A6: takes the flag"
    assert page.find_element(By.ID, "result").text == f"{red} won: flag captured"
    screenshot(page, "stratego-replay-flag-captured")


def test_combat_units_by_classic_rank_and_moves_in_words(site, page):
    page.get(site.url + "/")
    wait_for(page, lambda d: d.execute_script("return !!window.GamedBoard"), "the page's script")
    state = {
        "width": 3, "height": 2, "last": [[0, 0], [0, 1]],
        "cells": [
            [{"owner": 0, "unit": "marshal"}, "lake", {"owner": 1, "unit": None}],
            [{"owner": 1, "unit": "scout"}, {"owner": 0, "unit": "spy"}, {"owner": 2, "unit": "bomb"}],
        ],
    }  # fmt: skip
    drawn = page.execute_script(
        """const box = document.createElement('div'); document.body.appendChild(box);
           GamedBoard.render(box, 'combat', arguments[0]);
           return {units: Array.from(box.querySelectorAll('.unit')).map(u => u.textContent),
                   labels: Array.from(box.querySelectorAll('.unit')).map(u => u.getAttribute('aria-label')),
                   legend: box.querySelector('.legend').textContent};""",
        state,
    )
    assert drawn["units"] == ["1", "?", "9", "S", "B"]
    assert drawn["labels"][0] == "A0: seat 0 marshal (1)" and drawn["labels"][1] == "C0: seat 1 hidden unit"
    assert drawn["legend"].startswith("Units: 1 marshal, 2 general")
    words = page.execute_script(
        "return arguments[0].map(m => GamedBoard.moveWords('combat', {move: m}))",
        ["2,3-2,4", "2,3x2,4 scout>bomb: dies", "0,0x1,0 marshal>?: kills", "4,1x4,2 miner>flag: flag", "forfeits"],
    )
    assert words == [
        "C3 \u2192 C4",
        "C3 \u2192 C4: scout (9) attacks bomb (B) and is lost",
        "A0 \u2192 B0: marshal (1) takes a hidden unit",
        "E1 \u2192 E2: takes the flag",
        "forfeits",
    ]
