"""Names tried from outside, as the third review's probes did: a served production guestbook, over HTTP.

The name a sign-up gives tells the next sign-up nothing of whether its address had an
account, and the owner who takes a squatted address back by a reset signs with the name
she chooses, not the squatter's.
"""

import uuid

import pytest

from guestbook import names

from ..mail.smtpd import SMTPServer
from .served import WAIT, Served, production_settings
from .test_served_dashboard import PASSWORD, SQUATTER, address, letter_to


@pytest.fixture
def production(database_url, db, tmp_path):
    """A production guestbook and its SMTP server, on tables emptied of the accounts and tries of earlier tests."""
    with SMTPServer() as smtp:
        served = Served([], production_settings(database_url, smtp.url), tmp_path)
        try:
            assert served.said.startswith("The guestbook is at")
            db.execute("TRUNCATE accounts, entries, sessions, client_tries RESTART IDENTITY CASCADE")
            yield served, smtp
        finally:
            assert served.stopped() == 0


def letters_to(smtp, to: str, count: int) -> None:
    """Waits until `count` letters have arrived for `to`."""
    with smtp.inbox.arrived:
        assert smtp.inbox.arrived.wait_for(lambda: [m["To"] for m in smtp.letters].count(to) >= count, WAIT)


@pytest.mark.slow
def test_a_sign_up_s_name_answers_the_next_sign_up_alike_whether_its_address_had_an_account(production):
    served, smtp = production
    known, owner = address(), served.visitor()
    owner.request("/signup", {"email": known, "password": PASSWORD})
    assert owner.request(letter_to(smtp, known), {"password": PASSWORD})[0] == 302
    answers = []

    for first in (known, address()):  # an address with an account, and one without
        prober, name = served.visitor(), f"Probe {uuid.uuid4().hex[:8]}"
        assert prober.request("/signup", {"email": first, "password": SQUATTER, "name": name})[0] == 302
        status, page = prober.request("/signup", {"email": address(), "password": SQUATTER, "name": name})
        answers.append((status, names.TAKEN in page))

    assert answers == [(422, True), (422, True)]


@pytest.mark.slow
def test_the_owner_who_takes_a_squatted_address_back_by_a_reset_signs_with_the_name_she_chooses(production):
    served, smtp = production
    email, insult = address(), f"Erin {uuid.uuid4().hex[:6]} is a fraud"
    squatter, owner = served.visitor(), served.visitor()
    assert squatter.request("/signup", {"email": email, "password": SQUATTER, "name": insult})[0] == 302
    letters_to(smtp, email, 1)  # the confirmation letter she never asked for
    assert owner.request("/resets/new", {"email": email})[0] == 302
    letters_to(smtp, email, 2)
    reset = letter_to(smtp, email)

    form = owner.request(reset)[1]
    assert owner.request(reset, {"password": PASSWORD, "name": "Erin"})[0] == 302
    assert owner.request("/signin", {"email": email, "password": PASSWORD})[0] == 302
    assert owner.request("/entries", {"body": "my first entry"})[0] == 302

    page = served.visitor().request("/")[1]
    assert 'name="name"' in form
    assert '<bdi class="author">Erin</bdi>' in page and insult not in page
