"""Letters somebody waits for, tried from outside: a flood of reset requests from clients holding many accounts,
served over HTTP to a mail server that takes its time per letter, leaves another account's reset link alive.

A production `guestbook serve` behind a proxy (TRUSTED_PROXIES names this machine, so each
X-Forwarded-For is a client of its own), with a reset link that lives LIFETIME seconds and a
real SMTP server that answers each letter after DELAY: the attacker's letters, all at once,
would take longer to send than the link lives.
"""

import pytest

from guestbook import mailer

from ..mail.smtpd import SMTPServer
from .served import Served, production_settings
from .test_served_dashboard import RESET, address, letter_to, reset_link

DELAY = 0.4  # seconds the mail server takes to answer each letter
LIFETIME = 5  # seconds a reset link lives (RESET_TOKEN_MAX_AGE)
FLOOD = 20  # the attacker's accounts, each asking for a reset: FLOOD x DELAY seconds of sending, past LIFETIME
CLIENTS = 2  # the addresses the attacker's requests come from, each within CLIENT_TRIES
PASSWORD = "correct horse battery"  # every account's
NEW_PASSWORD = "a brand new kettle marmot"  # the victim's, chosen with her reset link


@pytest.fixture
def proxied(database_url, db, tmp_path):
    """A production guestbook behind a proxy on this machine, with a reset LIFETIME, and its slow SMTP server."""
    with SMTPServer(delay=DELAY) as smtp:
        settings = production_settings(
            database_url,
            smtp.url,
            TRUSTED_PROXIES="127.0.0.1",
            RESET_TOKEN_MAX_AGE=str(LIFETIME),
        )
        served = Served([], settings, tmp_path)
        try:
            assert served.said.startswith("The guestbook is at"), served.said
            yield served, smtp
        finally:
            assert served.stopped() == 0


def posted(visitor, client: str, path: str, fields: dict) -> int:
    """POSTs `fields` to `path` as `client` (the address the proxy vouches for); the answer's status."""
    return visitor.request(path, fields, headers={"X-Forwarded-For": client})[0]


@pytest.mark.slow
def test_a_flood_of_reset_requests_leaves_another_account_s_reset_link_alive_when_it_arrives(proxied, db):
    served, smtp = proxied
    victim, attacker = served.visitor(), served.visitor()
    email = address()
    assert posted(victim, "10.9.0.1", "/signup", {"email": email, "password": PASSWORD}) == 302
    assert posted(victim, "10.9.0.1", letter_to(smtp, email), {"password": PASSWORD}) == 302
    flood = [address() for _ in range(FLOOD)]
    for n, account in enumerate(flood):  # unconfirmed accounts are enough
        assert posted(attacker, f"10.1.0.{n % CLIENTS + 1}", "/signup", {"email": account, "password": PASSWORD}) == 302

    statuses = [posted(attacker, f"10.2.0.{n % CLIENTS + 1}", "/resets/new", {"email": a}) for n, a in enumerate(flood)]
    refused = attacker.headers  # the last answer's: past the client's bound
    sent_meanwhile = sum(m["Subject"] == RESET for m in smtp.letters)  # each sent one freed its client a place
    assert posted(victim, "10.9.0.2", "/resets/new", {"email": email}) == 302

    link = reset_link(smtp, db, email)  # the victim's letter must come, however long the flood
    assert victim.request(link)[0] == 200, "the victim's reset link was dead when it arrived"
    assert posted(victim, "10.9.0.2", link, {"password": NEW_PASSWORD}) == 302
    # What the flood cost its maker: each client kept at most AWAITED_PER_CLIENT letters waiting, then was told to wait.
    assert statuses.count(302) <= CLIENTS * mailer.AWAITED_PER_CLIENT + sent_meanwhile, statuses
    assert set(statuses) == {302, 429}
    assert refused["Retry-After"] == str(mailer.AWAITED_RETRY_AFTER)
