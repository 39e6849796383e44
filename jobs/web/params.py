"""What the dashboard accepts from a query string or a form: ids, page sizes, queue names.

Each reader answers the value, or raises Refused with a 4xx status and words that
say which field was wrong, so a bad address or form never reaches the database.
"""

from .request import Refused

BIGINT_MAX = 2**63 - 1  # the largest id the jobs table can hold
PAGE_MAX = 500  # jobs or batches a page of the dashboard shows at most


def whole(text: str, what: str, status: int = 400, *, largest: int = BIGINT_MAX) -> int:
    """`text` as a whole number from 1 to `largest`, or a refusal naming `what`.

    Its digits are counted before int() reads them: past 4,300 digits int() raises
    ValueError instead of answering, and no number that long is in range anyway.
    """
    if not text.isascii() or not text.isdigit() or len(text) > len(str(largest)) or not 1 <= int(text) <= largest:
        raise Refused(status, f"{what} must be a whole number from 1 to {largest}, not {text[:40]!r}")
    return int(text)


def optional(values: dict[str, list[str]], name: str, what: str, *, largest: int = BIGINT_MAX) -> int | None:
    """The whole number the field `name` gives, or None when it is missing or empty."""
    text = values.get(name, [""])[0]
    return whole(text, what, largest=largest) if text else None


def ids(form: dict[str, list[str]]) -> list[int]:
    """The job ids a form names: the ticked `id` boxes, or every `shown` id when `all_shown` is set."""
    chosen = form.get("shown" if form.get("all_shown") else "id", [])
    if not chosen:
        raise Refused(400, "choose at least one job")
    return [whole(text, "a job's id") for text in dict.fromkeys(chosen)]


def queue(form: dict[str, list[str]]) -> str:
    """The queue a form names."""
    name = form.get("queue", [""])[0]
    if not name.strip() or "\x00" in name or len(name) > 200:
        raise Refused(400, "name a queue (up to 200 characters)")
    return name


TEXT_MAX = 200  # characters of a queue's or a job's name, or of a searched value, the lists' filters take


def text(values: dict[str, list[str]], name: str, what: str) -> str | None:
    """The text the field `name` gives, or None when it is missing or empty; refused when too long or with a NUL."""
    given = values.get(name, [""])[0]
    if not given:
        return None
    if "\x00" in given or len(given) > TEXT_MAX:
        raise Refused(400, f"{what} takes up to {TEXT_MAX} characters, and no NUL")
    return given


def keyset(values: dict[str, list[str]], count: int) -> tuple[int, ...] | None:
    """The page's keyset: `after`, `count` whole numbers (a priority may be negative) joined by commas; None
    when missing."""
    given = values.get("after", [""])[0]
    if not given:
        return None
    parts = given.split(",")
    if len(parts) != count or not all(
        part.removeprefix("-").isascii() and part.removeprefix("-").isdigit() and len(part) <= len(str(-BIGINT_MAX))
        for part in parts
    ):
        raise Refused(400, f"after must be {count} whole number(s) joined by commas, not {given[:40]!r}")
    numbers = tuple(int(part) for part in parts)
    if not all(-BIGINT_MAX - 1 <= number <= BIGINT_MAX for number in numbers):
        raise Refused(400, f"after holds a number out of range: {given[:40]!r}")
    return numbers
