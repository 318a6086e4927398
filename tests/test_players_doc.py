"""docs/players.md states the refusal codes the text protocols send, exactly."""

from __future__ import annotations

import pathlib
import re

from gamed.textwire import REFUSAL_CODES

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "players.md"


def test_the_refusal_table_is_the_codes_and_texts_the_protocols_send():
    rows = re.findall(r"^\| (4\d\d) \| (.+?) \|$", DOC.read_text(encoding="utf-8"), re.M)
    documented = {int(code): text.replace(" (try again in N s)", "") for code, text in rows}
    assert documented == {code: refusal.value for refusal, code in REFUSAL_CODES.items()}
