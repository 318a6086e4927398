"""The generic protocol's codec: JSON lines, one object per line, the same for every game.

Pure: no Twisted. ``parse`` turns a line a client sent into a checked message (a dict whose
``type`` is one of ``CLIENT``'s, with only the fields that type has, each of its JSON type) or
raises ``WireError`` with one of the documented error codes; ``encode`` writes a server message
as one line of ASCII JSON. ``SCHEMA`` is the JSON Schema of both directions; ``docs/protocols/
generic.md`` shows it and the tests validate every message the server sends against it.
"""

from __future__ import annotations

import json
from typing import Any

PROTOCOL = "gamed-generic"
VERSION = 1

# --- error codes (docs/protocols/generic.md, "Errors") ----------------------------------------
BAD_JSON = "bad_json"  # the line is not JSON
NOT_AN_OBJECT = "not_an_object"  # JSON, but not an object with a "type"
UNKNOWN_TYPE = "unknown_type"
UNKNOWN_FIELD = "unknown_field"
MISSING_FIELD = "missing_field"
BAD_FIELD = "bad_field"  # a field of the wrong JSON type or out of its range
LINE_TOO_LONG = "line_too_long"
NOT_TEXT = "not_text"  # bytes that are not ASCII (write other characters as \\u escapes)
NO_SUCH_GAME = "no_such_game"
BAD_OPTION = "bad_option"
NO_SUCH_OPPONENT = "no_such_opponent"
NOT_NOW = "not_now"  # e.g. play while already playing, act while not in a game
REFUSED = "refused"  # a login, a guest name or a resume refused: "refusal" says why
UNAVAILABLE = "unavailable"  # switched off on this server (guests, the computer, a game)
INTERNAL = "internal"
# ... and the rules' reasons (gamed.play.REASONS) for a refused act:
NOT_YOUR_TURN = "not_your_turn"
NO_SUCH_ACTION = "no_such_action"
BAD_ACTION = "bad_action"
GAME_OVER = "game_over"
CODES = (
    BAD_JSON, NOT_AN_OBJECT, UNKNOWN_TYPE, UNKNOWN_FIELD, MISSING_FIELD, BAD_FIELD, LINE_TOO_LONG, NOT_TEXT,
    NO_SUCH_GAME, BAD_OPTION, NO_SUCH_OPPONENT, NOT_NOW, REFUSED, UNAVAILABLE, INTERNAL,
    NOT_YOUR_TURN, NO_SUCH_ACTION, BAD_ACTION, GAME_OVER,
)


class WireError(ValueError):
    """A message the protocol refuses: ``code`` is one of ``CODES``."""

    def __init__(self, code: str, text: str, for_: str | None = None):
        super().__init__(code, text)
        self.code = code
        self.text = text
        self.for_ = for_  # the type of the message refused, once it is known

    def __str__(self) -> str:
        return self.text


_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,32}$"}
_ID = {"type": ["string", "integer"], "description": "Any id of the client's, echoed in the ok or error reply."}
_OPPONENT = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["person", "engine", "bot"]},
        "name": _NAME,
        "level": {"type": "string", "maxLength": 32},
    },
    "required": ["kind"],
    "additionalProperties": False,
}

# The client's messages: type -> (fields with their JSON Schema, the required ones).
CLIENT: dict[str, tuple[dict[str, dict], tuple[str, ...]]] = {
    "hello": ({"client": {"type": "string", "maxLength": 64}, "version": {"type": "integer"}}, ()),
    "games": ({}, ()),
    "login": ({"name": _NAME, "token": {"type": "string", "maxLength": 256}}, ("name", "token")),
    "guest": ({"name": _NAME}, ("name",)),
    "play": (
        {
            "game": {"type": "string", "maxLength": 32},
            "options": {"type": "object"},
            "table": _NAME,
            "clock": {"type": "string", "maxLength": 64},
            "opponent": _OPPONENT,
            "seat": {"type": "integer", "description": "The seat wanted in a game against an engine (0 moves first)."},
        },
        ("game",),
    ),
    "act": ({"action": {"type": ["integer", "string"], "maxLength": 1024}, "turn": {"type": "integer"}}, ("action",)),
    "resign": ({}, ()),
    "leave": ({}, ()),
    "resume": ({"token": {"type": "string", "maxLength": 256}}, ("token",)),
    "token": ({}, ()),
    "ping": ({}, ()),
    "quit": ({}, ()),
    "selftest": ({"game": {"type": "string", "maxLength": 32}}, ("game",)),
}

_SCORES = {"type": "array", "items": {"type": "number"}}
_CLOCK = {
    "type": "object",
    "description": "Seconds: 'move' left for the seat's move now (null: no limit), 'banks' each seat's bank (null: none).",
    "properties": {
        "move": {"type": ["number", "null"]},
        "banks": {"type": "array", "items": {"type": ["number", "null"]}},
    },
    "required": ["move", "banks"],
    "additionalProperties": False,
}
_SEAT_NAMES = {"type": "array", "items": {"type": "string"}}


