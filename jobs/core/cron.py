"""Cron expressions: the five standard fields parsed, and the moments they name, in UTC or a zone.

A schedule (schedules.py) asks `next_after` for the moment after a tick and `latest_at`
for the last moment due by now. Clock changes, in a zone that has them:
  skipped hour   a wall time the clocks jump over fires once, at the first moment after
                 the jump (02:30 on the night Berlin goes from 02:00 to 03:00 fires at 03:00);
  repeated hour  a wall time the clocks show twice fires once, the first time they show it.
So an expression in a zone names wall times, each at most once a day. For a job every
N minutes whatever the clocks say, keep the default UTC, or use `every=`.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

FIELDS = (  # name, lowest and highest value, in the expression's order
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
MONTHS = {name: n for n, name in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split(), 1)}
WEEKDAYS = {name: n for n, name in enumerate("sun mon tue wed thu fri sat".split())}
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
LONGEST_MONTH = {2: 29, 4: 30, 6: 30, 9: 30, 11: 30}  # days, where a month has fewer than 31
SEARCH_DAYS = 9 * 366  # days a search looks through: a 29 February can be 8 years away (2096 to 2104)
DST_MARGIN = timedelta(hours=3)  # more than any zone's clock ever moved at once
MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the values each field allows, and whether its day fields were restricted."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 is Sunday
    any_day: bool  # day of month or day of week starts with "*": a day must match both (see `matches`)


def parsed(expression: str) -> Cron:
    """The Cron for `expression`, or a ValueError naming the field that is wrong and why."""
    if not isinstance(expression, str):
        raise TypeError(f"a cron expression is a string, not {type(expression).__name__}")
    text = expression.strip()
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ValueError(f"cron expression {expression!r}: unknown alias; the aliases are {', '.join(ALIASES)}")
        text = ALIASES[text.lower()]
    fields = text.split()
    if len(fields) != len(FIELDS):
        raise ValueError(
            f"cron expression {expression!r}: expected five fields (minute, hour, day of month, "
            f"month, day of week) or an alias, got {len(fields)}"
        )
    values = []
    for field, (name, low, high) in zip(fields, FIELDS, strict=True):  # as many: counted above
        names = MONTHS if name == "month" else WEEKDAYS if name == "day of week" else {}
        try:
            values.append(allowed(field, low, high, names))
        except ValueError as error:
            raise ValueError(f"cron expression {expression!r}: the {name} field {field!r}: {error}") from None
    minutes, hours, days, months, weekdays = values
    if not any(min(days) <= LONGEST_MONTH.get(month, 31) for month in months) and fields[4].startswith("*"):
        raise ValueError(
            f"cron expression {expression!r}: the day of month field {fields[2]!r}: no month it names has such a day"
        )
    any_day = fields[2].startswith("*") or fields[4].startswith("*")
    return Cron(
        expression,
        tuple(sorted(minutes)),
        tuple(sorted(hours)),
        frozenset(days),
        frozenset(months),
        frozenset(day % 7 for day in weekdays),
        any_day,
    )  # 7 is Sunday too


def allowed(field: str, low: int, high: int, names: dict[str, int]) -> set[int]:
    """The values a field allows: a list of *, N, N-M, each with an optional /STEP."""
    values: set[int] = set()
    for part in field.split(","):
        span, slash, step_text = part.partition("/")
        step = number(step_text, 1, high - low + 1, {}) if slash else 1
        if span == "*":
            first, last = low, high
        elif "-" in span:
            first_text, _, last_text = span.partition("-")
            first, last = number(first_text, low, high, names), number(last_text, low, high, names)
            if first > last:
                raise ValueError(f"the range {span!r} runs backwards")
        else:
            first = number(span, low, high, names)
            last = high if slash else first  # N/STEP is N, N+STEP, ... up to the highest value
        values.update(range(first, last + 1, step))
    return values


def number(text: str, low: int, high: int, names: dict[str, int]) -> int:
    """One value of a field, as a number from low to high or one of its names."""
    if text.lower() in names:
        return names[text.lower()]
    if not text.isdigit():
        known = f", or a name such as {next(iter(names))}" if names else ""
        raise ValueError(f"{text!r} is not a number from {low} to {high}{known}")
    if not low <= int(text) <= high:
        raise ValueError(f"{text} is out of range: {low} to {high}")
    return int(text)


def matches(cron: Cron, day: date) -> bool:
    """Whether `day` is one of the expression's days.

    When both day fields are restricted, a day matching either runs (standard cron:
    "1,15 * * * 5" is the 1st, the 15th and every Friday). A field that starts with "*"
    (even "*/2") counts as unrestricted for this rule, as in Vixie cron.
    """
    if day.month not in cron.months:
        return False
    in_month, in_week = day.day in cron.days, day.isoweekday() % 7 in cron.weekdays
    return in_month and in_week if cron.any_day else in_month or in_week


def walls(cron: Cron, start: datetime, step: int) -> Iterator[datetime]:
    """The wall times the expression names, from naive `start` on (step 1) or back (step -1), start included."""
    day = start.date()
    for _ in range(SEARCH_DAYS):
        if matches(cron, day):
            yield from (wall for wall in day_walls(cron, day, step) if (wall - start) * step >= timedelta(0))
        day += timedelta(days=step)


def day_walls(cron: Cron, day: date, step: int) -> Iterator[datetime]:
    """The wall times the expression names on `day`, in order (step 1) or backwards (step -1)."""
    for hour in cron.hours[::step]:
        for minute in cron.minutes[::step]:
            yield datetime(day.year, day.month, day.day, hour, minute)


def moment_of(wall: datetime, zone: tzinfo) -> datetime:
    """The moment (in UTC) the clocks of `zone` first show naive `wall`; past the gap when they skip it."""
    while True:
        moment = wall.replace(tzinfo=zone).astimezone(UTC)  # fold 0: the first of a repeated time
        if moment.astimezone(zone).replace(tzinfo=None) == wall:
            return moment
        wall += MINUTE  # the clocks jumped over this minute


def next_after(cron: Cron, moment: datetime, zone: tzinfo = UTC) -> datetime:
    """The first moment after `moment` (an aware datetime) the expression names, in UTC."""
    start = local_minute(moment - DST_MARGIN, zone)  # wall times around a clock change need not be in order
    for wall in walls(cron, start, 1):
        found = moment_of(wall, zone)
        if found > moment:
            return found
    raise ValueError(f"cron expression {cron.expression!r} names no moment in {SEARCH_DAYS} days after {moment}")


def latest_at(cron: Cron, moment: datetime, zone: tzinfo = UTC) -> datetime | None:
    """The last moment at or before `moment` the expression names, in UTC; None if none in SEARCH_DAYS."""
    start = local_minute(moment + DST_MARGIN, zone)
    for wall in walls(cron, start, -1):
        found = moment_of(wall, zone)
        if found <= moment:
            return found
    return None


def local_minute(moment: datetime, zone: tzinfo) -> datetime:
    """The naive wall time of `moment` in `zone`, to the minute."""
    return moment.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0)
