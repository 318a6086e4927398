"""docs/players.md states the refusal codes the text protocols send, exactly."""

from __future__ import annotations

import pathlib
import re

from gamed.ladder.commands import GUESTS_REFUSED, NO_LADDER
from gamed.textwire import LADDER_GUESTS, LADDER_OFF, REFUSAL_CODES

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "players.md"


def test_the_refusal_table_is_the_codes_and_texts_the_protocols_send():
    rows = re.findall(r"^\| (4\d\d) \| (.+?) \|$", DOC.read_text(encoding="utf-8"), re.M)
    documented = {int(code): text.replace(" (try again in N s)", "") for code, text in rows}
    sent = {code: refusal.value for refusal, code in REFUSAL_CODES.items()}
    sent.update({LADDER_GUESTS: GUESTS_REFUSED, LADDER_OFF: NO_LADDER})
    assert documented == sent
