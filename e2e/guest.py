"""The steps a person takes at the guestbook in the browser, finding fields by their labels and buttons by their names.

A spec about one of these steps spells it out itself; the others take these to get
there, as in `guest.confirmed_account(ADA)` and then `guest.sign_in(ADA)`. The
words below are the guestbook's, as its pages and letters show them.
"""

from playwright.sync_api import Page, expect

PASSWORD = "correct horse battery staple"  # a password the guestbook takes (12 to 128 characters, not a common one,
# not holding the address)
CONFIRMATION = "Confirm your guestbook account"  # the subject of the letter a sign-up sends
SIGNIN_FAILED = "Sign-in failed"  # how the one answer to every refused sign-in begins


class Guest:
    """A person at `guestbook` in the browser `page`, whose letters arrive in `inbox`."""

    def __init__(self, page: Page, guestbook, inbox):
        self.page, self.guestbook, self.inbox = page, guestbook, inbox

    def sign_up(self, email: str, password: str = PASSWORD) -> None:
        """Fills in the sign-up form, and sees the answer that a letter is on its way."""
        self.page.goto(f"{self.guestbook.url}/signup")
        self.page.get_by_label("Email").fill(email)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign up").click()
        expect(self.page.get_by_role("status")).to_contain_text(f"A letter is on its way to {email}")

    def confirm(self, email: str, password: str = PASSWORD) -> None:
        """Opens the link in the confirmation letter to `email`, gives the sign-up's password and presses the button."""
        letter = self.inbox.wait_for(to=email, subject=CONFIRMATION)
        self.page.goto(letter.link)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Confirm my account").click()
        expect(self.page.get_by_role("status")).to_have_text("Your account is confirmed. You can sign in now.")

    def confirmed_account(self, email: str, password: str = PASSWORD) -> None:
        """Signs up, and confirms the account from its letter."""
        self.sign_up(email, password)
        self.confirm(email, password)

    def sign_in(self, email: str, password: str = PASSWORD) -> None:
        """Fills in the sign-in form and sends it; the spec looks at the answer."""
        self.page.goto(f"{self.guestbook.url}/signin")
        self.page.get_by_label("Email").fill(email)
        self.page.get_by_label("Password").fill(password)
        self.page.get_by_role("button", name="Sign in").click()
