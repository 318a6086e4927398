"""The admin console from a test: key pairs made here (cryptography), a daemon with its console
on a loopback port, commands run over SSH ``exec`` with the same client ``gamed admin`` uses
(gamed.admin.client), and a terminal session (a pty and a shell) for the console's prompt and
the manhole."""

from __future__ import annotations

import pathlib
import struct

from cryptography.hazmat.primitives.asymmetric import ed25519
from twisted.conch.ssh import channel, common, connection, keys, transport, userauth
from twisted.internet import defer, endpoints, protocol, reactor, task

from gamed.admin.client import HostKeys, run_command
from tests.integration.support import LOOPBACK


def make_key(path: pathlib.Path) -> keys.Key:
    """A new ed25519 private key, written to ``path`` (OpenSSH format, mode 0600)."""
    key = keys.Key(ed25519.Ed25519PrivateKey.generate())
    path.write_bytes(key.toString("openssh"))
    path.chmod(0o600)
    return key


class Console:
    """The keys of one test: the operator's key (in authorized_keys), a stranger's, the host key
    file the daemon makes, and the settings that switch the console on."""

    def __init__(self, directory: pathlib.Path):
        self.directory = directory
        self.key_file = directory / "operator_key"
        self.key = make_key(self.key_file)
        self.stranger_file = directory / "stranger_key"
        self.stranger = make_key(self.stranger_file)
        self.authorized_keys = directory / "authorized_keys"
        self.authorized_keys.write_bytes(b"# the operator\n" + self.key.public().toString("openssh") + b" operator@test\n")
        self.host_key = directory / "host_key"
        self.database = directory / "gamed.sqlite"

    def args(self, records: bool = True) -> list[str]:
        out = [
            "--set", f"admin.listen={LOOPBACK}",
            "--set", f"admin.authorized_keys={self.authorized_keys}",
            "--set", f"admin.host_key={self.host_key}",
        ]
        if records:
            out += ["--records", f"sqlite:{self.database}"]
        return out

    def host_keys(self) -> HostKeys:
        return HostKeys([keys.Key.fromFile(str(self.host_key)).public()], str(self.host_key))

    async def run(self, daemon, command: str, key: keys.Key | None = None, user: str = "admin") -> tuple[int, str]:
        """(exit status, output) of ``command`` on ``daemon``'s console."""
        return await run_command(reactor, "127.0.0.1", daemon.ports["admin"], key or self.key, self.host_keys(),
                                 command, user=user, timeout=20)

    async def ok(self, daemon, command: str) -> list[str]:
        status, text = await self.run(daemon, command)
        assert status == 0, (command, status, text)
        return text.splitlines()


async def poll(check, what: str, timeout: float = 20):
    """Wait until ``check()`` is true (looked at every 50 ms, at most ``timeout`` seconds)."""
    for _ in range(int(timeout / 0.05)):
        result = check()
        if result:
            return result
        await task.deferLater(reactor, 0.05, lambda: None)
    raise AssertionError(f"timed out waiting for {what}")


# --- a terminal session -------------------------------------------------------------------


class _Shell(channel.SSHChannel):
    name = b"session"

    def channelOpen(self, data):  # noqa: N802
        term = common.NS(b"xterm") + struct.pack(">4L", 24, 80, 0, 0) + common.NS(b"")
        self.conn.sendRequest(self, b"pty-req", term)
        self.conn.sendRequest(self, b"shell", b"")
        self.conn.transport.factory.opened.callback(self)

    def dataReceived(self, data):  # noqa: N802
        self.conn.transport.factory.output += data

    def closed(self):
        factory = self.conn.transport.factory
        if not factory.closed.called:
            factory.closed.callback(None)


class _Connection(connection.SSHConnection):
    def serviceStarted(self):  # noqa: N802
        self.openChannel(_Shell(conn=self))


class _Auth(userauth.SSHUserAuthClient):
    def __init__(self, user: bytes, key: keys.Key, instance):
        super().__init__(user, instance)
        self.key = key
        self.offered = False

    def getPublicKey(self):  # noqa: N802
        if self.offered:
            return None
        self.offered = True
        return self.key.public()

    def getPrivateKey(self):  # noqa: N802
        return defer.succeed(self.key)


class _Transport(transport.SSHClientTransport):
    def verifyHostKey(self, host_key, fingerprint):  # noqa: N802
        if keys.Key.fromString(host_key) != self.factory.host_key:
            return defer.fail(RuntimeError("not the daemon's host key"))
        return defer.succeed(True)

    def connectionSecure(self):  # noqa: N802
        self.requestService(_Auth(self.factory.user, self.factory.key, _Connection()))

    def connectionLost(self, reason):  # noqa: N802
        super().connectionLost(reason)
        if not self.factory.closed.called:
            self.factory.closed.callback(None)


class Terminal(protocol.ClientFactory):
    """A terminal on the console as ``user``: ``output`` is everything it showed."""

    protocol = _Transport

    def __init__(self, user: str, key: keys.Key, host_key: keys.Key):
        self.user = user.encode()
        self.key = key
        self.host_key = host_key
        self.output = b""
        self.opened: defer.Deferred = defer.Deferred()
        self.closed: defer.Deferred = defer.Deferred()
        self.channel = None

    async def open(self, port: int) -> Terminal:
        endpoint = endpoints.TCP4ClientEndpoint(reactor, "127.0.0.1", port, timeout=10)
        await endpoint.connect(self)
        self.opened.addTimeout(20, reactor)
        self.channel = await self.opened
        return self

    def type(self, text: str) -> None:
        self.channel.write(text.encode())

    async def shows(self, data: bytes, timeout: float = 20) -> None:
        await poll(lambda: data in self.output, f"{data!r} in the terminal (it shows {self.output[-300:]!r})", timeout)
