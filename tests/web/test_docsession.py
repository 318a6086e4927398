"""docs/web-api.md has an example session the integration tests can replay, covering every kind of step."""

from tests.web.docsession import alike, session


def test_the_web_api_document_has_a_complete_session():
    steps = session()
    assert {s.kind for s in steps} == {"send", "expect", "get", "stream", "event"}
    assert [s.text for s in steps if s.kind == "event"] == ["snapshot", "move", "move", "end"]


def test_alike_ignores_only_times():
    assert alike({"t": 1.5, "started": 1, "n": 2}, {"t": 3.25, "started": 7.5, "n": 2})
    assert not alike({"t": 1.5, "n": 3}, {"t": 1.5, "n": 2})
    assert not alike({"n": 2, "extra": 1}, {"n": 2})
    assert not alike({"to_move": None}, {"to_move": 0})
    assert not alike([1, 2], [1])
    clock = {"0": {"used": 12.003, "left": None, "credit": 0.0}}
    assert alike({"0": {"used": 0.01, "left": None, "credit": 0.002}}, clock)
    assert not alike({"0": {"used": 0.01, "left": 59.9, "credit": 0.0}}, clock)  # null only as null
    assert not alike({"0": {"used": None, "left": None, "credit": 0.0}}, clock)
