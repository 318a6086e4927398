"""Names players, teams, tables and AI programs may give themselves, the same in every game."""

from __future__ import annotations

import re

NAME_RE = re.compile(r"[A-Za-z0-9_.-]{1,32}\Z")
NAME_RULE = "1-32 letters, digits, _ . -"


def valid_name(name: str) -> bool:
    """True for a name of 1 to 32 ASCII letters, digits, ``_``, ``.`` or ``-``."""
    return bool(NAME_RE.match(name))
