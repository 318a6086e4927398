"""The admin console's SSH server (twisted.conch), key-based only.

The keys that may log in are the OpenSSH ``authorized_keys`` file of ``[admin] authorized_keys``,
read again at every login (a key added or removed there applies at once). User ``admin`` gets the
console: a line editor with history (``recvline.HistoricRecvLine``) running
``gamed.admin.commands`` when it asks for a shell, or one command and its exit status when it asks
to ``exec`` one (what ``gamed admin`` does). User ``manhole`` gets a Python prompt inside the daemon
(twisted.conch.manhole) with the daemon's objects in its namespace, when ``[admin] manhole`` is on.
A refused key is logged with the peer's address and the key's SHA256 fingerprint.

The server's host key is ``[admin] host_key``: made once (ed25519, mode 0600) when the file is
missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from twisted.conch import manhole, manhole_ssh, recvline
from twisted.conch.checkers import IAuthorizedKeysDB, SSHPublicKeyChecker, readAuthorizedKeyFile
from twisted.conch.error import ValidPublicKey
from twisted.conch.insults import insults
from twisted.conch.interfaces import IConchUser, ISession
from twisted.conch.ssh import factory, keys, transport, userauth
from twisted.conch.ssh.common import getNS
from twisted.cred.error import UnauthorizedLogin
from twisted.cred.portal import IRealm, Portal
from twisted.internet.error import ProcessDone, ProcessTerminated
from twisted.logger import Logger
from twisted.protocols.policies import TimeoutMixin
from twisted.python import components
from twisted.python.failure import Failure
from zope.interface import implementer

from gamed.admin.commands import AdminCommands

CONSOLE_USER = b"admin"
MANHOLE_USER = b"manhole"
BANNER = "gamed admin console; type help (quit to log out)"

_log = Logger()


class KeyFileError(Exception):
    """A key file that cannot be used: one line naming the file and why."""


def fingerprint(key: keys.Key) -> str:
    """``SHA256:...``, as ``ssh-keygen -l`` shows a key."""
    return "SHA256:" + key.fingerprint(keys.FingerprintFormats.SHA256_BASE64)


def read_authorized_keys(path: str) -> list[keys.Key]:
    """The public keys of an OpenSSH authorized_keys file (lines that are no key are skipped, and
    logged); KeyFileError when it cannot be read."""
    try:
        with open(path, "rb") as f:
            return list(readAuthorizedKeyFile(f))
    except OSError as e:
        raise KeyFileError(f"admin.authorized_keys {path}: cannot be read: {e.strerror or e}") from None


def check_authorized_keys(path: str) -> int:
    """Start-up's check: the file can be read and holds at least one key; KeyFileError otherwise."""
    found = read_authorized_keys(path)
    if not found:
        raise KeyFileError(f"admin.authorized_keys {path} holds no public key (OpenSSH authorized_keys lines)")
    return len(found)


def check_host_key(path: str) -> None:
    """``gamed config check``'s look at the host key, making nothing: a file that is there must
    be a private key, and a missing one's folder must exist (start-up makes the key there)."""
    if os.path.exists(path):
        try:
            keys.Key.fromFile(path)
        except (OSError, keys.BadKeyError, ValueError) as e:
            raise KeyFileError(f"admin.host_key {path}: not a usable private key: {getattr(e, 'strerror', None) or e}") from None
    elif not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        raise KeyFileError(f"admin.host_key {path}: the folder {os.path.dirname(os.path.abspath(path))} does not exist")


def host_key(path: str) -> keys.Key:
    """The console's private host key from ``path``; made (ed25519, written with mode 0600) when
    the file does not exist. KeyFileError when it cannot be read, parsed or made."""
    try:
        return keys.Key.fromFile(path)
    except FileNotFoundError:
        pass
    except (OSError, keys.BadKeyError, ValueError) as e:
        raise KeyFileError(f"admin.host_key {path}: not a usable private key: {getattr(e, 'strerror', None) or e}") from None
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = keys.Key(ed25519.Ed25519PrivateKey.generate())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key.toString("openssh"))
    except OSError as e:
        raise KeyFileError(f"admin.host_key {path}: cannot be written: {e.strerror or e}") from None
    _log.info("admin console: made a new host key {path} ({fingerprint})", path=path, fingerprint=fingerprint(key.public()))
    return key


