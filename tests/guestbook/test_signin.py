"""Sign-in, sign-out and the lockout: one answer for every failure, and one unlock letter per lock."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from guestbook import accounts, auth

from .conftest import PASSWORD

WRONG = "not the right password"


def failure_page(answer) -> tuple[int, str]:
    """What a failed sign-in shows: its status and its message."""
    text = answer.get_data(as_text=True)
    return answer.status_code, auth.SIGNIN_FAILED if auth.SIGNIN_FAILED in text else text


def test_signin_starts_a_new_session(client, visitor):
    visitor.confirmed_account("ada@example.com")
    with client.session_transaction() as session:
        session["left over"] = "from before"

    visitor.signin("ada@example.com")

    with client.session_transaction() as session:
        assert "left over" not in session and session["account_id"] == 1


def test_signed_in_pages_are_never_cached(client, visitor):
    visitor.signed_in("ada@example.com")

    assert client.get("/").headers["Cache-Control"] == "no-store"


def test_session_cookie_is_httponly_samesite_lax_and_secure_outside_development(client, visitor):
    visitor.confirmed_account("ada@example.com")

    cookie = visitor.signin("ada@example.com").headers["Set-Cookie"]

    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Secure" in cookie


def test_signout_ends_the_session(client, visitor):
    visitor.signed_in("ada@example.com")

    visitor.signout()

    assert "ada@example.com" not in client.get("/").get_data(as_text=True)


def test_unknown_address_wrong_password_and_locked_account_fail_alike(visitor, db):
    visitor.confirmed_account("ada@example.com")
    unknown = failure_page(visitor.signin("nobody@example.com"))
    wrong = failure_page(visitor.signin("ada@example.com", WRONG))
    db.execute("UPDATE accounts SET locked_at = now()")
    locked = failure_page(visitor.signin("ada@example.com"))

    assert unknown == wrong == locked == (401, auth.SIGNIN_FAILED)


def test_unknown_address_is_checked_against_a_dummy_hash(visitor, monkeypatch):
    checked = []
    monkeypatch.setattr("guestbook.passwords.check_password_hash", lambda digest, pw: checked.append(digest))

    visitor.signin("nobody@example.com")

    assert len(checked) == 1 and checked[0].startswith("scrypt:")


def test_the_right_password_of_an_unconfirmed_account_gets_the_answer_of_a_wrong_one(client, visitor, post):
    visitor.signup("ada@example.com")
    post.delivered()

    right = visitor.signin("ada@example.com")
    right_page = client.get("/signin").get_data(as_text=True)
    wrong = visitor.signin("ada@example.com", WRONG)
    wrong_page = client.get("/signin").get_data(as_text=True)

    assert failure_page(right) == failure_page(wrong) == (401, auth.SIGNIN_FAILED)
    assert right.get_data() == wrong.get_data() and right_page == wrong_page
    with client.session_transaction() as session:
        assert "account_id" not in session and "session_id" not in session


def test_the_right_password_of_an_unconfirmed_account_sends_a_new_letter_silently(visitor, post):
    visitor.signup("ada@example.com")
    post.delivered()
    visitor.signin("ada@example.com", WRONG)
    assert post.queued() == []  # a wrong password sends nothing

    visitor.signin("ada@example.com")

    assert post.only_link_to("ada@example.com").startswith("/confirm/")


def test_signing_in_to_an_unconfirmed_account_again_and_again_sends_one_letter_per_confirm_every(visitor, post, db):
    visitor.signup("ada@example.com")
    post.delivered()

    answers = [visitor.signin("ada@example.com").status_code for _ in range(20)]

    assert answers == [401] * 20
    assert len(post.delivered()) == 1
    db.execute(
        "UPDATE accounts SET confirmation_again_at = confirmation_again_at - make_interval(secs => %s)",
        [accounts.CONFIRM_EVERY],
    )
    visitor.signin("ada@example.com")
    assert post.only_link_to("ada@example.com").startswith("/confirm/")


def test_ten_wrong_passwords_lock_the_account_and_queue_one_unlock_letter(visitor, post):
    visitor.confirmed_account("ada@example.com")

    for _ in range(accounts.LOCK_AFTER + 3):
        visitor.signin("ada@example.com", WRONG)

    (letter,) = post.delivered()
    assert letter["Subject"] == "Your guestbook account is locked"
    assert post.link(letter).startswith("/unlocks/")


def test_an_unlock_letter_whose_lock_ended_while_it_waited_is_never_sent(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    db.execute("UPDATE accounts SET locked_at = locked_at - make_interval(secs => %s)", [accounts.LOCK_DURATION])

    assert post.delivered() == []  # its link would not have worked
    assert post.queued() == []


def test_nine_wrong_passwords_then_the_right_one_sign_in(visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER - 1):
        visitor.signin("ada@example.com", WRONG)

    assert visitor.signin("ada@example.com").status_code == 302
    assert post.queued() == []


def test_locked_account_refuses_even_the_right_password(visitor):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)

    assert failure_page(visitor.signin("ada@example.com")) == (401, auth.SIGNIN_FAILED)


def test_unlock_link_shows_a_button_and_the_post_unlocks(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    link = post.only_link_to("ada@example.com")

    assert "Unlock my account" in client.get(link).get_data(as_text=True)
    assert visitor.signin("ada@example.com").status_code == 401
    assert visitor.submit(link).status_code == 302
    assert visitor.signin("ada@example.com").status_code == 302


def test_unlock_link_dies_once_used(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    link = post.only_link_to("ada@example.com")
    visitor.submit(link)

    assert client.get(link).status_code == 400
    assert visitor.submit(link).status_code == 400


def test_unlock_link_of_an_earlier_lock_does_not_end_a_new_one(client, visitor, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    first = post.only_link_to("ada@example.com")
    visitor.submit(first)
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    second = post.only_link_to("ada@example.com")

    assert visitor.submit(first).status_code == 400
    assert visitor.signin("ada@example.com").status_code == 401
    assert visitor.submit(second).status_code == 302


def test_lock_ends_by_itself_after_an_hour(visitor, db):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    db.execute("UPDATE accounts SET locked_at = locked_at - make_interval(secs => %s)", [accounts.LOCK_DURATION])

    assert visitor.signin("ada@example.com").status_code == 302


def test_after_a_lock_ends_by_itself_the_count_starts_again(visitor, db, post):
    visitor.confirmed_account("ada@example.com")
    for _ in range(accounts.LOCK_AFTER):
        visitor.signin("ada@example.com", WRONG)
    post.delivered()
    db.execute("UPDATE accounts SET locked_at = locked_at - make_interval(secs => %s)", [accounts.LOCK_DURATION])

    visitor.signin("ada@example.com", WRONG)

    assert db.execute("SELECT failed_signins, locked_at FROM accounts").fetchone() == (1, None)
    assert post.queued() == []


@pytest.mark.parametrize("email", ["ADA@example.com", "  ada@example.com  "])
def test_address_is_matched_without_case_or_surrounding_spaces(visitor, email):
    visitor.confirmed_account("ada@example.com")

    assert visitor.signin(email, PASSWORD).status_code == 302


def test_wrong_passwords_at_once_past_the_threshold_queue_exactly_one_unlock_letter(app, visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    db.execute("UPDATE accounts SET failed_signins = %s", [accounts.LOCK_AFTER - 3])
    visitors = [type(visitor)(app.test_client(), post) for _ in range(8)]

    with ThreadPoolExecutor(len(visitors)) as pool:
        answers = list(pool.map(lambda v: v.signin("ada@example.com", WRONG).status_code, visitors))

    assert answers == [401] * len(visitors)
    assert [(letter["kind"], letter["to"]) for letter in post.queued()] == [("unlock", "ada@example.com")]
