"""What a posted form must be before a view reads it, and how a view reads one field.

Every request that may act (any method but the safe ones, GET, HEAD and OPTIONS,
which only ever show a page) is refused with a 4xx page before its view runs,
unless it is an ordinary form (application/x-www-form-urlencoded) in UTF-8. A view
then reads each field with `field`, which refuses a missing, overlong or NUL-holding
value. So bad input never reaches SQL, where it would end in a 500.
"""

from urllib.parse import unquote_to_bytes

from flask import abort, request

CONTENT_MAX = 64 * 1024  # bytes a request body may hold (Flask's MAX_CONTENT_LENGTH answers 413 past it)
EMAIL_MAX = 254  # characters of an address field (mail.ADDRESS_MAX)
FORM_TYPE = "application/x-www-form-urlencoded"
# Methods that only read. Views act on POST alone; these show their page, whatever body they carry.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def init_app(app) -> None:
    """Checks every POST's encoding before its view, and caps request bodies at CONTENT_MAX."""
    app.config["MAX_CONTENT_LENGTH"] = CONTENT_MAX
    app.before_request(checked_encoding)


def checked_encoding() -> None:
    """Refuses a POST that is not an ordinary form, or whose fields are not UTF-8.

    Werkzeug would read invalid UTF-8 without complaint (as an empty form, or as
    literal "%FF" text), so the raw body is checked here; a percent-decoded body is
    valid UTF-8 exactly when each of its fields is.
    """
    if not acting():
        return
    if request.mimetype != FORM_TYPE:
        abort(415, f"This site takes forms sent as {FORM_TYPE} only.")
    try:
        unquote_to_bytes(request.get_data(cache=True)).decode("utf-8")
    except UnicodeDecodeError:
        abort(400, "The form held text that is not valid UTF-8. Nothing was saved.")


def acting() -> bool:
    """Whether the request may change something: not a safe method, and on a route that takes its method.

    A method no route takes (a PUT, say) is left to routing, which answers 405.
    """
    return request.method not in SAFE_METHODS and request.routing_exception is None


def field(name: str, limit: int) -> str:
    """The posted field `name`, refused with a 400 page when missing, longer than `limit` or holding a NUL."""
    value = request.form.get(name)
    if value is None:
        abort(400, f"The form has no {name} field. Nothing was saved.")
    if len(value) > limit:
        abort(400, f"The {name} field holds more than {limit} characters. Nothing was saved.")
    if "\x00" in value:
        abort(400, f"The {name} field holds a NUL character. Nothing was saved.")
    return value


def email_field() -> str:
    """The posted `email` field, trimmed and lower-cased, as accounts keep addresses."""
    return field("email", EMAIL_MAX).strip().lower()
