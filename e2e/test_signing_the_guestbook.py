"""The whole journey of a new guest: sign up, confirm from the letter, sign in, sign the guestbook, sign out."""

from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD

ADA = "ada@example.com"
FIRST_ENTRY = "Lovely guestbook. I will be back."
SECOND_ENTRY = "Back, as promised."


def test_new_guest_confirms_from_the_letter_and_signs_the_guestbook(page, guestbook, inbox):
    page.goto(f"{guestbook.url}/signup")
    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign up").click()
    expect(page.get_by_role("status")).to_contain_text(f"A letter is on its way to {ADA}")

    letter = inbox.wait_for(to=ADA, subject=CONFIRMATION)
    page.goto(letter.link)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Confirm my account").click()
    expect(page.get_by_role("status")).to_have_text("Your account is confirmed. You can sign in now.")

    page.get_by_label("Email").fill(ADA)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("banner")).to_contain_text(ADA)

    for entry in (FIRST_ENTRY, SECOND_ENTRY):
        page.get_by_label("Your entry").fill(entry)
        page.get_by_role("button", name="Add my entry").click()
        expect(page.get_by_role("status")).to_have_text("Thank you for signing the guestbook.")
    entries = page.get_by_role("region", name="Entries").get_by_role("article")
    expect(entries).to_have_count(2)
    expect(entries.first).to_contain_text(SECOND_ENTRY)  # the newest at the top

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("You are signed out.")
    expect(page.get_by_role("banner").get_by_role("link", name="Sign in")).to_be_visible()