@implementer(IAuthorizedKeysDB)
class AuthorizedKeys:
    """The keys of ``path`` for the console's users (read at every login)."""

    def __init__(self, path: str, users: tuple[bytes, ...]):
        self.path = path
        self.users = users

    def getAuthorizedKeys(self, username: bytes):  # noqa: N802
        if username not in self.users:
            return []
        try:
            return read_authorized_keys(self.path)
        except KeyFileError as e:
            _log.warn("admin console: {why}; nobody can log in", why=str(e))
            return []


class LoggedUserAuth(userauth.SSHUserAuthServer):
    """Public-key authentication that logs every refused key and every login with the peer's
    address and the key's fingerprint."""

    def auth_publickey(self, packet: bytes):  # noqa: N802
        d = super().auth_publickey(packet)
        signed = bool(packet[0:1] and packet[0])
        try:
            _, blob, _ = getNS(packet[1:], 2)
            shown = fingerprint(keys.Key.fromString(blob))
        except Exception:
            shown = "(a key that cannot be read)"
        peer = self.transport.transport.getPeer() if self.transport is not None else None
        where = f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}"
        user = self.user.decode("utf-8", "replace")

        def logged_in(result):
            if signed:
                _log.info("admin console: {user} logged in from {peer} with key {fingerprint}",
                          user=user, peer=where, fingerprint=shown)
            return result

        def refused(failure: Failure) -> Failure:
            if failure.check(ValidPublicKey) is None and failure.check(UnauthorizedLogin) is not None:
                _log.warn("admin console: refused key {fingerprint} for user {user} from {peer}",
                          fingerprint=shown, user=user, peer=where)
            return failure

        d.addCallbacks(logged_in, refused)
        return d


class AdminConsole(recvline.HistoricRecvLine):
    """The console of user ``admin``: a prompt, command lines run by ``AdminCommands``."""

    ps = (b"gamed> ", b"... ")

    def __init__(self, commands: AdminCommands):
        super().__init__()
        self.commands = commands
        self.busy = False

    def initializeScreen(self) -> None:  # noqa: N802
        self.terminal.reset()
        self.terminal.write(BANNER.encode("ascii") + b"\r\n")
        self.terminal.write(self.ps[self.pn])
        self.setInsertMode()

    def lineReceived(self, line: bytes) -> None:  # noqa: N802
        text = line.decode("utf-8", "replace").strip()
        if text.lower() in ("quit", "exit", "logout"):
            self.terminal.loseConnection()
            return
        d = self.commands.run(text)

        def answer(reply) -> None:
            if self.terminal is not None:
                self.terminal.write(reply.text("\r\n").encode("ascii", "replace"))
                self.terminal.write(self.ps[self.pn])

        d.addCallback(answer)
        d.addErrback(lambda f: _log.failure("the admin console failed to answer", f))


class _Session(manhole_ssh.TerminalSession):
    """A terminal session whose window may change and whose input may end."""

    width, height = 80, 24

    def windowChanged(self, newWindowSize) -> None:  # noqa: N802
        pass

    def eofReceived(self) -> None:  # noqa: N802
        pass


class ConsoleSession(_Session):
    """User ``admin``'s session: the console in a terminal, or one command by ``exec``."""

    commands: AdminCommands
    clock: Any

    def execCommand(self, proto, cmd: bytes) -> None:  # noqa: N802
        # Run once the exec request has been answered: a client (conch's among them) takes the
        # command's output only after that answer.
        self.clock.callLater(0, self._run, proto, cmd)

    def _run(self, proto, cmd: bytes) -> None:
        d = self.commands.run(cmd.decode("utf-8", "replace"))

        def answer(reply) -> None:
            proto.write(reply.text("\n").encode("ascii", "replace"))
            ended = ProcessDone(0) if reply.status == 0 else ProcessTerminated(exitCode=reply.status)
            proto.processEnded(Failure(ended))

        d.addCallback(answer)
        d.addErrback(lambda f: _log.failure("the admin console failed to answer", f))


