"""The front page: live games kept up to date and linked to their boards, recent matches with their results in
words (without the unplayed ones) and player links, how to play on the ports this daemon serves, a favicon."""

import urllib.request

import pytest
from selenium.webdriver.common.by import By

from gamed import registry
from tests.browser.conftest import wait_for
from tests.browser.players import KalahaGame

pytestmark = pytest.mark.integration


def test_the_front_page_lists_a_live_game_and_links_to_its_board(site, page, connect):
    game = KalahaGame(connect, ("carol", "dave"), "front")
    page.get(site.url + "/")

    def our_row(d):
        # The list is redrawn as the games change: read the row in one go (wait_for reads again
        # when the page replaced it meanwhile), never keep the element for later.
        for row in d.find_elements(By.CSS_SELECTOR, "#games tr[data-id]"):
            if "carol" in row.text and "dave" in row.text:
                return {
                    "id": row.get_attribute("data-id"),
                    "game": row.get_attribute("data-game"),
                    "name": row.find_element(By.CSS_SELECTOR, "td.game").text,
                    "turn": row.find_element(By.CSS_SELECTOR, "td.turn").text,
                    "spectators": row.find_element(By.CSS_SELECTOR, "td.spectators").text,
                }
        return None

    row = wait_for(page, our_row, "the game of carol and dave on the front page")
    table_id = row["id"]
    assert (row["game"], row["name"], row["turn"]) == ("kalaha", "Kalaha", "0")
    assert row["spectators"].isdigit()
    assert page.find_element(By.CSS_SELECTOR, "#leaderboards a[data-game=kalaha]").get_attribute("href").endswith(
        "ratings.html?game=kalaha"
    )

    game.move()  # the list follows the game live
    ours = f'#games tr[data-id="{table_id}"]'
    wait_for(
        page,
        lambda d: d.find_element(By.CSS_SELECTOR, ours).get_attribute("data-turn") == "1"
        and d.find_element(By.CSS_SELECTOR, ours + " td.turn").text == "1",
        "the front page to show turn 1",
    )
    # a redraw can replace the link between finding and clicking it: find it again then
    wait_for(page, lambda d: d.find_element(By.CSS_SELECTOR, ours + " td.watch a").click() or True, "the Watch link")
    wait_for(page, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#board .pit")) == 12, "the board page")
    assert page.current_url.endswith(f"game.html?id={table_id}")
    players = page.find_element(By.ID, "players").text
    assert "carol" in players and "dave" in players


def test_the_front_page_lists_a_leaderboard_of_every_registered_game(site, page):
    page.get(site.url + "/")

    def links(d):
        found = [(a.get_attribute("data-game"), a.text) for a in d.find_elements(By.CSS_SELECTOR, "#leaderboards a")]
        return found if len(found) == len(registry.GAMES) else None

    listed = wait_for(page, links, "a leaderboard link per game")
    assert listed == [(g.name, g.title) for g in registry.GAMES]
    assert listed[1] == ("fight", "Virtual Fight")  # the title from the registry, not the type


def test_the_leaderboard_page_lists_every_registered_game_and_starts_with_the_first(site, page):
    page.get(site.url + "/ratings.html")
    first = registry.GAMES[0].title
    wait_for(page, lambda d: d.find_element(By.ID, "title").text == f"{first} leaderboard", "the first game's leaderboard")
    assert [a.text for a in page.find_elements(By.CSS_SELECTOR, "#games-nav a")] == [g.title for g in registry.GAMES]


def test_the_front_page_says_how_to_play_on_the_ports_it_serves(site, page):
    page.get(site.url + "/")
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, "#how-to li[data-serves]"), "the ports")
    items = {li.get_attribute("data-serves"): li for li in page.find_elements(By.CSS_SELECTOR, "#how-to li[data-serves]")}
    assert set(items) == {"kalaha", "fight", "connect4", "web"}, "exactly the ports this daemon serves"
    for option in ("kalaha", "fight", "connect4"):
        command = items[option].find_element(By.CSS_SELECTOR, "code.command").text
        assert command == f"telnet 127.0.0.1 {site.ports[option]}"
        assert items[option].get_attribute("data-address") == f"tcp:127.0.0.1:{site.ports[option]}"
    assert "COMPUTER" in items["kalaha"].text and "HELP" in items["kalaha"].text
    assert "PLAY solver:2" in items["connect4"].text and "0&MOVE&UP" in items["fight"].text
    assert items["web"].find_element(By.CSS_SELECTOR, "code.command").text == site.url + "/"


def test_the_site_has_a_favicon(site, page):
    with urllib.request.urlopen(site.url + "/favicon.ico", timeout=5) as r:
        assert r.status == 200 and r.headers["content-type"] == "image/x-icon"
        assert r.read(4) == b"\x00\x00\x01\x00", "an icon file"
    page.get(site.url + "/")
    assert page.find_element(By.CSS_SELECTOR, 'link[rel="icon"]').get_attribute("href") == site.url + "/favicon.ico"


def _match_of(site, *names):
    def ours(data):
        for m in data["matches"]:
            if sorted(s["name"] for s in m["seats"]) == sorted(names):
                return m
        return None

    return site.poll_api("/api/matches?game=kalaha&limit=100", ours, f"the match of {names}")


def test_recent_matches_say_the_result_in_words_and_leave_out_unplayed_ones(site, page, connect):
    # Two players meet and one leaves before the first move: aborted, nothing played.
    gwen, hugo = connect("kalaha"), connect("kalaha")
    for client, name in ((gwen, "gwen"), (hugo, "hugo")):
        client.send("BOARD OFF", f"NAME {name}", "TABLE leaving")
        client.expect("OK TABLE")
    gwen.expect("START")
    hugo.expect("START")
    hugo.close()
    gwen.expect("ABORT")
    unplayed = _match_of(site, "gwen", "hugo")
    assert (unplayed["turns"], unplayed["rated"], unplayed["outcome"]) == (0, False, "aborted: a player left")

    game = KalahaGame(connect, ("ida", "jack"), "words")
    game.play_to_end()
    played = _match_of(site, "ida", "jack")
    names = {s["seat"]: s["name"] for s in played["seats"]}
    stores = game.position[1]
    if stores[0] != stores[1]:
        expected = f"{names[int(stores[1] > stores[0])]} won {max(stores)}\u2013{min(stores)}"
    else:
        expected = f"draw {stores[0]}\u2013{stores[1]}"

    page.get(site.url + "/")
    row = f'#matches tr[data-id="{played["id"]}"]'
    wait_for(page, lambda d: d.find_elements(By.CSS_SELECTOR, row), "the finished match on the front page")
    assert page.find_element(By.CSS_SELECTOR, f"{row} td.result").text == expected, "stones, not match points"
    assert not page.find_elements(By.CSS_SELECTOR, f'#matches tr[data-id="{unplayed["id"]}"]'), "no unplayed match"
    links = page.find_elements(By.CSS_SELECTOR, f"{row} a.player-link")
    assert [a.text for a in links] == [names[0], names[1]]
    assert links[0].get_attribute("href") == f"{site.url}/player.html?name={names[0]}"
