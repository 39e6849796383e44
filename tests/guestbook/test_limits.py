"""One client's sign-ins, sign-ups, confirmations and resets: CLIENT_TRIES a CLIENT_WINDOW, then a 429 saying when
to try again."""

import pytest

from guestbook import limits, proxies

from .conftest import PASSWORD

NOT_AN_ADDRESS = "not an address"  # a sign-up refused with a 422 before any hash: a cheap try, counted all the same
GUESSABLE = "1" * 40  # a new password refused for its pattern, after the costliest scoring: the link stays usable


def tries_from(visitor, address: str, count: int, **headers) -> list[int]:
    """The statuses of `count` sign-ups posted from the client `address`."""
    visitor.client.environ_base["REMOTE_ADDR"] = address
    token = visitor.csrf_token()
    return [
        visitor.client.post(
            "/signup", data={"csrf_token": token, "email": NOT_AN_ADDRESS, "password": PASSWORD}, headers=headers
        ).status_code
        for _ in range(count)
    ]


def test_client_past_the_limit_gets_a_429_that_says_when_to_try_again(visitor, db):
    assert tries_from(visitor, "192.0.2.1", limits.CLIENT_TRIES) == [422] * limits.CLIENT_TRIES

    answer = visitor.signin("ada@example.com")

    page = answer.get_data(as_text=True)
    assert answer.status_code == 429 and 'role="alert"' in page
    wait = int(answer.headers["Retry-After"])
    assert 1 <= wait <= limits.CLIENT_WINDOW and f"Try again in {wait} second" in page


def test_sign_ins_sign_ups_and_reset_requests_share_one_limit_and_past_it_nothing_is_written(visitor, db):
    tries_from(visitor, "192.0.2.1", limits.CLIENT_TRIES)

    assert visitor.signup("ada@example.com").status_code == 429
    assert visitor.signin("ada@example.com").status_code == 429
    assert visitor.submit("/resets/new", email="ada@example.com").status_code == 429
    assert db.execute("SELECT (SELECT count(*) FROM accounts), (SELECT count(*) FROM jobs)").fetchone() == (0, 0)
    assert visitor.client.get("/").status_code == 200  # reading is never limited


def test_posts_to_one_s_own_reset_link_are_counted_and_past_the_limit_set_nothing(visitor, post, db):
    visitor.confirmed_account("ada@example.com")
    visitor.submit("/resets/new", email="ada@example.com")
    link = post.only_link_to("ada@example.com")
    before = db.execute("SELECT password_digest FROM accounts").fetchone()[0]
    visitor.client.environ_base["REMOTE_ADDR"] = "192.0.2.9"  # a client with no tries yet

    refused = [visitor.submit(link, password=GUESSABLE).status_code for _ in range(limits.CLIENT_TRIES)]

    assert refused == [422] * limits.CLIENT_TRIES
    assert visitor.submit(link, password="a brand new password").status_code == 429
    assert db.execute("SELECT password_digest FROM accounts").fetchone()[0] == before


def test_another_client_is_not_held_back_and_the_limit_ends_with_its_window(visitor, db):
    tries_from(visitor, "192.0.2.1", limits.CLIENT_TRIES + 1)

    assert tries_from(visitor, "192.0.2.2", 1) == [422]
    db.execute("UPDATE client_tries SET began = began - make_interval(secs => %s)", [limits.CLIENT_WINDOW])
    assert tries_from(visitor, "192.0.2.1", 1) == [422]


def test_without_trusted_proxies_a_forwarded_for_header_changes_nothing(visitor):
    tries_from(visitor, "192.0.2.1", limits.CLIENT_TRIES)

    assert tries_from(visitor, "192.0.2.1", 1, **{"X-Forwarded-For": "198.51.100.7"}) == [429]


class TestBehindOneProxy:
    """TRUSTED_PROXIES names 10.0.0.1: one proxy in front, which adds the address it saw to X-Forwarded-For."""

    @pytest.fixture
    def settings(self, settings):
        return {**settings, "TRUSTED_PROXIES": proxies.parsed("10.0.0.1")}

    def test_client_is_the_address_the_proxy_saw(self, visitor):
        proxy = "10.0.0.1"
        tries_from(visitor, proxy, limits.CLIENT_TRIES, **{"X-Forwarded-For": "198.51.100.7"})

        assert tries_from(visitor, proxy, 1, **{"X-Forwarded-For": "198.51.100.7"}) == [429]
        assert tries_from(visitor, proxy, 1, **{"X-Forwarded-For": "198.51.100.8"}) == [422]

    def test_a_forwarded_for_that_is_not_an_address_is_counted_not_a_500(self, visitor):
        assert tries_from(visitor, "10.0.0.1", 2, **{"X-Forwarded-For": "x" * 5000}) == [422, 422]

    def test_a_client_cannot_escape_by_writing_its_own_forwarded_for(self, visitor):
        proxy = "10.0.0.1"
        tries_from(visitor, proxy, limits.CLIENT_TRIES, **{"X-Forwarded-For": "198.51.100.7"})

        # The client sent "X-Forwarded-For: 203.0.113.9"; the proxy added the address it saw.
        assert tries_from(visitor, proxy, 1, **{"X-Forwarded-For": "203.0.113.9, 198.51.100.7"}) == [429]

    def test_a_client_that_is_not_the_proxy_counts_as_itself_whatever_it_forwards(self, visitor):
        tries_from(visitor, "192.0.2.1", limits.CLIENT_TRIES, **{"X-Forwarded-For": "198.51.100.7"})

        assert tries_from(visitor, "192.0.2.1", 1, **{"X-Forwarded-For": "198.51.100.8"}) == [429]


@pytest.mark.parametrize(
    "peer, forwarded_for, client",
    [
        ("192.0.2.1", "198.51.100.7", "192.0.2.1"),  # not a proxy: its header is not read
        ("10.0.0.1", "", "10.0.0.1"),  # the proxy's own request
        ("10.0.0.1", "203.0.113.9, 198.51.100.7", "198.51.100.7"),  # the proxy's hop, not the client's own words
        ("10.0.0.1", "198.51.100.7, 10.0.0.2", "198.51.100.7"),  # through two proxies of the network
        ("10.0.0.1", "10.0.0.3, 10.0.0.2", "10.0.0.3"),  # every hop a proxy: the farthest
        ("::ffff:10.0.0.1", "198.51.100.7", "198.51.100.7"),  # the proxy on a dual-stack socket
    ],
)
def test_the_client_is_the_nearest_address_that_is_not_a_trusted_proxy(peer, forwarded_for, client):
    assert proxies.client_address(peer, forwarded_for, proxies.parsed("10.0.0.0/24")) == client


def test_ipv6_clients_of_one_network_share_its_limit(visitor):
    tries_from(visitor, "2001:db8:1:2::1", limits.CLIENT_TRIES)

    assert tries_from(visitor, "2001:db8:1:2:ffff::9", 1) == [429]
    assert tries_from(visitor, "2001:db8:1:3::1", 1) == [422]


@pytest.mark.parametrize(
    "address, counted_as",
    [
        ("192.0.2.1", "192.0.2.1"),
        ("::ffff:192.0.2.1", "192.0.2.1"),
        ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
        ("", "unknown"),
        (None, "unknown"),
        ("x" * 10_000, "unknown"),
        ("192.0.2.1\x00", "unknown"),
    ],
)
def test_client_is_its_address_or_its_ipv6_network(address, counted_as):
    assert limits.client(address) == counted_as
