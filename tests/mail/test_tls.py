"""The two TLS transports, smtp+starttls:// and smtps://, each with a login, against a real server.

The server's certificate is made for the test with the openssl command (which the
tests need, as they need PostgreSQL) and trusted through SSL_CERT_FILE, so the client
verifies it exactly as it would a real one.
"""

import ssl
import subprocess

import pytest
from aiosmtpd.smtp import AuthResult

import mail

from .smtpd import HOST, SMTPServer

USER, PASSWORD = "ada@example.com", "p@ss:word/1"
QUOTED = "ada%40example.com:p%40ss%3Aword%2F1"  # the two, percent-encoded for a URL
LETTER = mail.message("guestbook@example.com", "bo@example.com", "Hello", "A body.\n")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A self-signed certificate for 127.0.0.1 and its key: (cert path, key path)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={HOST}",
            "-addext",
            f"subjectAltName=IP:{HOST}",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls(certificate, monkeypatch):
    """The server side's TLS context, with the certificate trusted by the client side."""
    cert, key = certificate
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


def login(server, session, envelope, mechanism, auth_data) -> AuthResult:
    """Lets in USER with PASSWORD only."""
    return AuthResult(success=(auth_data.login, auth_data.password) == (USER.encode(), PASSWORD.encode()))


def test_starttls_with_login_delivers(tls, monkeypatch):
    with SMTPServer(tls_context=tls, require_starttls=True, authenticator=login, auth_required=True) as server:
        monkeypatch.setenv("MAIL_URL", f"smtp+starttls://{QUOTED}@{HOST}:{server.port}")
        mail.delivered(LETTER)

    assert [letter["To"] for letter in server.letters] == ["bo@example.com"]


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_smtps_with_login_delivers(tls, monkeypatch):
    # aiosmtpd does not count TLS from the first byte as TLS for AUTH, hence auth_require_tls=False.
    with SMTPServer(ssl_context=tls, authenticator=login, auth_required=True, auth_require_tls=False) as server:
        monkeypatch.setenv("MAIL_URL", f"smtps://{QUOTED}@{HOST}:{server.port}")
        mail.delivered(LETTER)

    assert [letter["To"] for letter in server.letters] == ["bo@example.com"]


def test_untrusted_certificate_is_refused(tls, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE")
    with SMTPServer(ssl_context=tls) as server:
        monkeypatch.setenv("MAIL_URL", f"smtps://{HOST}:{server.port}")
        with pytest.raises(ssl.SSLCertVerificationError):
            mail.delivered(LETTER)


def test_smtp_url_uses_starttls_when_the_server_offers_it(tls, monkeypatch):
    # The server takes no letter before STARTTLS: the letter's arrival shows it went over TLS.
    with SMTPServer(tls_context=tls, require_starttls=True) as server:
        monkeypatch.setenv("MAIL_URL", f"smtp://{HOST}:{server.port}")
        mail.delivered(LETTER)

    assert [letter["To"] for letter in server.letters] == ["bo@example.com"]


@pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS")
def test_a_password_is_never_sent_to_a_server_that_offers_no_tls(monkeypatch):
    tried = []  # the logins the server received
    with SMTPServer(
        authenticator=lambda *args: tried.append(args) or AuthResult(success=True), auth_require_tls=False
    ) as server:
        monkeypatch.setenv("MAIL_URL", f"smtp://{QUOTED}@{HOST}:{server.port}")
        with pytest.raises(mail.Unencrypted, match=f"{HOST}:{server.port} offers no STARTTLS: the password"):
            mail.delivered(LETTER)

    assert (tried, server.letters) == ([], [])
