"""Real matches of every game, as the live hub hands them to the records: each game's own service
is driven in memory (StringTransport connections, a task.Clock) by players that choose random
legal moves from a seeded random.Random, and the Stratego referee replays the UCC 2012
tournament's logs (/work/shared/data/ucc-2012-logs, the copy in tests/data). The MatchRecords
carry every move's state exactly as the live game produced it: what tests/test_replay.py checks
the records' replay against, and what bench/records_size.py measures."""

from __future__ import annotations

import functools
import pathlib
import random
import tarfile
import tempfile

from twisted.internet import defer
from twisted.internet.task import Clock

from gamed.observers import LiveHub

DATA = pathlib.Path(__file__).resolve().parent / "data" / "ucc-2012-logs.tar.xz"
SHARED = pathlib.Path("/work/shared/data/ucc-2012-logs")


class _Keep:
    """Keeps what the hub stores (the records as the hub builds them, nothing checked)."""

    def __init__(self):
        self.records = []

    def store(self, record):
        self.records.append(record)
        return defer.succeed(len(self.records))


def _hub(clock):
    keep = _Keep()
    return LiveHub(clock, keep), keep


def kalaha(games: int, seed: int = 1) -> list:
    """``games`` Kalaha games between two people choosing random pits, a second or two apart."""
    from tests.kalaha.harness import make_service, pair

    rng = random.Random(seed)
    clock = Clock()
    hub, keep = _hub(clock)
    service = make_service(clock, seed=seed, hub=hub)
    for g in range(games):
        clients = pair(service, (f"alice{g}", f"bob{g}"))
        (table,) = hub.tables.values()
        while table.result is None:
            state = table.state
            side = state["to_move"]
            pits = [n for n, stones in enumerate(state["pits"][side], 1) if stones]
            clock.advance(round(rng.uniform(0.2, 3), 3))
            clients[side].send(f"MOVE {rng.choice(pits)}")
            for c in clients:
                c.read()
    return keep.records


def connect4(games: int, seed: int = 1) -> list:
    """``games`` Connect Four games (7x6) between two people dropping into random columns."""
    from tests.connect4.test_live import greeted, make

    rng = random.Random(seed)
    clock, hub, _, service = make()
    hub.store = keep = _Keep()
    for g in range(games):
        players = [greeted(service, f"NAME p{g}a", f"TABLE t{g}"), greeted(service, f"NAME p{g}b", f"TABLE t{g}")]
        (table,) = hub.tables.values()
        while table.result is None:
            state = table.state
            columns = [x for x, column in enumerate(state["cells"]) if column[-1] is None]
            clock.advance(round(rng.uniform(0.2, 3), 3))
            players[state["to_move"]].send(str(rng.choice(columns)))
            for p in players:
                p.read()
    return keep.records


def fight(games: int, seed: int = 1, max_turns: int = 150) -> list:
    """``games`` Virtual Fight games on the default map between two AIs whose warriors move and
    shoot at random (at most ``max_turns`` turns)."""
    from gamed.config import FightConfig, Limits
    from gamed.fight.rules import resolve_map
    from gamed.fight.service import FightService
    from tests.fight.harness import ai

    rng = random.Random(seed)
    clock = Clock()
    hub, keep = _hub(clock)
    config = FightConfig(pair_delay=0, gui_interval=0, max_turns=max_turns)
    service = FightService(config, Limits(), clock, resolve_map("default"), hub=hub)
    verbs = ["MOVE&UP", "MOVE&DOWN", "MOVE&LEFT", "MOVE&RIGHT", "SHOOT&UP", "SHOOT&DOWN", "SHOOT&LEFT", "SHOOT&RIGHT", "NONE"]
    for _ in range(games):
        teams = [ai(service), ai(service)]
        for t in teams:
            t.read()
        (table,) = hub.tables.values()
        while table.result is None and all(not t.lost for t in teams):
            clock.advance(0.05)
            for t in teams:
                t.send(*(f"{w}&{rng.choice(verbs)}" for w in range(5)))
            for t in teams:
                t.read()
        for t in teams:
            if not t.lost:
                t.drop()
    return keep.records


