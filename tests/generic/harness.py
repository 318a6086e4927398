"""In-memory generic clients for unit tests: JSON lines to a GenericService on a Clock, every
message the server sends checked against the protocol's JSON Schema."""

from __future__ import annotations

import json

import jsonschema

from gamed.config import Limits
from gamed.generic import wire
from gamed.generic.service import GenericService
from tests.memclient import Client

_SERVER = jsonschema.Draft202012Validator({**wire.SCHEMA, "$ref": "#/$defs/server"})
_CLIENT = jsonschema.Draft202012Validator({**wire.SCHEMA, "$ref": "#/$defs/client"})


def check_server_message(message: dict) -> dict:
    """``message`` when the schema allows it; AssertionError naming the fault otherwise."""
    errors = sorted(_SERVER.iter_errors(message), key=str)
    assert not errors, f"{message} does not match the schema: {errors[0].message}"
    kind = message["type"]  # oneOf says it fits one; check that it is its own type's
    jsonschema.validate(message, wire.SERVER[kind])
    return message


def client_message_valid(message: dict) -> bool:
    return _CLIENT.is_valid(message)


def generic_service(hosts: dict, players, clock, **limits) -> GenericService:
    return GenericService(hosts, players, Limits(**limits), clock)


class JsonClient(Client):
    """A generic client: ``send`` objects, ``messages`` read back (checked by the schema)."""

    def send(self, *messages, eol: bytes = b"\r\n") -> None:  # type: ignore[override]
        lines = [m if isinstance(m, str) else json.dumps(m) for m in messages]
        super().send(*lines, eol=eol)

    def messages(self) -> list[dict]:
        return [check_server_message(json.loads(line)) for line in self.read()]

    def of(self, kind: str) -> list[dict]:
        return [m for m in self.messages() if m["type"] == kind]
