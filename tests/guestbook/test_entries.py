"""The entries: newest first, a page at a time, signed by confirmed accounts only."""

from guestbook import entries


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


def test_entries_show_newest_first_a_page_at_a_time(client, visitor, db):
    visitor.signed_in("ada@example.com")
    for n in range(entries.PER_PAGE + 1):
        db.execute("INSERT INTO entries (account_id, body) VALUES (1, %s)", [f"entry {n:02}"])

    first = client.get("/").get_data(as_text=True)
    second = client.get("/?page=2").get_data(as_text=True)

    newest, oldest = f"entry {entries.PER_PAGE:02}", "entry 00"
    assert newest in first and oldest not in first and "Older entries" in first
    assert oldest in second and newest not in second and "Newer entries" in second
    assert first.index(newest) < first.index(f"entry {entries.PER_PAGE - 1:02}")


def test_entry_text_is_escaped(client, visitor):
    visitor.signed_in("ada@example.com")

    visitor.submit("/entries", body="<script>alert(1)</script>")

    assert "&lt;script&gt;" in client.get("/").get_data(as_text=True)