def combat(games: int, seed: int = 1, maps=("Default", "Small", "8x8", "Island_I"), max_moves: int = 400) -> list:
    """``games`` GGZ Combat games between two players choosing random legal moves from random
    setups, on each of ``maps`` in turn (at most ``max_moves`` moves, then aborted)."""
    from gamed.combat import wire
    from gamed.combat.maps import shipped_maps
    from tests.combat.test_live import make
    from tests.combat.test_protocol import Player
    from tests.combat.test_table import legal_moves

    rng = random.Random(seed)
    clock, hub, _, service = make()
    hub.store = keep = _Keep()
    for g in range(games):
        options = shipped_maps()[maps[g % len(maps)]]
        players = (Player(service), Player(service))
        players[0].send(wire.HostOptions.of(options))
        for seat in (0, 1):
            codes = [c for c, n in enumerate(options.army) for _ in range(n)]
            rng.shuffle(codes)
            players[seat].send(wire.MsgSetup(wire.write_setup(options, seat, dict(zip(options.zone(seat), codes)))))
        for p in players:
            p.read()
        table = service.tables[max(service.tables)]
        for _ in range(max_moves):
            moves = legal_moves(table)
            if table.state is not wire.State.PLAYING or not moves:
                break
            clock.advance(round(rng.uniform(0.05, 1), 3))
            source, target = rng.choice(moves)
            players[table.turn].send(wire.ReqMove(source, target))
            for p in players:
                p.read()
        if table.state is wire.State.PLAYING:
            service.abort_games()
        for p in players:
            if not p.client.lost:
                p.client.drop()
    return keep.records


@functools.cache
def _ucc_folder() -> pathlib.Path:
    if SHARED.is_dir():
        return SHARED
    folder = pathlib.Path(tempfile.mkdtemp(prefix="ucc-logs-"))
    with tarfile.open(DATA) as tar:
        tar.extractall(folder, filter="data")
    return next(p.parent for p in folder.rglob("round*") if p.is_file())


def ucc_logs() -> list[pathlib.Path]:
    """The UCC 2012 logs that end with a win or a draw (the shared copy, else tests/data's)."""
    logs = sorted(_ucc_folder().glob("round*"))
    return [p for p in logs if any(word in p.read_text(encoding="latin-1") for word in (" VICTORY ", " DRAW"))]


_OUTCOMES = {"OK", "KILLS", "DIES", "BOTHDIE", "VICTORY_FLAG", "ILLEGAL", "SURRENDER"}


def _replies(log: str) -> tuple[dict, dict]:
    """(setups, replies) by colour of a UCC log: the four setup rows and each half-move's reply."""
    lines = log.splitlines()
    setups, replies = {"RED": [], "BLUE": []}, {"RED": [], "BLUE": []}
    colour = None
    for line in lines:
        words = line.split(" ")
        if len(words) == 3 and words[2] == "SETUP":
            colour = words[1]
            continue
        if colour is not None and len(setups[colour]) < 4 and len(line) == 10 and " " not in line:
            setups[colour].append(line)
            continue
        if len(words) > 2 and words[1] in ("RED:", "BLU:"):
            side = "RED" if words[1] == "RED:" else "BLUE"
            reply = words[2:]
            for i, word in enumerate(reply):
                if word in _OUTCOMES:
                    reply = reply[:i]
                    break
            replies[side].append(" ".join(reply) if reply else "SURRENDER")
    return setups, replies


def stratego(tmp_path: pathlib.Path, logs: int | None = None) -> list:
    """The Stratego referee replaying the first ``logs`` UCC 2012 logs (all when None): each log's
    setups and replies fed to the referee by scripted seats; one stored match per log."""
    from gamed.config import AiProgram, Limits, StrategoConfig
    from gamed.stratego.service import StrategoService
    from tests.stratego.scripted import ScriptedSeat

    records = []
    for number, path in enumerate(ucc_logs()[:logs]):
        setups, replies = _replies(path.read_text(encoding="latin-1"))
        by_name = {"red": ("RED", replies["RED"]), "blue": ("BLUE", replies["BLUE"])}

        def seat(ai, workdir, by_name=by_name, setups=setups):
            colour, said = by_name[ai.name]
            s = ScriptedSeat(ai.command, None, list(said))
            s.setup = lambda c, opponent, colour=colour: defer.succeed(setups[colour])
            return s

        clock = Clock()
        hub, keep = _hub(clock)
        ais = (AiProgram("red", "./red.py"), AiProgram("blue", "./blue.py"))
        config = StrategoConfig(ai=ais, timeout=2.0, max_turns=1000)
        directory = tmp_path / f"log{number}"
        directory.mkdir(parents=True)
        service = StrategoService(config, Limits(), clock, directory, seat_factory=seat, hub=hub)
        done = []
        service.run_tournament(1, ["red", "blue"]).addBoth(done.append)
        assert done, path
        records.append(keep.records[0])  # the first game: red plays RED, as in the log
    return records


def every_game(tmp_path: pathlib.Path, scale: int = 1) -> dict[str, list]:
    """Real matches of each game type, by game: ``scale`` times a small set."""
    return {
        "kalaha": kalaha(6 * scale),
        "fight": fight(2 * scale),
        "combat": combat(4 * scale),
        "stratego": stratego(tmp_path, 4 * scale),
        "connect4": connect4(8 * scale),
    }
