"""``gamed admin COMMAND ...``: run one admin console command over SSH (``exec``) and print its
output; the exit status is the command's (0 done, 1 an error such as an unknown target, 2 not
understood) or 255 when the console cannot be reached or refuses the key.

The console's host key must be known: with ``--config`` it is the public half of the daemon's
``[admin] host_key`` file (the operator runs ``gamed admin`` on the daemon's machine, as the
user that may read that file), else the lines for the host in an OpenSSH ``--known-hosts`` file
(``[host]:port`` or ``host`` entries, hashed or not). An unknown or different host key is refused,
never accepted on first use.
"""

from __future__ import annotations

import sys
from typing import Any

from twisted.conch.client.knownhosts import KnownHostsFile
from twisted.conch.endpoints import SSHCommandClientEndpoint
from twisted.conch.error import ConchError
from twisted.conch.ssh import keys
from twisted.internet import defer, endpoints
from twisted.internet.error import ConnectionDone, ProcessTerminated
from twisted.internet.protocol import Protocol
from twisted.python.filepath import FilePath

UNREACHABLE = 255


class ClientError(Exception):
    """Why the console could not run the command: one line."""


class HostKeys(KnownHostsFile):
    """The host keys ``gamed admin`` accepts (a conch KnownHostsFile that saves nothing): exactly these."""

    def __init__(self, accepted: list[keys.Key], where: str):
        super().__init__(None)
        self.accepted = accepted
        self.where = where

    def verifyHostKey(self, ui: Any, hostname: bytes, ip: bytes, key: keys.Key) -> defer.Deferred:  # noqa: N802
        if any(key == known for known in self.accepted):
            return defer.succeed(True)
        shown = "SHA256:" + key.fingerprint(keys.FingerprintFormats.SHA256_BASE64)
        return defer.fail(ConchError(f"the console's host key {shown} is not the one in {self.where}"))


def known_hosts_keys(path: str, host: str, port: int) -> list[keys.Key]:
    """The keys an OpenSSH known_hosts file lists for ``host`` on ``port``."""
    try:
        known = KnownHostsFile.fromPath(FilePath(path))
        names = [f"[{host}]:{port}".encode(), host.encode()]
        return [e.publicKey for e in known.iterentries() if any(e.matchesHost(n) for n in names)]
    except OSError as e:
        raise ClientError(f"cannot read {path}: {e.strerror or e}") from None


def private_key(path: str) -> keys.Key:
    try:
        key = keys.Key.fromFile(path)
    except OSError as e:
        raise ClientError(f"cannot read the key {path}: {e.strerror or e}") from None
    except (keys.BadKeyError, keys.EncryptedKeyError, ValueError) as e:
        raise ClientError(f"{path} is not a usable private key (an unencrypted OpenSSH or PEM key): {e}") from None
    if key.isPublic():
        raise ClientError(f"{path} is a public key; --key takes the private key")
    return key


def console_address(description: str) -> tuple[str, int]:
    """(host, port) to reach a console listening on the strports ``description`` (a tcp: one)."""
    kind, _, rest = description.partition(":")
    if kind not in ("tcp", "tcp6"):
        raise ClientError(f"admin.listen {description!r} is not a tcp: port; give --host and --port")
    port, host = None, ""
    for part in rest.split(":"):
        name, eq, value = part.partition("=")
        if not eq and port is None:
            port = name
        elif name == "port":
            port = value
        elif name == "interface":
            host = value
    if port is None or not port.isdigit() or int(port) == 0:
        raise ClientError(f"admin.listen {description!r} names no fixed port; give --port")
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return host, int(port)


class _Output(Protocol):
    def __init__(self):
        self.data = bytearray()
        self.done: defer.Deferred = defer.Deferred()

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        self.data += data

    def connectionLost(self, reason=None) -> None:  # noqa: N802
        self.reason = reason
        self.done.callback(None)  # (a Failure given to callback would fire the errbacks)


