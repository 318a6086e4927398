"""Names players, teams, tables and AI programs may give themselves, the same in every game, and
the names of the maps a Combat host may send (shown on the web site and stored with the match)."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,32}\Z")
NAME_RULE = "1-32 letters, digits, _ . -"

# The shipped maps' names (Default, Checkers+Options, In_The_Wild, ...) and any like them: the
# name characters, ``+``, and single spaces between words.
MAP_NAME_RE = re.compile(r"(?=.{1,32}\Z)[A-Za-z0-9_.+-]+(?: [A-Za-z0-9_.+-]+)*\Z")
MAP_NAME_RULE = "1-32 letters, digits, _ . - + and single spaces between words"


def valid_name(name: str) -> bool:
    """True for a name of 1 to 32 ASCII letters, digits, ``_``, ``.`` or ``-``."""
    return bool(NAME_RE.match(name))


def valid_map_name(name: str) -> bool:
    """True for a map name of 1 to 32 ASCII letters, digits, ``_ . - +`` and single spaces
    between words (``MAP_NAME_RULE``)."""
    return bool(MAP_NAME_RE.match(name))
