"""Sessions end on the server: a copied cookie dies with sign-out, and every session ends by itself in time."""

import pytest

from guestbook import sessions

from .conftest import PASSWORD


def signed_in_as(client) -> bool:
    """Whether `client`'s cookie is a live session of ada@example.com."""
    return "ada@example.com" in client.get("/").get_data(as_text=True)


def copy_of(app, client):
    """Another client holding a copy of `client`'s session cookie, as a thief would."""
    thief = app.test_client()
    thief.set_cookie("session", client.get_cookie("session").value)
    return thief


def test_a_cookie_copied_before_sign_out_does_not_work_after_it(app, client, visitor):
    visitor.signed_in("ada@example.com")
    thief = copy_of(app, client)
    assert signed_in_as(thief)

    visitor.signout()

    assert not signed_in_as(thief)
    assert not signed_in_as(copy_of(app, client))


def test_signing_out_ends_only_that_session(app, client, visitor, post):
    visitor.signed_in("ada@example.com")
    phone = type(visitor)(app.test_client(), post)
    phone.signin("ada@example.com")

    visitor.signout()

    assert signed_in_as(phone.client)


def test_ending_every_session_signs_out_every_device_of_the_account_only(app, client, visitor, post):
    visitor.signed_in("ada@example.com")
    phone, thief = type(visitor)(app.test_client(), post), copy_of(app, client)
    phone.signin("ada@example.com")
    bo = type(visitor)(app.test_client(), post)
    bo.signed_in("bo@example.com")

    answer = phone.submit("/signout/everywhere")

    assert answer.status_code == 302
    assert not signed_in_as(client) and not signed_in_as(phone.client) and not signed_in_as(thief)
    assert "bo@example.com" in bo.client.get("/").get_data(as_text=True)
    assert visitor.signin("ada@example.com").status_code == 302  # a new session starts as ever


def test_a_cookie_copied_before_a_reset_does_not_work_after_it(app, client, visitor, post, db):
    visitor.signed_in("ada@example.com")
    thief = copy_of(app, client)
    visitor.submit("/resets/new", email="ada@example.com")

    visitor.submit(post.only_link_to("ada@example.com"), password="a brand new password")

    assert not signed_in_as(thief)
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_a_session_idle_for_session_idle_ends(client, visitor, db):
    visitor.signed_in("ada@example.com")
    db.execute("UPDATE sessions SET seen_at = seen_at - make_interval(secs => %s)", [sessions.SESSION_IDLE])

    assert not signed_in_as(client)


def test_a_request_keeps_a_session_alive(client, visitor, db):
    visitor.signed_in("ada@example.com")
    db.execute("UPDATE sessions SET seen_at = seen_at - make_interval(secs => %s)", [sessions.SESSION_IDLE - 60])

    assert signed_in_as(client)  # and this request moves seen_at on
    db.execute("UPDATE sessions SET seen_at = seen_at - make_interval(secs => %s)", [sessions.SESSION_IDLE - 60])

    assert signed_in_as(client)


def test_a_busy_session_ends_session_max_age_after_its_sign_in(client, visitor, db):
    visitor.signed_in("ada@example.com")
    db.execute("UPDATE sessions SET created_at = created_at - make_interval(secs => %s)", [sessions.SESSION_MAX_AGE])

    assert not signed_in_as(client)


def test_the_session_cookie_expires_with_session_max_age(app):
    assert app.permanent_session_lifetime.total_seconds() == sessions.SESSION_MAX_AGE == 14 * 24 * 3600


def test_a_sign_in_clears_the_accounts_sessions_that_have_ended(app, client, visitor, post, db):
    visitor.signed_in("ada@example.com")
    db.execute("UPDATE sessions SET seen_at = seen_at - make_interval(secs => %s)", [sessions.SESSION_IDLE])

    type(visitor)(app.test_client(), post).signin("ada@example.com", PASSWORD)

    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


@pytest.mark.parametrize("value", ["x", 1.5, None, [1], True])
def test_a_session_naming_no_row_is_no_session(app, client, visitor, value):
    visitor.signed_in("ada@example.com")
    with client.session_transaction() as session:
        session["session_id"] = value

    assert not signed_in_as(client)


def test_signing_in_again_in_the_same_browser_ends_the_previous_session(app, client, visitor, db):
    visitor.signed_in("ada@example.com")
    earlier = copy_of(app, client)

    assert visitor.signin("ada@example.com").status_code == 302

    assert not signed_in_as(earlier)
    assert signed_in_as(client)
    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_an_account_keeps_at_most_sessions_max_sessions_the_newest(app, visitor, post, db):
    visitor.signed_in("ada@example.com")
    browsers = [type(visitor)(app.test_client(), post) for _ in range(sessions.SESSIONS_MAX + 1)]
    for browser in browsers:
        assert browser.signin("ada@example.com").status_code == 302

    assert db.execute("SELECT count(*) FROM sessions").fetchone()[0] == sessions.SESSIONS_MAX
    assert not signed_in_as(visitor.client) and not signed_in_as(browsers[0].client)
    assert all(signed_in_as(browser.client) for browser in browsers[1:])
