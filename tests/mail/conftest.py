"""Fixtures of the mail tests: an SMTP server that MAIL_URL names, and an outbox folder."""

import pytest

from .smtpd import SMTPServer


@pytest.fixture
def smtp(monkeypatch):
    """A running SMTP server, named by MAIL_URL for the test."""
    with SMTPServer() as server:
        monkeypatch.setenv("MAIL_URL", server.url)
        yield server


@pytest.fixture
def outbox(tmp_path, monkeypatch):
    """An empty outbox folder, with MAIL_URL unset so that letters go there."""
    monkeypatch.delenv("MAIL_URL", raising=False)
    monkeypatch.setenv("MAIL_OUTBOX", str(tmp_path / "outbox"))
    return tmp_path / "outbox"
