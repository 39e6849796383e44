"""On a desktop's screen, the header of a signed-in person stays one line: its buttons sit beside the title, and
the address is whole on one line (a screenshot stays in the spec's folder under test-results/)."""

from pathlib import Path

from playwright.sync_api import expect

from .guest import PASSWORD

DESKTOP = {"width": 1280, "height": 800}  # CSS pixels of a common laptop's window
ADA = "ada.lovelace@example.com"  # an address of a usual length


def test_the_signed_in_header_keeps_sign_out_and_end_every_session_beside_the_title(page, guest, output_path):
    page.set_viewport_size(DESKTOP)
    guest.confirmed_account(ADA, PASSWORD)
    guest.sign_in(ADA, PASSWORD)
    page.goto(f"{guest.guestbook.keyed_url}/")  # as `make run`'s person sees it: with Outbox and Jobs too
    expect(page.get_by_role("button", name="End every session")).to_be_visible()
    page.wait_for_load_state()  # the stylesheet too
    assert page.evaluate("getComputedStyle(document.body).maxWidth") == "640px"  # the stylesheet applied
    title = page.get_by_role("link", name="Guestbook", exact=True).bounding_box()
    for name in ("Sign out", "End every session"):
        button = page.get_by_role("button", name=name).bounding_box()
        assert button["y"] < title["y"] + title["height"] and title["y"] < button["y"] + button["height"], name
    address = page.get_by_role("link", name=ADA)
    # A range over the link's text has one box per line it takes.
    lines = address.evaluate(
        "link => { const text = document.createRange(); text.selectNodeContents(link); "
        "return text.getClientRects().length; }"
    )
    assert lines == 1, f"the address takes {lines} lines"
    page.screenshot(path=Path(output_path) / "signed-in-on-a-desktop.png")
