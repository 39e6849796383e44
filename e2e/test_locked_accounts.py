"""Ten wrong passwords lock an account, and exactly one letter comes to unlock it."""

from playwright.sync_api import expect

from .guest import CONFIRMATION, PASSWORD, SIGNIN_FAILED

ADA = "ada@example.com"
BEA = "bea@example.com"
WRONG_PASSWORD = "not the password at all"
LOCK_AFTER = 10  # wrong passwords in a row that lock an account
UNLOCK = "Your guestbook account is locked"  # the subject of the unlock letter


def test_ten_wrong_passwords_lock_the_account_until_the_unlock_link_is_followed(page, guestbook, guest, inbox):
    guest.confirmed_account(ADA)

    page.goto(f"{guestbook.url}/signin")
    page.get_by_label("Email").fill(ADA)
    for _ in range(LOCK_AFTER):
        page.get_by_label("Password").fill(WRONG_PASSWORD)  # the page that refuses keeps the address filled in
        page.get_by_role("button", name="Sign in").click()
        expect(page.get_by_role("alert")).to_contain_text(SIGNIN_FAILED)
    letter = inbox.wait_for(to=ADA, subject=UNLOCK)

    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text(SIGNIN_FAILED)  # locked: even the right password fails

    # One worker sends the letters in the order they were queued, so once Bea's
    # letter, queued after all of Ada's attempts, has arrived, any second unlock
    # letter would have arrived before it.
    guest.sign_up(BEA)
    inbox.wait_for(to=BEA, subject=CONFIRMATION)
    assert len(inbox.letters(to=ADA, subject=UNLOCK)) == 1

    page.goto(letter.link)
    page.get_by_role("button", name="Unlock my account").click()
    expect(page.get_by_role("status")).to_have_text("Your account is unlocked. You can sign in now.")
    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()
