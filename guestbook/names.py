"""The name an account signs its entries with: chosen at sign-up, optional, at most NAME_MAX characters.

An account without one signs as ANONYMOUS. A name is shown to every visitor, so it
must be printable text (no control, formatting or bidirectional-override characters
that would disguise it or the page around it); the templates escape it like any text.
"""

from flask import request

from .forms import field

NAME_MAX = 50  # characters a display name may hold
ANONYMOUS = "a guest"  # how the entries of an account without a name are signed


def posted() -> str:
    """The posted `name` field, trimmed; "" when the form has none (the name is optional)."""
    return field("name", NAME_MAX).strip() if "name" in request.form else ""


def problem(name: str) -> str:
    """Why `name` cannot be chosen, as a sentence; "" when it can."""
    if not name.isprintable():
        return "Choose a name of printable characters only: letters, digits, spaces and punctuation."
    return ""