def _message(type_: str, properties: dict[str, dict], required: tuple[str, ...] = ()) -> dict:
    props = {"type": {"const": type_}, **properties}
    return {"type": "object", "properties": props, "required": ["type", *required], "additionalProperties": False}


SERVER: dict[str, dict] = {
    "hello": _message(
        "hello",
        {"protocol": {"const": PROTOCOL}, "version": {"const": VERSION}, "server": {"type": "string"},
         "games": {"type": "array", "items": {"type": "string"}}, "guests": {"type": "boolean"}},
        ("protocol", "version", "games", "guests"),
    ),
    "games": _message("games", {"games": {"type": "array", "items": {"type": "object"}}}, ("games",)),
    "ok": _message("ok", {"for": {"type": "string"}, "id": _ID, "name": {"type": "string"}, "game": {"type": "string"},
                          "table": {"type": ["string", "null"]},
                          "token": {"type": "string", "description": "A guest's token (the HTTP bot API)."}}, ("for",)),
    "error": _message(
        "error",
        {"code": {"enum": list(CODES)}, "text": {"type": "string"}, "for": {"type": ["string", "null"]}, "id": _ID,
         "refusal": {"type": "string"}, "legal": {"type": "array", "items": {"type": "string"}},
         "retries_left": {"type": ["integer", "null"]}},
        ("code", "text"),
    ),
    "waiting": _message("waiting", {"game": {"type": "string"}, "for": {"type": "string"}}, ("game", "for")),
    "started": _message(
        "started",
        {"game": {"type": "string"}, "id": {"type": "integer"}, "seat": {"type": "integer"}, "seats": _SEAT_NAMES,
         "options": {"type": "object"}, "resumed": {"type": "boolean"}},
        ("game", "id", "seat", "seats", "options"),
    ),
    "state": _message(
        "state",
        {"game": {"type": "string"}, "id": {"type": "integer"}, "turn": {"type": "integer"},
         "phase": {"enum": ["setup", "move", "turn", "over"]},
         "to_act": {"type": "array", "items": {"type": "integer"}},
         "observation": {"type": "object"}, "text": {"type": "string"}, "clock": _CLOCK,
         "actions": {"type": "array", "items": {"type": "string"}}, "complete": {"type": "boolean"},
         "grammar": {"type": "string"}},
        ("game", "id", "turn", "phase", "to_act", "observation", "text"),
    ),
    "event": _message(
        "event",
        {"event": {"enum": ["away", "back", "acted"]}, "seat": {"type": "integer"}, "name": {"type": "string"},
         "seconds": {"type": ["number", "null"]}, "action": {"type": "string"}},
        ("event", "seat"),
    ),
    "ended": _message(
        "ended",
        {"game": {"type": "string"}, "id": {"type": "integer"}, "reason": {"type": "string"},
         "text": {"type": "string"}, "scores": {"type": ["array", "null"], "items": {"type": "number"}},
         "observation": {"type": "object"}},
        ("game", "id", "reason", "text", "scores"),
    ),
    "token": _message("token", {"token": {"type": "string"}, "id": {"type": "integer"}}, ("token",)),
    "pong": _message("pong", {"id": _ID}),
    "notice": _message("notice", {"text": {"type": "string"}}, ("text",)),
    "selftest": _message(
        "selftest",
        {"game": {"type": "string"}, "step": {"type": "string"}, "ok": {"type": "boolean"},
         "expected": {"type": "string"}, "received": {"type": "string"}, "verdict": {"enum": ["pass", "fail"]}},
        ("game",),
    ),
    "bye": _message("bye", {"text": {"type": "string"}}, ("text",)),
}

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://gamed.invalid/generic/1",
    "title": "The gamed generic protocol, version 1",
    "$defs": {
        "client": {
            "oneOf": [
                _message(t, {"id": _ID, **fields}, required) for t, (fields, required) in CLIENT.items()
            ]
        },
        "server": {"oneOf": list(SERVER.values())},
    },
}

_JSON_TYPES = {
    "string": str, "integer": int, "object": dict, "boolean": bool, "number": (int, float), "null": type(None),
}


