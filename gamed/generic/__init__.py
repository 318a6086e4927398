"""The generic protocol: one JSON-lines protocol for every game (docs/protocols/generic.md)."""
