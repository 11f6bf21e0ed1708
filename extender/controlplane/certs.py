"""Certificates for a local control plane: a CA, the apiserver's serving certificate, an admin
client certificate (group ``system:masters``) and the service-account signing key pair.

Generated with ``cryptography`` once per cluster directory; nothing here is meant for
anything but loopback test clusters.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=365)


@dataclass(frozen=True)
class CertFiles:
    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path
    sa_pub: Path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: object) -> None:
    """Write a private key readable by its owner only from the first byte on.

    Created with mode 0600 by ``os.open`` (``O_EXCL`` after removing any old file, so an
    existing file's wider mode is never reused): a write-then-chmod would leave it readable
    under the umask's mode until the chmod.
    """
    data = key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _builder(subject: x509.Name, issuer: x509.Name, public_key: object) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def generate(directory: Path, hosts: list[str] | None = None) -> CertFiles:
    """Write every file the control plane needs into ``directory`` (kept if already there)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = CertFiles(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_key=directory / "sa.key",
        sa_pub=directory / "sa.pub",
    )
    if all(Path(p).exists() for p in vars(files).values()):
        return files

    ca_key = _key()
    ca_name = _name("kube-extender-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.ca_key, ca_key)
    _write_cert(files.ca_cert, ca_cert)

    names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
    names += [h for h in hosts or () if h not in names]
    sans: list[x509.GeneralName] = []
    for host in names + ["127.0.0.1", "10.0.0.1"]:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    serving_key = _key()
    serving = (
        _builder(_name("kube-apiserver"), ca_name, serving_key.public_key())
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.serving_key, serving_key)
    _write_cert(files.serving_cert, serving)

    admin_key = _key()
    admin = (
        _builder(_name("kube-extender-admin", "system:masters"), ca_name, admin_key.public_key())
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(files.admin_key, admin_key)
    _write_cert(files.admin_cert, admin)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(files.sa_key, sa_key)
    files.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return files


def issue_serving_cert(
    files: CertFiles, directory: Path, common_name: str, hosts: list[str]
) -> tuple[Path, Path]:
    """A serving certificate signed by the cluster CA (for the extender's HTTPS tests)."""
    ca_key = serialization.load_pem_private_key(files.ca_key.read_bytes(), password=None)
    ca_cert = x509.load_pem_x509_certificate(files.ca_cert.read_bytes())
    key = _key()
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    cert = (
        _builder(_name(common_name), ca_cert.subject, key.public_key())
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    cert_path, key_path = directory / f"{common_name}.crt", directory / f"{common_name}.key"
    _write_key(key_path, key)
    _write_cert(cert_path, cert)
    return cert_path, key_path
