"""A match whose moves were pruned ([records] keep_moves, ``gamed records prune``) still has its
replay page: the result and the final board, and a note that its moves were pruned."""

import subprocess
import sys
import time

import pytest
from selenium.webdriver.common.by import By

from gamed import records
from gamed.kalaha import rules
from tests.browser.conftest import wait_for
from tests.integration.support import ROOT, child_env

pytestmark = pytest.mark.integration

START = {"pits": [[6] * 6, [6] * 6], "stores": [0, 0], "to_move": 0}


def test_a_pruned_match_says_its_moves_were_pruned(site, page):
    ended = time.time() - 100 * 86400
    after = rules.next_state(START, 0, "A3")
    record = records.MatchRecord(
        game="kalaha", started=ended - 60, ended=ended,
        seats=(records.Seat(0, "oldie", False, "guest"), records.Seat(1, "ancient", False, "guest")),
        options={"pits": 6, "stones": 6}, moves=(records.Move(1, 0, "A3", 1.0, after),), scores=(1.0, 0.0),
        reason="resign", initial_state=START, extra={"final_state": after}, table="kalaha-old",
    )
    store = records.RecordStore(f"sqlite:{site.records}", None, create=False)
    store.prepare()
    match_id = store.run_now(records._store, store.dialect, record)  # beside the running daemon (WAL)
    done = subprocess.run(
        [sys.executable, "-m", "gamed.cli", "records", "prune", "50", "--records", f"sqlite:{site.records}"],
        capture_output=True, text=True, timeout=60, env=child_env(), cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "the 1 moves of 1 matches that ended more than 50 days ago pruned" in done.stdout
    match = site.api(f"/api/matches/{match_id}")
    assert match["moves"] == [] and match["extra"]["moves_not_kept"] == 1 and match["turns"] == 1

    page.get(f"{site.url}/replay.html?id={match_id}")
    note = lambda d: d.find_element(By.ID, "moves-note")  # noqa: E731
    wait_for(page, lambda d: note(d).is_displayed(), "the note that the moves were pruned")
    assert note(page).text.startswith("The 1 moves of this match were pruned from the records on ")
    assert "its result and ratings are kept" in note(page).text
    assert "oldie" in page.find_element(By.ID, "players").text
