"""Twisted plugin that makes ``twistd gamed`` and ``twist gamed`` run the gamed daemon."""
from twisted.application.service import ServiceMaker

gamed = ServiceMaker("gamed", "gamed.tap", "gamed: turn-based game server for AI programs and people", "gamed")
