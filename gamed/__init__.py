"""gamed: one Twisted daemon that hosts turn-based games for AI programs and people over TCP."""

__version__ = "0.1.0"
