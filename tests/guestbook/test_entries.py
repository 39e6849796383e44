"""The entries: newest first, a page at a time by keyset, signed by confirmed accounts only, and not too often."""

import re
from concurrent.futures import ThreadPoolExecutor

from guestbook import entries
from guestbook.db import queries


def test_signed_in_account_signs_and_the_entry_shows(client, visitor):
    visitor.signed_in("ada@example.com")

    answer = visitor.submit("/entries", body="Lovely place!")

    assert answer.status_code == 302
    assert "Lovely place!" in client.get("/").get_data(as_text=True)


def test_visitor_who_is_not_signed_in_sees_no_form_and_cannot_sign(client, visitor, db):
    page = client.get("/").get_data(as_text=True)

    assert 'name="body"' not in page
    assert visitor.submit("/entries", body="Hello").location == "/signin"
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == 0


def older_link(page: str) -> str | None:
    """The path of a page's "Older entries" link, or None."""
    found = re.search(r'<a href="([^"]+)">Older entries</a>', page)
    return found.group(1).replace("&amp;", "&") if found else None


def test_entries_show_newest_first_a_page_at_a_time(client, visitor, db):
    visitor.signed_in("ada@example.com")
    for n in range(2 * entries.PER_PAGE + 1):
        db.execute("INSERT INTO entries (account_id, body) VALUES (1, %s)", [f"entry {n:02}"])

    first = client.get("/").get_data(as_text=True)
    second = client.get(older_link(first)).get_data(as_text=True)
    third = client.get(older_link(second)).get_data(as_text=True)

    newest, oldest = f"entry {2 * entries.PER_PAGE:02}", "entry 00"
    assert older_link(first) == f"/?before={entries.PER_PAGE + 2}"  # the id of the oldest entry shown
    assert newest in first and oldest not in first and "Newest entries" not in first
    assert first.index(newest) < first.index(f"entry {2 * entries.PER_PAGE - 1:02}")
    shown = [re.findall(r"entry \d\d", page) for page in (first, second, third)]
    assert [len(page) for page in shown] == [entries.PER_PAGE, entries.PER_PAGE, 1]
    assert sorted(sum(shown, [])) == [f"entry {n:02}" for n in range(2 * entries.PER_PAGE + 1)]  # each once
    assert older_link(third) is None and "Newest entries" in third


def test_a_deep_page_reads_no_more_rows_than_the_first(client, visitor, db):
    visitor.signed_in("ada@example.com")
    db.execute("INSERT INTO entries (account_id, body) SELECT 1, 'entry ' || n FROM generate_series(1, 5000) n")
    db.execute("ANALYZE entries")

    def rows_read(before: int) -> int:
        (plan,) = db.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + queries["entries_page"],
            {"before": before, "limit": entries.PER_PAGE + 1},
        ).fetchone()[0]
        return max(node["Actual Rows"] for node in nodes(plan["Plan"]) if node.get("Relation Name") == "entries")

    assert rows_read(entries.NEWEST) == rows_read(100) == entries.PER_PAGE + 1


def nodes(plan: dict):
    """Every node of a plan, depth first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from nodes(child)


def test_an_account_posting_past_entries_per_window_gets_a_429_and_writes_nothing(client, visitor, db):
    visitor.signed_in("ada@example.com")
    answers = [visitor.submit("/entries", body=f"entry {n}").status_code for n in range(entries.ENTRIES_PER_WINDOW)]

    refused = visitor.submit("/entries", body="one too many")

    assert answers == [302] * entries.ENTRIES_PER_WINDOW
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= entries.ENTRY_WINDOW
    assert "Try again in" in refused.get_data(as_text=True)
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == entries.ENTRIES_PER_WINDOW
    db.execute("UPDATE accounts SET entries_began = entries_began - make_interval(secs => %s)", [entries.ENTRY_WINDOW])
    assert visitor.submit("/entries", body="a new window").status_code == 302


def test_another_account_is_not_held_back_by_one_past_its_limit(app, visitor, post, db):
    visitor.signed_in("ada@example.com")
    for n in range(entries.ENTRIES_PER_WINDOW + 1):
        visitor.submit("/entries", body=f"entry {n}")
    bo = type(visitor)(app.test_client(), post)
    bo.signed_in("bo@example.com")

    assert bo.submit("/entries", body="hello").status_code == 302


def test_entry_text_is_escaped(client, visitor):
    visitor.signed_in("ada@example.com")

    visitor.submit("/entries", body="<script>alert(1)</script>")

    assert "&lt;script&gt;" in client.get("/").get_data(as_text=True)


def test_posts_sent_at_once_write_no_more_than_entries_per_window(app, client, visitor, db):
    visitor.signed_in("ada@example.com")
    token, cookie = visitor.csrf_token(), client.get_cookie("session").value
    browsers = [app.test_client() for _ in range(2 * entries.ENTRIES_PER_WINDOW)]  # one tab each, one cookie
    for browser in browsers:
        browser.set_cookie("session", cookie)

    with ThreadPoolExecutor(len(browsers)) as pool:
        answers = list(
            pool.map(
                lambda browser: browser.post("/entries", data={"csrf_token": token, "body": "at once"}).status_code,
                browsers,
            )
        )

    assert sorted(answers) == [302] * entries.ENTRIES_PER_WINDOW + [429] * entries.ENTRIES_PER_WINDOW
    assert db.execute("SELECT count(*) FROM entries").fetchone()[0] == entries.ENTRIES_PER_WINDOW
