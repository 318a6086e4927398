"""A tiny client of gamed's generic protocol: copy this file next to your bot.

Standard library only (Python 3.11+). The protocol is JSON lines over TCP, one object per line,
the same for every game (docs/protocols/generic.md); the server tells you everything a bot needs
to play: the legal actions arrive with every state in which it is your turn, so a bot does not
have to know the rules to play a legal game.

    client = gamedclient.connect("localhost", 4800)
    client.request({"type": "guest", "name": "mybot"})
    ended = client.play("kalaha", lambda state: 0, opponent={"kind": "engine"})
    print(ended["text"])
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

# choose(state) answers a state that carries "actions": an index into them, or an action string.
Chooser = Callable[[dict], "int | str"]


class ServerError(Exception):
    """An error message of the server's: ``code`` (e.g. "no_such_game") and ``text`` say why."""

    def __init__(self, message: dict):
        super().__init__(f"{message.get('code')}: {message.get('text')}")
        self.code: str = message.get("code", "")
        self.text: str = message.get("text", "")
        self.message = message


class Client:
    """One connection. ``hello`` is the server's greeting: its "games" are the ones you can play."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.lines = sock.makefile("rb")
        self.hello = self.recv()
        self.started: dict | None = None  # the "started" message of the game played last

    def send(self, message: dict) -> None:
        """Send one message (``json.dumps`` writes ASCII, as the protocol wants)."""
        self.sock.sendall(json.dumps(message).encode("ascii") + b"\n")

    def recv(self) -> dict:
        """The next message from the server; ConnectionError when the server has closed."""
        line = self.lines.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        message = json.loads(line)
        if message["type"] == "bye":
            raise ConnectionError(f"the server said goodbye: {message['text']}")
        return message

    def request(self, message: dict) -> dict:
        """Send ``message`` and return the server's "ok" for it (messages before it are skipped);
        ServerError when the server refuses it."""
        self.send(message)
        while True:
            reply = self.recv()
            if reply["type"] == "error":
                raise ServerError(reply)
            if reply["type"] == "ok" and reply["for"] == message["type"]:
                return reply

    def play(self, game: str, choose: Chooser, **request: Any) -> dict:
        """Play one game of ``game`` to its end and return its "ended" message.

        ``request`` holds the play message's other fields: ``opponent={"kind": "engine",
        "level": "random"}``, ``table="t1"``, ``seat=1``, ``options={...}``, ``clock="5m+2s"``.
        Every state with "actions" is answered with ``choose(state)``. When the server refuses
        an act (its error has the "legal" actions), ``choose`` is asked again with those."""
        self.request({"type": "play", "game": game, **request})
        state: dict | None = None
        while True:
            message = self.recv()
            kind = message["type"]
            if kind == "started":
                self.started = message
            elif kind == "state":
                state = message
                if "actions" in message:
                    self._act(choose(message), message["turn"])
            elif kind == "error":
                if state is None or message.get("for") != "act":
                    raise ServerError(message)
                if message.get("legal"):  # refused: try again (each refusal costs one of the game's retries)
                    state = {**state, "actions": message["legal"]}
                    self._act(choose(state), state["turn"])
            elif kind == "ended":
                return message
            # "waiting" (for an opponent), "event" (a seat away, back, acted), "notice": nothing to do

    def selftest(self, game: str, choose: Chooser) -> tuple[bool, list[dict]]:
        """Play the server's self-test of ``game`` (a scripted match that checks each answer):
        whether it passed, and its reports (each with "step" and "ok"; a failed one also has
        "expected" and "received", the lines the server wanted and got)."""
        self.send({"type": "selftest", "game": game})
        reports: list[dict] = []
        state: dict | None = None
        while True:
            message = self.recv()
            kind = message["type"]
            if kind == "selftest":
                if "verdict" in message:
                    return message["verdict"] == "pass", reports
                reports.append(message)
            elif kind == "state":
                state = message
                if "actions" in message:
                    self._act(choose(message), message["turn"])
            elif kind == "error":
                if state is None or message.get("for") != "act" or not message.get("legal"):
                    raise ServerError(message)
                state = {**state, "actions": message["legal"]}
                self._act(choose(state), state["turn"])

    def _act(self, action: int | str, turn: int) -> None:
        self.send({"type": "act", "action": action, "turn": turn})

    def close(self) -> None:
        try:
            self.send({"type": "quit"})
        except OSError:
            pass
        self.lines.close()
        self.sock.close()


def connect(host: str = "localhost", port: int = 4800, timeout: float | None = None) -> Client:
    """Connect and read the server's hello. ``timeout``: seconds any one read may wait (None: no limit)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    return Client(sock)
