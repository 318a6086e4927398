"""A throwaway self-signed certificate for "localhost", for the TLS tests."""

import datetime

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


def certificate_pem() -> tuple[bytes, bytes]:
    """(key PEM, certificate PEM) of a new EC key and a certificate for localhost valid today."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return key_pem, cert.public_bytes(serialization.Encoding.PEM)


def self_signed(tmp_path):
    """Write key.pem and cert.pem into ``tmp_path``; returns their paths and the certificate PEM."""
    key_pem, cert_pem = certificate_pem()
    (tmp_path / "key.pem").write_bytes(key_pem)
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    return tmp_path / "key.pem", tmp_path / "cert.pem", cert_pem