class ManholeSession(_Session):
    """User ``manhole``'s session: a Python prompt (no exec)."""


@implementer(IRealm)
class AdminRealm:
    """Gives each user its session: ``admin`` the console, ``manhole`` the Python prompt
    (``namespace()`` is its globals, made at each login; None: no manhole)."""

    def __init__(self, commands: AdminCommands, clock: Any, namespace: Callable[[], dict] | None = None):
        self.commands = commands
        self.clock = clock
        self.namespace = namespace

    def requestAvatar(self, avatar_id: bytes, mind: Any, *interfaces):  # noqa: N802
        if IConchUser not in interfaces:
            raise NotImplementedError("the admin console serves SSH users only")
        if avatar_id == CONSOLE_USER:
            session = ConsoleSession
            commands = self.commands
            chained = lambda: insults.ServerProtocol(AdminConsole, commands)  # noqa: E731
        elif avatar_id == MANHOLE_USER and self.namespace is not None:
            session = ManholeSession
            namespace = self.namespace()
            chained = lambda: insults.ServerProtocol(manhole.ColoredManhole, namespace)  # noqa: E731
        else:  # pragma: no cover - the keys database knows only the users above
            raise UnauthorizedLogin("no such user")
        comp = components.Componentized()
        user = manhole_ssh.TerminalUser(comp, avatar_id)
        sess = session(comp)
        sess.commands = self.commands
        sess.clock = self.clock
        sess.chainedProtocolFactory = chained
        comp.setComponent(IConchUser, user)
        comp.setComponent(ISession, sess)
        return IConchUser, user, lambda: None


class IdleTransport(TimeoutMixin, transport.SSHServerTransport):
    """An SSH connection that is closed after ``factory.idle`` seconds without a byte from the
    client (0 = never), on the factory's clock."""

    def connectionMade(self) -> None:  # noqa: N802
        self.callLater = self.factory.clock.callLater
        super().connectionMade()
        if self.factory.idle:
            self.setTimeout(self.factory.idle)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        self.resetTimeout()
        super().dataReceived(data)

    def connectionLost(self, reason) -> None:  # noqa: N802
        self.setTimeout(None)
        super().connectionLost(reason)

    def timeoutConnection(self) -> None:  # noqa: N802
        peer = self.transport.getPeer()
        _log.info("admin console: {peer} closed after {idle:g} s idle", peer=f"{getattr(peer, 'host', '?')}:{getattr(peer, 'port', '?')}",
                  idle=self.factory.idle)
        self.loseConnection()


class AdminSSHFactory(factory.SSHFactory):
    """The SSH server of the console: ``portal`` checks keys, ``key`` is the host key; a
    connection idle for ``idle`` seconds is closed (0 = never)."""

    services = {**factory.SSHFactory.services, b"ssh-userauth": LoggedUserAuth}
    protocol = IdleTransport
    noisy = False

    def __init__(self, portal: Portal, key: keys.Key, clock: Any, idle: float = 0.0):
        self.portal = portal
        self.clock = clock
        self.idle = idle
        self.publicKeys = {key.sshType(): key.public()}
        self.privateKeys = {key.sshType(): key}
        self.primes = None  # the fixed Diffie-Hellman groups and the elliptic curves only

    def logPrefix(self) -> str:  # noqa: N802
        return "admin console"


def console_factory(commands: AdminCommands, authorized_keys: str, key: keys.Key, clock: Any,
                    namespace: Callable[[], dict] | None = None, idle: float = 0.0) -> AdminSSHFactory:
    """The console's SSH factory: keys of ``authorized_keys`` for user admin (and manhole when
    ``namespace`` is given), host key ``key``."""
    users = (CONSOLE_USER, MANHOLE_USER) if namespace is not None else (CONSOLE_USER,)
    portal = Portal(AdminRealm(commands, clock, namespace), [SSHPublicKeyChecker(AuthorizedKeys(authorized_keys, users))])
    return AdminSSHFactory(portal, key, clock, idle)


__all__ = ["AdminSSHFactory", "KeyFileError", "check_authorized_keys", "console_factory", "host_key"]
