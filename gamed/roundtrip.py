"""A connection's network round trip, as the kernel measures it, for the clocks' lag credit.

Linux keeps a smoothed round-trip time for every TCP connection (``TCP_INFO``'s ``tcpi_rtt``, in
microseconds); reading it costs one system call and no bytes on the wire, and works for every
protocol, including the original binary ones that have no ping. Where it cannot be read (another
operating system, a UNIX socket, a connection already closed, a transport without a socket such
as a test's) the round trip is 0: nothing is credited.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Hashable, Mapping
from typing import Any

# struct tcp_info: 8 one-byte fields, then 32-bit fields; tcpi_rtt is the 16th of those.
_TCP_INFO = getattr(socket, "TCP_INFO", None)
_RTT_OFFSET = 8 + 15 * 4
_INFO_BYTES = _RTT_OFFSET + 4


def round_trip(transport: Any) -> float:
    """The smoothed round trip of ``transport``'s TCP connection in seconds (0.0 if unknown)."""
    if _TCP_INFO is None:
        return 0.0
    try:
        handle = transport.getHandle()
        data = handle.getsockopt(socket.IPPROTO_TCP, _TCP_INFO, _INFO_BYTES)
    except (AttributeError, OSError, TypeError, ValueError):
        return 0.0
    if len(data) < _INFO_BYTES:
        return 0.0
    (micros,) = struct.unpack_from("I", data, _RTT_OFFSET)
    return micros / 1_000_000


def round_trips(holders: Mapping[Hashable, Any]) -> dict[Hashable, float]:
    """The round trip of each seat whose holder is connected over TCP (``holder.transport``):
    the ``lag`` a turn is opened with (``TurnScheduler.open``). Seats held by nobody, or by a
    program the daemon runs itself, are left out: nothing is credited to them."""
    out = {}
    for seat, holder in holders.items():
        transport = getattr(holder, "transport", None)
        if transport is not None:
            out[seat] = round_trip(transport)
    return out
