"""Letters: what `message` makes, and every letter `refusal` refuses."""

import dataclasses

import pytest

import mail

GOOD = mail.message("guestbook@example.com", "ada@example.com", "Hello", "A body.\n")


def with_(**fields) -> mail.Letter:
    """The good letter with some fields replaced."""
    return dataclasses.replace(GOOD, **fields)


def test_good_letter_is_not_refused():
    assert mail.refusal(GOOD) == ""


def test_every_letter_gets_a_message_id_and_a_date():
    other = mail.message("guestbook@example.com", "ada@example.com", "Hello", "A body.\n")

    assert GOOD.message_id.startswith("<") and GOOD.message_id.endswith("@example.com>")
    assert GOOD.message_id != other.message_id
    assert GOOD.date.endswith("+0000")


REFUSED = [  # the letter, and words its refusal says
    (with_(subject="Hello\r\nBcc: everyone@example.com"), "subject holds a line break"),
    (with_(subject="Hello\nthere"), "subject holds a line break"),
    (with_(subject="nul\x00"), "subject holds a line break or a NUL"),
    (with_(to="ada@example.com\nBcc: x@example.com"), "to holds a line break"),
    (with_(sender="a@example.com\r"), "sender holds a line break"),
    (with_(to=""), "to is not an address"),
    (with_(to="ada"), "to is not an address"),
    (with_(to="ada@"), "to is not an address"),
    (with_(to="@example.com"), "to is not an address"),
    (with_(to="ada@@example.com"), "to is not an address"),
    (with_(to="Ada <ada@example.com>"), "to is not an address"),
    (with_(to="ada @example.com"), "to is not an address"),
    (with_(to="a@b.com, c@d.com"), "to is not an address"),
    (with_(to="a" * 250 + "@example.com"), "to is not an address"),
    (with_(sender="nobody"), "sender is not an address"),
    (with_(sender="Guestbook <nobody>"), "sender is not an address"),
    (with_(sender="Guestbook <a@example.com>, b@example.com"), "sender is not an address"),
    (with_(sender="Guestbook <=?utf-8?q?a?=@example.com>"), "sender is not an address"),
    (with_(to="=?utf-8?q?victim?=@=?utf-8?q?evil=2Eexample?="), "to is not an address"),  # read as victim@evil.example
    (with_(to="=?utf-8?q?ada=0D=0Abcc=3Dall?=@example.com"), "to is not an address"),  # an encoded CR LF
    (with_(to="ada\x01@example.com"), "to is not an address"),
    (with_(to="ada\x7f@example.com"), "to is not an address"),
    (with_(to="ada\t@example.com"), "to is not an address"),
    (with_(to="zoé@example.com"), "to is not an address"),
    (with_(to="ada@exämple.com"), "to is not an address"),
    (with_(to='"ada"@example.com'), "to is not an address"),  # read back without its quotes
    (with_(to="a..b@example.com"), "to is not an address"),
    (with_(to="ada@example.com."), "to is not an address"),
    (with_(subject=""), "has no subject"),
    (with_(subject="   "), "has no subject"),
    (with_(body="x" * (mail.BODY_MAX + 1)), "more than BODY_MAX"),
    (with_(body="nul \x00 inside"), "body is not text without NUL"),
    (with_(to=None), "to is not text"),
    (with_(expires=1), "expired at 1970-01-01T00:00:01+00:00"),
    (with_(expires="tomorrow"), "expires is not whole seconds"),
]


@pytest.mark.parametrize("letter, words", REFUSED)
def test_refusal_says_why_a_letter_is_refused(letter, words):
    assert words in mail.refusal(letter)


@pytest.mark.parametrize(
    "address", ["ada@example.com", "a.b+tag@mail.example.org", "o'brien@example.ie", "x_y-z@a-b.example"]
)
def test_plain_addresses_are_addresses_and_read_back_unchanged(address):
    assert mail.is_address(address)
    assert mail.refusal(with_(to=address)) == ""


def test_body_of_exactly_body_max_characters_is_fine():
    assert mail.refusal(with_(body="x" * mail.BODY_MAX)) == ""


def test_url_for_starts_from_base_url(monkeypatch):
    monkeypatch.setenv("BASE_URL", "https://guestbook.example/")

    assert mail.url_for("/confirm/abc") == "https://guestbook.example/confirm/abc"


def test_url_for_without_base_url_points_to_the_local_server(monkeypatch):
    monkeypatch.delenv("BASE_URL", raising=False)

    assert mail.url_for("/signin") == "http://127.0.0.1:5000/signin"


def test_url_for_refuses_a_path_that_is_not_absolute():
    with pytest.raises(ValueError, match="starts with '/'"):
        mail.url_for("evil.example/x")
