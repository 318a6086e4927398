"""docs/clocks.md: every example control in its table parses to the canonical form it shows."""

import pathlib
import re

import pytest

from gamed import timecontrol

DOC = pathlib.Path(__file__).resolve().parent.parent / "docs" / "clocks.md"


def examples() -> list[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- clock examples -->", 1)[1].split("<!-- end clock examples -->", 1)[0]
    rows = []
    for line in block.splitlines():
        cells = re.findall(r"`([^`]*)`", line)
        if line.startswith("| `") and len(cells) >= 2:
            rows.append((cells[0], cells[1]))
    return rows


def test_the_doc_has_examples():
    assert len(examples()) >= 8


@pytest.mark.parametrize("control, canonical", examples())
def test_each_example_parses_to_its_canonical_form(control, canonical):
    parsed = timecontrol.parse(control)
    assert parsed.notation() == canonical
    assert timecontrol.parse(canonical) == parsed


def test_the_refused_examples_in_the_doc_are_refused():
    text = DOC.read_text(encoding="utf-8")
    assert "kalaha.clock: the bank '5x': unknown unit (units: ms, s, m, h)" in text
    with pytest.raises(timecontrol.TimeControlError, match=r"the bank '5x': unknown unit \(units: ms, s, m, h\)"):
        timecontrol.parse("5x+1s")
    for bad in ("0+0", "move=0", "setup=0", "game=0", "25h", "-1s", "none,1m+0", "1m,1m"):
        with pytest.raises(timecontrol.TimeControlError):
            timecontrol.parse(bad)