def _check(where: str, schema: dict, value: Any) -> None:
    """The little of JSON Schema the client's fields use: type, pattern (names), maxLength,
    enum, object properties without extras."""
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        ok = any(
            isinstance(value, _JSON_TYPES[k]) and not (isinstance(value, bool) and k in ("integer", "number"))
            for k in kinds
        )
        if not ok:
            raise WireError(BAD_FIELD, f"{where} must be {' or '.join('an ' + k if k[0] in 'aeiou' else 'a ' + k for k in kinds)}")
    if "enum" in schema and value not in schema["enum"]:
        raise WireError(BAD_FIELD, f"{where} must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            raise WireError(BAD_FIELD, f"{where} is longer than {schema['maxLength']} characters")
        if "pattern" in schema and not _valid_name(value):
            raise WireError(BAD_FIELD, f"{where} must be 1-32 letters, digits, _ . -")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        raise WireError(BAD_FIELD, f"{where} is out of range")
    if isinstance(value, dict) and "properties" in schema:
        for name in value:
            if name not in schema["properties"]:
                raise WireError(UNKNOWN_FIELD, f"unknown field {where}.{name[:32]}")
        for name in schema.get("required", ()):
            if name not in value:
                raise WireError(MISSING_FIELD, f"{where}.{name} is missing")
        for name, sub in value.items():
            _check(f"{where}.{name}", schema["properties"][name], sub)


def _valid_name(text: str) -> bool:
    return 0 < len(text) <= 32 and all(c.isascii() and (c.isalnum() or c in "_.-") for c in text)


def _no_constants(text: str) -> Any:
    raise WireError(BAD_JSON, f"{text} is not JSON")


_decoder = json.JSONDecoder(parse_constant=_no_constants)
_ACT_FIELDS = frozenset({"type", "action", "turn", "id"})


def _plain_act(message: dict) -> bool:
    """An act of the usual shape (the move path): checked without the general walk."""
    action = message.get("action")
    turn = message.get("turn", 0)
    request_id = message.get("id", 0)
    return (
        message.keys() <= _ACT_FIELDS
        and (type(action) is int and -(2**53) <= action <= 2**53 or type(action) is str and len(action) <= 1024)
        and type(turn) is int and -(2**53) <= turn <= 2**53
        and (type(request_id) is int and -(2**53) <= request_id <= 2**53 or type(request_id) is str and len(request_id) <= 64)
    )


def parse(line: str) -> dict:
    """The checked client message of ``line``; raises WireError."""
    try:
        message = _decoder.decode(line)
    except WireError:
        raise
    except (ValueError, RecursionError) as e:
        raise WireError(BAD_JSON, f"not JSON: {str(e)[:80]}") from None
    if not isinstance(message, dict):
        raise WireError(NOT_AN_OBJECT, "a message is a JSON object with a \"type\"")
    kind = message.get("type")
    if not isinstance(kind, str):
        raise WireError(NOT_AN_OBJECT, "a message is a JSON object with a \"type\"")
    if kind == "act" and _plain_act(message):
        return message
    spec = CLIENT.get(kind)
    if spec is None:
        raise WireError(UNKNOWN_TYPE, f"unknown type {kind[:32]!r}; types: {', '.join(CLIENT)}")
    try:
        return _checked(kind, spec, message)
    except WireError as e:
        e.for_ = kind
        raise


def _checked(kind: str, spec: tuple[dict[str, dict], tuple[str, ...]], message: dict) -> dict:
    fields, required = spec
    for name in message:
        if name not in fields and name not in ("type", "id"):
            raise WireError(UNKNOWN_FIELD, f"unknown field {name[:32]!r} of {kind}; fields: {', '.join(fields) or 'none'}")
    if "id" in message:
        _check("id", {"type": ["string", "integer"], "maxLength": 64}, message["id"])
    for name in required:
        if name not in message:
            raise WireError(MISSING_FIELD, f"{kind} needs {name}")
    for name, schema in fields.items():
        if name in message:
            _check(name, schema, message[name])
    return message


class Encoded(str):
    """A server message already written as its JSON line (the move path builds states from
    parts it encodes once per position, not once per seat)."""

    __slots__ = ()


_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True)
dumps = _encoder.encode  # one JSON value as compact ASCII text


def _number(value: Any) -> str:
    if value is None:
        return "null"
    if type(value) is float and value - value == 0.0:  # finite: what json writes, without its walk
        return float.__repr__(value)
    return dumps(value)


def clock(clock: dict) -> str:
    """A state's ``clock`` as JSON (the move path: written for every seat on every move)."""
    return f'{{"move":{_number(clock["move"])},"banks":[{",".join(map(_number, clock["banks"]))}]}}'


def encode(message: dict | Encoded) -> str:
    """One server message as one line of ASCII JSON (no newline)."""
    if isinstance(message, Encoded):
        return message
    return _encoder.encode(message)


def decode(line: str) -> dict:
    """An encoded server message as a dict (for transports that look into it)."""
    return json.loads(line)


# --- the server's messages ------------------------------------------------------------------------


def hello(games: list[str], guests: bool) -> dict:
    return {"type": "hello", "protocol": PROTOCOL, "version": VERSION, "server": "gamed", "games": games, "guests": guests}


def ok(for_: str, request_id: Any = None, **fields: Any) -> dict:
    out = {"type": "ok", "for": for_, **fields}
    if request_id is not None:
        out["id"] = request_id
    return out


def error(code: str, text: str, for_: str | None = None, request_id: Any = None, **fields: Any) -> dict:
    out: dict[str, Any] = {"type": "error", "code": code, "text": text}
    if for_ is not None:
        out["for"] = for_
    if request_id is not None:
        out["id"] = request_id
    out.update(fields)
    return out


def bye(text: str) -> dict:
    return {"type": "bye", "text": text}
