"""The console's key files (gamed.admin.ssh) and its metrics, without a network: the host key made
once with mode 0600, the authorized_keys checks start-up makes, the keys database per user."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography.hazmat.primitives.asymmetric import ed25519
from twisted.conch.checkers import IAuthorizedKeysDB
from twisted.conch.ssh import keys
from zope.interface.verify import verifyObject

from gamed.admin import ssh
from gamed.connections import Ban
from gamed.metrics import Metrics
from tests.admin.test_commands import Setup


def _public_line() -> bytes:
    return keys.Key(ed25519.Ed25519PrivateKey.generate()).public().toString("openssh") + b" someone@host\n"


def test_the_host_key_is_made_once_with_mode_0600(tmp_path):
    path = tmp_path / "host_key"
    made = ssh.host_key(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and not made.isPublic()
    assert ssh.host_key(str(path)) == made, "read back, not made again"
    path.write_text("not a key\n")
    with pytest.raises(ssh.KeyFileError, match=f"admin.host_key {path}: not a usable private key"):
        ssh.host_key(str(path))
    with pytest.raises(ssh.KeyFileError, match="cannot be written"):
        ssh.host_key(str(tmp_path / "no" / "such" / "dir" / "key"))


def test_authorized_keys_are_checked_and_read_per_user(tmp_path):
    path = tmp_path / "authorized_keys"
    with pytest.raises(ssh.KeyFileError, match="cannot be read: No such file or directory"):
        ssh.check_authorized_keys(str(path))
    path.write_bytes(b"# only a comment\n\n")
    with pytest.raises(ssh.KeyFileError, match="holds no public key"):
        ssh.check_authorized_keys(str(path))
    path.write_bytes(b"# two keys\n" + _public_line() + b"garbage line\n" + _public_line())
    assert ssh.check_authorized_keys(str(path)) == 2
    db = ssh.AuthorizedKeys(str(path), (ssh.CONSOLE_USER,))
    assert verifyObject(IAuthorizedKeysDB, db)
    assert len(list(db.getAuthorizedKeys(b"admin"))) == 2
    assert list(db.getAuthorizedKeys(b"manhole")) == [] and list(db.getAuthorizedKeys(b"root")) == []
    path.write_bytes(_public_line())  # read again at every login
    assert len(list(db.getAuthorizedKeys(b"admin"))) == 1


def test_the_metrics_count_kicks_and_bans():
    s = Setup()
    client = s.client()
    s.registry.bans.add(Ban("address", "192.0.2.0/24"))
    s.run("kick 1")
    client.finish()
    text = Metrics(s.clock, {"kalaha": s.service}, admin=lambda: s.target).scrape().decode()
    assert "gamed_admin_kicks_total 1.0" in text
    assert 'gamed_bans{kind="address"} 1.0' in text and 'gamed_bans{kind="account"} 0.0' in text
