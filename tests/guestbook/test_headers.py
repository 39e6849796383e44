"""The headers of every answer: a policy the pages pass, no framing, nothing cached, HSTS outside development."""

import pytest

from guestbook import accounts, create_app
from guestbook import db as guestbook_db

PAGES = ["/", "/signin", "/signup", "/resets/new", "/nowhere", "/confirm/garbage", "/?before=0"]


@pytest.fixture
def link_pages(visitor, post) -> list[str]:
    """A confirm, an unlock and a reset link, each showing its account."""
    visitor.signup("bo@example.com")
    confirm = post.only_link_to("bo@example.com")
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", "not the right password")
    unlock = post.only_link_to("ada@example.com")
    visitor.submit("/resets/new", email="ada@example.com")
    return [confirm, unlock, post.only_link_to("ada@example.com")]


def test_every_page_forbids_framing_and_inline_style_and_is_never_stored(client, link_pages):
    for path in PAGES + link_pages:
        answer = client.get(path)
        policy = answer.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in policy and "style-src 'self'" in policy, path
        assert "'unsafe-inline'" not in policy and answer.headers["X-Frame-Options"] == "DENY", path
        assert answer.headers["Cache-Control"] == "no-store", path


def test_pages_carry_no_inline_style_or_script(client, link_pages):
    for path in PAGES + link_pages:
        page = client.get(path).get_data(as_text=True)
        assert "<style" not in page and " style=" not in page and "<script" not in page, path
        assert '<link rel="stylesheet" href="/static/guestbook.css">' in page, path


def test_the_stylesheet_is_served_from_the_site(client):
    answer = client.get("/static/guestbook.css")

    assert answer.status_code == 200 and answer.mimetype == "text/css"
    assert "header" in answer.get_data(as_text=True)


def test_hsts_outside_development_only(client, settings, smtp):
    assert client.get("/").headers["Strict-Transport-Security"].startswith("max-age=")
    development = create_app({**settings, "DEVELOPMENT": True})
    try:
        assert "Strict-Transport-Security" not in development.test_client().get("/").headers
    finally:
        guestbook_db.closed(development)


def test_every_page_denies_every_browser_feature(client, link_pages):
    for path in [*PAGES, *link_pages, "/jobs/", "/static/guestbook.css"]:
        assert_denies_every_feature(client.get(path).headers.get("Permissions-Policy", ""), path)


def assert_denies_every_feature(policy: str, path: str) -> None:
    """Asserts that a Permissions-Policy header names the powerful features and allows each to no origin."""
    allowed = dict(rule.partition("=")[::2] for rule in policy.split(", "))
    assert {"camera", "microphone", "geolocation", "payment", "usb"} <= allowed.keys(), (path, policy)
    assert set(allowed.values()) == {"()"}, path  # () is the empty list of origins: nobody, this site included


def test_every_page_names_an_icon_the_site_serves_so_no_browser_asks_for_a_missing_favicon(client, link_pages):
    for path in PAGES + link_pages:
        assert '<link rel="icon" href="/static/icon.svg">' in client.get(path).get_data(as_text=True), path
    icon = client.get("/static/icon.svg")
    assert (icon.status_code, icon.mimetype) == (200, "image/svg+xml")
    assert client.get("/favicon.ico").status_code == 200  # for the clients that ask the old place anyway
