"""The dashboard and the accounts that may see it, tried from outside: a served guestbook, over HTTP, as an
attacker would.

A production process (an https BASE_URL, as behind a TLS proxy) and a development
one, each a real `guestbook serve`, with a real SMTP server: pre-registering an
address gets no dashboard, no page shows a live link, the dashboard's forms hold only
a token the server signed, and in development only the pages under the printed
link show /outbox and /jobs, under a local Host name only, whatever cookies a
request carries.
"""

import re
import subprocess
import sys
import uuid

import pytest

from guestbook import auth

from ..mail.smtpd import SMTPServer, body_of
from .served import ROOT, SITE, WAIT, Served, environment, eventually, production_settings

OTHER_PORT = "http://127.0.0.1:8099"  # a page another user of the machine serves, on another port of 127.0.0.1
# What Chromium sends with a page's request to the guestbook after a link on OTHER_PORT's page: the same site
# (ports do not count), not the same origin.
FROM_OTHER_PORT = {
    "Sec-Fetch-Site": "same-site",
    "Sec-Fetch-Mode": "navigate",
    "Sec-Fetch-Dest": "document",
    "Origin": OTHER_PORT,
    "Referer": f"{OTHER_PORT}/",
}
SAME_ORIGIN = {"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
PASSWORD = "correct horse battery"  # the owner's
SQUATTER = "the squatter's own password"  # chosen by someone who does not own the address
RESET = "Choose a new guestbook password"  # the subject of a reset letter


def address() -> str:
    """An address no other test used, on a database other tests share."""
    return f"served-{uuid.uuid4().hex[:8]}@example.com"


def operator(database_url, *args) -> subprocess.CompletedProcess:
    """`python -m guestbook admins ARGS`, as an operator runs it on the server."""
    return subprocess.run(
        [sys.executable, "-m", "guestbook", "admins", *args],
        capture_output=True,
        text=True,
        env=environment(DATABASE_URL=database_url, PYTHONPATH=str(ROOT)),
        cwd=ROOT,
        timeout=WAIT,
    )


def letter_to(smtp, to: str) -> str:
    """The path of the link in the letter that arrives for `to`."""
    with smtp.inbox.arrived:
        assert smtp.inbox.arrived.wait_for(lambda: any(m["To"] == to for m in smtp.letters), WAIT)
    letter = [m for m in smtp.letters if m["To"] == to][-1]
    found = re.search(re.escape(SITE) + r"(/\S+)", body_of(letter))
    assert found, f"the letter to {to} carries no link"
    return found.group(1)


def reset_link(smtp, db, to: str) -> str:
    """The path of the link in the reset letter that arrives for `to` within WAIT; failing, what became of its job."""
    with smtp.inbox.arrived:
        came = smtp.inbox.arrived.wait_for(
            lambda: any(m["To"] == to and m["Subject"] == RESET for m in smtp.letters), WAIT
        )
    ended = db.execute("SELECT failure FROM jobs WHERE failure IS NOT NULL AND args::text LIKE %s", [f"%{to}%"])
    assert came, f"no reset letter came for {to} within {WAIT} s; its job: {ended.fetchall()}"
    (letter,) = [m for m in smtp.letters if m["To"] == to and m["Subject"] == RESET]
    found = re.search(re.escape(SITE) + r"(/resets/\S+)", body_of(letter))
    assert found, f"the reset letter to {to} carries no link"
    return found.group(1)


@pytest.fixture
def production(database_url, db, tmp_path):
    """A production guestbook (BASE_URL https, as behind a proxy that ends TLS), and its SMTP server."""
    with SMTPServer() as smtp:
        served = Served([], production_settings(database_url, smtp.url), tmp_path)
        try:
            assert served.said.startswith("The guestbook is at")
            yield served, smtp
        finally:
            assert served.stopped() == 0


@pytest.mark.slow
def test_a_pre_registered_address_never_becomes_the_squatter_s_nor_gives_the_dashboard(production, database_url):
    served, smtp = production
    owner, squatter, email = served.visitor(), served.visitor(), address()
    assert squatter.request("/signup", {"email": email, "password": SQUATTER})[0] == 302
    link = letter_to(smtp, email)

    assert owner.request(link, {"password": PASSWORD})[0] == 401  # the owner's click, with her own password
    assert operator(database_url, "add", email).returncode == 1  # not confirmed: no grant
    status, page = squatter.request("/signin", {"email": email, "password": SQUATTER})  # still unconfirmed
    assert status == 401 and auth.SIGNIN_FAILED in page  # sign-in's one answer to every failure
    assert squatter.request("/jobs/")[0] == 403
    assert 'action="/signout"' not in squatter.request("/")[1]  # not signed in


@pytest.fixture
def admin(production, database_url):
    """A confirmed account an operator granted the dashboard, signed in; (its visitor, its address)."""
    served, smtp = production
    visitor, email = served.visitor(), address()
    visitor.request("/signup", {"email": email, "password": PASSWORD})
    assert visitor.request(letter_to(smtp, email), {"password": PASSWORD})[0] == 302
    granted = operator(database_url, "add", email)
    assert granted.returncode == 0, granted.stdout + granted.stderr
    assert visitor.request("/signin", {"email": email, "password": PASSWORD})[0] == 302
    return visitor, email


def dashboard_token(visitor) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', visitor.request("/jobs/")[1])
    assert found, "the dashboard carries no CSRF token"
    return found.group(1)


@pytest.mark.slow
def test_no_page_of_the_dashboard_shows_the_link_of_a_reset_letter_held_on_a_paused_queue(production, admin, db):
    served, smtp = production
    visitor, email = admin
    assert visitor.request("/jobs/pause", {"csrf": dashboard_token(visitor), "queue": "mail"}, csrf=False)[0] == 200
    paused = 'jobs_worker_queue_paused{queue="mail"} 1'  # the worker beside looks every POLL_INTERVAL
    assert eventually(lambda: paused in visitor.request("/jobs/metrics")[1].splitlines())
    assert served.visitor().request("/resets/new", {"email": email})[0] == 302
    job, args = db.execute("SELECT id, args FROM jobs WHERE args->>'to' = %s", [email]).fetchone()  # the job write
    assert "/resets/" not in str(args)  # only what the letter is written from: the link is made as it leaves

    pages = [
        visitor.request(path)
        for path in ("/jobs/", "/jobs/failed", f"/jobs/job/{job}", f"/jobs/job/{job}?args=shown", "/jobs/metrics")
    ]
    assert visitor.request("/jobs/resume", {"csrf": dashboard_token(visitor), "queue": "mail"}, csrf=False)[0] == 200
    token = reset_link(smtp, db, email).split("/")[2]

    assert [status for status, _ in pages] == [200] * len(pages)
    assert [page for _, page in pages if token in page] == []
    assert f"&quot;account&quot;: {args['account']}" in pages[3][1]  # the job's arguments show


@pytest.mark.slow
def test_the_dashboard_s_forms_take_only_a_token_the_server_signed_from_its_own_site(production, admin, db):
    served, _ = production
    visitor, _ = admin
    token = dashboard_token(visitor)
    headers = visitor.headers
    chosen = served.visitor()  # a client that chose its own token, and signed in as itself: still no signature
    chosen.cookies = {**visitor.cookies, "jobs_csrf": "c" * 43}

    answers = [
        chosen.request("/jobs/pause", {"csrf": "c" * 43, "queue": "mail"}, csrf=False)[0],
        visitor.request(
            "/jobs/pause", {"csrf": token, "queue": "mail"}, csrf=False, headers={"Origin": "https://attacker.example"}
        )[0],
    ]

    assert answers == [403, 403]
    assert db.execute("SELECT count(*) FROM job_paused_queues").fetchone()[0] == 0
    assert "Secure" in [h for h in headers.get_all("Set-Cookie") if h.startswith("jobs_csrf=")][0]
    assert headers["Strict-Transport-Security"].startswith("max-age=")
    assert headers["X-Frame-Options"] == "DENY"
    assert (
        visitor.request("/jobs/pause", {"csrf": token, "queue": "mail"}, csrf=False, headers={"Origin": SITE})[0] == 200
    )


@pytest.mark.slow
def test_development_shows_the_outbox_and_the_dashboard_only_to_the_printed_link_under_a_local_name(
    database_url, db, tmp_path
):
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    try:
        assert re.fullmatch(rf"{re.escape(served.base)}/[0-9a-f]{{64}}/", served.key_link)
        neighbour = served.visitor()  # another user of the machine, who did not start the server
        assert [neighbour.request(path)[0] for path in ("/outbox", "/jobs/", "/jobs/metrics")] == [403, 403, 403]
        assert [served.request(path)[0] for path in ("/outbox", "/jobs/", "/jobs/metrics")] == [200, 200, 200]
        rebound = {"Host": "rebind.attacker.example"}
        assert [
            served.visitor(keyed=True).request(path, headers=rebound)[0]
            for path in ("/outbox", "/jobs/", "/jobs/failed", "/jobs/metrics")
        ] == [400, 400, 400, 400]
    finally:
        assert served.stopped() == 0


@pytest.mark.slow
def test_development_s_pages_answer_no_cookie_the_browser_would_also_send_to_another_port(database_url, db, tmp_path):
    """Cookies ignore ports: every cookie the developer's browser holds for 127.0.0.1 is sent to OTHER_PORT too."""
    served = Served(["--development"], environment(DATABASE_URL=database_url), tmp_path)
    try:
        developer = served.visitor(keyed=True)  # opened the printed link
        signed_up = address()
        developer.request("/signup", {"email": signed_up, "password": PASSWORD})
        assert eventually(lambda: f"To {signed_up}" in developer.request("/outbox", headers=SAME_ORIGIN)[1])
        status, page = developer.request("/outbox", headers=SAME_ORIGIN)
        assert status == 200 and "/confirm/" in page

        other_user = served.visitor()
        other_user.cookies = dict(developer.cookies)  # what OTHER_PORT's server was sent
        for headers in (FROM_OTHER_PORT, {}):  # through the developer's browser, or replayed from its own
            for path in ("/outbox", "/jobs/", "/jobs/failed"):
                status, page = other_user.request(path, headers=headers)
                assert status in (403, 404) and "/confirm/" not in page, (path, headers)
    finally:
        assert served.stopped() == 0
