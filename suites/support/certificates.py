"""A throwaway certificate authority for TLS tests: a CA, a server certificate for localhost and
127.0.0.1, and client certificates with chosen subjects, written as PEM (and PKCS12) files."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class Identity:
    certificate: Path  # PEM certificate
    key: Path  # PEM private key (unencrypted)
    combined: Path  # key and certificate in one PEM file (Kafka's PEM key store file)


def _name(**parts: str) -> x509.Name:
    order = (("C", NameOID.COUNTRY_NAME), ("O", NameOID.ORGANIZATION_NAME),
             ("OU", NameOID.ORGANIZATIONAL_UNIT_NAME), ("CN", NameOID.COMMON_NAME))  # fmt: skip
    return x509.Name([x509.NameAttribute(oid, parts[key]) for key, oid in order if key in parts])


class TestAuthority:
    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = _name(O="kconform tests", CN="kconform test CA")
        now = datetime.datetime.now(datetime.UTC)
        self._cert = (
            x509.CertificateBuilder()
            .subject_name(self._name)
            .issuer_name(self._name)
            .public_key(self._key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.ca = self.directory / "ca.pem"
        self.ca.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def issue(self, label: str, *, server: bool = False, **subject: str) -> Identity:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(**subject))
            .issuer_name(self._name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=30))
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        cert = builder.sign(self._key, hashes.SHA256())
        cert_pem = cert.public_bytes(serialization.Encoding.PEM)
        key_pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        identity = Identity(self.directory / f"{label}.crt", self.directory / f"{label}.key",
                            self.directory / f"{label}-keystore.pem")  # fmt: skip
        identity.certificate.write_bytes(cert_pem)
        identity.key.write_bytes(key_pem)
        identity.combined.write_bytes(key_pem + cert_pem)
        p12 = pkcs12.serialize_key_and_certificates(
            label.encode(), key, cert, [self._cert], serialization.BestAvailableEncryption(b"changeit")
        )
        (self.directory / f"{label}.p12").write_bytes(p12)
        return identity
