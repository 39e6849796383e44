"""The claim a sign-up writes on its name: the same whether or not its address had an account, held CLAIM_MAX_AGE.

A name is held by a confirmed account's key or by a live claim, so the answer a sign-up
gets about its name is a function of sign-ups (anyone's, its own sender's included),
never of whether an earlier sign-up's address was taken.
"""

import pytest

from guestbook import names

from .conftest import PASSWORD
from .test_bad_input import assert_refused


def another(visitor):
    """A visitor of its own: a browser with no session, as a prober's next one."""
    return type(visitor)(visitor.client.application.test_client(), visitor.post)


@pytest.mark.parametrize("had_account", [True, False])
def test_a_name_given_with_a_sign_up_is_refused_to_the_next_whether_or_not_the_address_had_an_account(
    visitor, post, db, had_account
):
    if had_account:
        visitor.confirmed_account("ada@example.com")
    prober = another(visitor)
    prober.submit("/signup", email="ada@example.com", password="the prober's password", name="Probe")
    post.delivered()

    second = prober.submit("/signup", email="eve@example.com", password="the prober's password", name="Probe")

    assert_refused(second, 422, names.TAKEN)
    assert db.execute("SELECT count(*) FROM accounts WHERE email = 'eve@example.com'").fetchone()[0] == 0


def test_a_sign_up_of_a_taken_address_leaves_its_account_s_name_as_it_was(client, visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    another(visitor).submit("/signup", email="ada@example.com", password="the prober's password", name="Probe")

    assert db.execute("SELECT display_name, name_key FROM accounts").fetchone() == ("", None)


def test_a_claimed_name_is_free_again_once_its_claim_ends(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    another(visitor).submit("/signup", email="ada@example.com", password="the prober's password", name="Probe")
    post.delivered()  # "you already have an account"
    db.execute(
        "UPDATE name_claims SET held_until = held_until - make_interval(secs => %s)", [names.CLAIM_MAX_AGE]
    )  # CLAIM_MAX_AGE later

    again = another(visitor).submit("/signup", email="bo@example.com", password=PASSWORD, name="Probe")

    assert again.status_code == 302
    visitor.submit(post.only_link_to("bo@example.com"), password=PASSWORD)
    assert db.execute("SELECT display_name FROM accounts WHERE email = 'bo@example.com'").fetchone()[0] == "Probe"


def test_an_account_confirmed_after_its_claim_ended_and_was_taken_is_confirmed_without_the_name(visitor, post, db):
    visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name="Ada")
    link = post.only_link_to("ada@example.com")
    db.execute("UPDATE name_claims SET held_until = now() - interval '1 second'")  # Ada's claim ended unconfirmed
    bo = another(visitor)
    bo.submit("/signup", email="bo@example.com", password=PASSWORD, name="Ada")
    bo.submit(post.only_link_to("bo@example.com"), password=PASSWORD)

    answer = visitor.submit(link, password=PASSWORD)

    assert answer.status_code == 302
    rows = db.execute("SELECT email, display_name FROM accounts ORDER BY id").fetchall()
    assert rows == [("ada@example.com", ""), ("bo@example.com", "Ada")]


def test_an_account_confirmed_after_its_claim_ended_is_confirmed_without_the_name_and_told_so(visitor, post, db):
    visitor.submit("/signup", email="ada@example.com", password=PASSWORD, name="Ada")
    link = post.only_link_to("ada@example.com")
    db.execute("UPDATE name_claims SET held_until = now() - interval '1 second'")

    assert visitor.submit(link, password=PASSWORD).status_code == 302

    assert db.execute("SELECT display_name, name_key FROM accounts").fetchone() == ("", None)
    assert names.CLAIM_ENDED in visitor.client.get("/signin").get_data(as_text=True)
    assert db.execute("SELECT count(*) FROM name_claims").fetchone()[0] == 0
