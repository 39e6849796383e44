"""A forgotten password: the reset letter, a new password, a link that works once, and the letter that says so.

The reset page's title is its heading, and its form names the account for a password
manager (Chromium warns of a password form without a username field otherwise).
"""

from pathlib import Path

from playwright.sync_api import expect

from .guest import PASSWORD, SIGNIN_FAILED

ADA = "ada@example.com"
NEW_PASSWORD = "a new and better passphrase"
RESET = "Choose a new guestbook password"  # the subject of the reset letter
PASSWORD_CHANGED = "Your guestbook password was changed"  # the subject of the letter that follows a reset


def test_reset_link_sets_a_new_password_once(page, guestbook, guest, inbox, output_path):
    warnings = []
    page.on(
        "console",
        lambda message: "Password forms should have" in message.text and warnings.append(page.url + " " + message.text),
    )
    guest.confirmed_account(ADA)

    page.goto(f"{guestbook.url}/signin")
    page.get_by_role("link", name="Forgot your password?").click()
    expect(page).to_have_title("Forgot your password? · Guestbook")
    expect(page.get_by_role("heading", level=1)).to_have_text("Forgot your password?")
    page.get_by_label("Email").fill(ADA)
    page.get_by_role("button", name="Send reset link").click()
    expect(page.get_by_role("status")).to_contain_text(f"If {ADA} has an account, a letter")

    letter = inbox.wait_for(to=ADA, subject=RESET)
    page.goto(letter.link)
    page.get_by_label("New password").fill(NEW_PASSWORD)
    page.screenshot(path=Path(output_path) / "the-new-password-form.png")
    assert warnings == []
    page.get_by_role("button", name="Set new password").click()
    expect(page.get_by_role("status")).to_contain_text("Your password is changed")

    guest.sign_in(ADA, PASSWORD)
    expect(page.get_by_role("alert")).to_contain_text(SIGNIN_FAILED)
    guest.sign_in(ADA, NEW_PASSWORD)
    expect(page.get_by_role("button", name="Sign out")).to_be_visible()

    used_again = page.goto(letter.link)
    assert used_again.status == 400
    expect(page.get_by_role("alert")).to_contain_text("This reset link is not valid")

    inbox.wait_for(to=ADA, subject=PASSWORD_CHANGED)