class _NoQuestions:
    """conch's UI: never asks the operator anything (an unknown host key is refused)."""

    def prompt(self, text: bytes) -> defer.Deferred:
        return defer.succeed(False)

    def warn(self, text: bytes) -> None:
        pass


async def run_command(reactor: Any, host: str, port: int, key: keys.Key, host_keys: HostKeys, command: str,
                      user: str = "admin", timeout: float = 30.0) -> tuple[int, str]:
    """Run ``command`` on the console at ``host``:``port`` as ``user`` with ``key``; (exit status,
    output). ClientError when it cannot be reached, the host key is not known or the key refused."""
    endpoint = SSHCommandClientEndpoint.newConnection(
        reactor, command.encode("utf-8"), user.encode("utf-8"), host.encode("ascii"), port,
        keys=[key], knownHosts=host_keys, ui=_NoQuestions(),
    )
    output = _Output()
    try:
        d = endpoints.connectProtocol(endpoint, output)
        d.addTimeout(timeout, reactor)
        await d
    except defer.TimeoutError:
        raise ClientError(f"the console at {host}:{port} did not answer within {timeout:g} s") from None
    except Exception as e:
        raise ClientError(f"cannot run the command on the console at {host}:{port}: {_why(e)}") from None
    done = output.done
    done.addTimeout(timeout, reactor)
    try:
        await done
        reason = output.reason
    except defer.TimeoutError:
        raise ClientError(f"the console at {host}:{port} did not finish the command within {timeout:g} s") from None
    text = output.data.decode("utf-8", "replace")
    if reason is None or reason.check(ConnectionDone):
        return 0, text
    if reason.check(ProcessTerminated) and reason.value.exitCode is not None:
        return reason.value.exitCode, text
    return UNREACHABLE, text


def _why(e: BaseException) -> str:
    name = type(e).__name__
    if name == "AuthenticationFailed":
        return "the key was refused (is its public key in the daemon's admin.authorized_keys?)"
    text = str(getattr(e, "value", e)).strip() or name
    return text.splitlines()[0]


async def main(reactor: Any, args: Any, fail) -> None:
    """``gamed admin``: ``args`` from gamed.cli's parser; ``fail(message)`` exits with status 1."""
    from gamed.config import ConfigError, load

    command = " ".join(args.words).strip()
    if not command:
        fail("admin: give a command, e.g. gamed admin --config gamed.conf connections ('help' lists them)")
    try:
        cfg = None
        if args.config:
            try:
                cfg = load(args.config)
            except ConfigError as e:
                raise ClientError(str(e)) from None
            if not cfg.admin.listen and (args.port is None):
                raise ClientError(f"{args.config}: the admin console is off (admin.listen is empty)")
        host, port = args.host, args.port
        if port is None:
            if cfg is None:
                raise ClientError("give --port (or --config FILE to read the daemon's admin.listen)")
            found_host, port = console_address(cfg.admin.listen[0])
            host = host or found_host
        host = host or "127.0.0.1"
        if args.known_hosts:
            accepted = known_hosts_keys(args.known_hosts, host, port)
            where = args.known_hosts
            if not accepted:
                raise ClientError(f"{args.known_hosts} has no key for {host} or [{host}]:{port}")
        elif cfg is not None:
            accepted = [private_key(cfg.admin.host_key).public()]
            where = f"admin.host_key {cfg.admin.host_key}"
        else:
            raise ClientError("the console's host key must be known: give --config FILE (its admin.host_key) or --known-hosts FILE")
        status, text = await run_command(reactor, host, port, private_key(args.key), HostKeys(accepted, where), command,
                                         user=args.user)
    except ClientError as e:
        print(f"gamed: admin: {e}", file=sys.stderr)
        raise SystemExit(UNREACHABLE) from None
    sys.stdout.write(text)
    sys.stdout.flush()
    raise SystemExit(status)
