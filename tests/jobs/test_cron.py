"""Cron expressions: the five fields, their names and aliases, clear errors, and the moments they name across DST."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from jobs.core import cron

UTC = UTC
BERLIN = ZoneInfo("Europe/Berlin")  # clocks go 02:00 -> 03:00 on 2026-03-29 and 03:00 -> 02:00 on 2026-10-25
NEW_YORK = ZoneInfo("America/New_York")  # 02:00 -> 03:00 on 2026-03-08, 02:00 -> 01:00 on 2026-11-01


def moments(expression, after, count, zone=UTC):
    """The first `count` moments `expression` names after `after`, as wall times in `zone`."""
    found, parsed = [], cron.parsed(expression)
    for _ in range(count):
        after = cron.next_after(parsed, after, zone)
        found.append(after.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z"))
    return found


def at(text, zone=UTC):
    return datetime.fromisoformat(text).replace(tzinfo=zone)


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("17 3 * * *", ["2026-12-01 03:17 UTC", "2026-12-02 03:17 UTC", "2026-12-03 03:17 UTC"]),
        ("*/20 * * * *", ["2026-12-01 00:20 UTC", "2026-12-01 00:40 UTC", "2026-12-01 01:00 UTC"]),
        ("0 9-17/4 * * *", ["2026-12-01 09:00 UTC", "2026-12-01 13:00 UTC", "2026-12-01 17:00 UTC"]),
        ("5,35 0 * * *", ["2026-12-01 00:05 UTC", "2026-12-01 00:35 UTC", "2026-12-02 00:05 UTC"]),
        ("0 0 * * mon-wed", ["2026-12-02 00:00 UTC", "2026-12-07 00:00 UTC", "2026-12-08 00:00 UTC"]),
        ("0 0 1 jan,JUL *", ["2027-01-01 00:00 UTC", "2027-07-01 00:00 UTC", "2028-01-01 00:00 UTC"]),
        ("0 12 * * 7", ["2026-12-06 12:00 UTC", "2026-12-13 12:00 UTC", "2026-12-20 12:00 UTC"]),  # 7 is Sunday too
        ("30 5/6 * * *", ["2026-12-01 05:30 UTC", "2026-12-01 11:30 UTC", "2026-12-01 17:30 UTC"]),
        ("0 0 29 2 *", ["2028-02-29 00:00 UTC", "2032-02-29 00:00 UTC", "2036-02-29 00:00 UTC"]),
        ("@daily", ["2026-12-02 00:00 UTC", "2026-12-03 00:00 UTC", "2026-12-04 00:00 UTC"]),
        ("@hourly", ["2026-12-01 01:00 UTC", "2026-12-01 02:00 UTC", "2026-12-01 03:00 UTC"]),
        ("@weekly", ["2026-12-06 00:00 UTC", "2026-12-13 00:00 UTC", "2026-12-20 00:00 UTC"]),
        ("@monthly", ["2027-01-01 00:00 UTC", "2027-02-01 00:00 UTC", "2027-03-01 00:00 UTC"]),
        ("@yearly", ["2027-01-01 00:00 UTC", "2028-01-01 00:00 UTC", "2029-01-01 00:00 UTC"]),
        ("@annually", ["2027-01-01 00:00 UTC", "2028-01-01 00:00 UTC", "2029-01-01 00:00 UTC"]),
    ],
)
def test_an_expression_names_the_moments_cron_would(expression, expected):
    assert moments(expression, at("2026-12-01 00:00"), 3) == expected


def test_restricted_day_of_month_and_day_of_week_mean_either():
    # The 1st and 15th of the month, and every Friday (2026-12-04 is a Friday).
    assert moments("0 0 1,15 * fri", at("2026-11-30 12:00"), 5) == [
        "2026-12-01 00:00 UTC",
        "2026-12-04 00:00 UTC",
        "2026-12-11 00:00 UTC",
        "2026-12-15 00:00 UTC",
        "2026-12-18 00:00 UTC",
    ]


def test_a_day_field_starting_with_a_star_must_match_as_well():
    # Odd days that are Fridays: "*/2" counts as unrestricted, so both must match.
    assert moments("0 0 */2 * 5", at("2026-11-30 12:00"), 2) == ["2026-12-11 00:00 UTC", "2026-12-25 00:00 UTC"]


def test_the_next_moment_is_strictly_after_the_one_given():
    assert moments("17 3 * * *", at("2026-12-01 03:17"), 1) == ["2026-12-02 03:17 UTC"]
    assert moments("17 3 * * *", at("2026-12-01 03:16:59.5"), 1) == ["2026-12-01 03:17 UTC"]


def test_the_latest_moment_is_at_or_before_the_one_given():
    parsed = cron.parsed("17 3 * * *")
    assert cron.latest_at(parsed, at("2026-12-01 03:17")) == at("2026-12-01 03:17")
    assert cron.latest_at(parsed, at("2026-12-01 03:16")) == at("2026-11-30 03:17")


@pytest.mark.parametrize(
    "expression, field, says",
    [
        ("60 * * * *", "minute", "60 is out of range: 0 to 59"),
        ("* 24 * * *", "hour", "24 is out of range: 0 to 23"),
        ("* * 0 * *", "day of month", "0 is out of range: 1 to 31"),
        ("* * * 13 *", "month", "13 is out of range: 1 to 12"),
        ("* * * * 8", "day of week", "8 is out of range: 0 to 7"),
        ("* * * foo *", "month", "'foo' is not a number from 1 to 12, or a name such as jan"),
        ("* * * * funday", "day of week", "'funday' is not a number from 0 to 7, or a name such as sun"),
        ("30-10 * * * *", "minute", "the range '30-10' runs backwards"),
        ("*/0 * * * *", "minute", "0 is out of range: 1 to 60"),
        ("1,,2 * * * *", "minute", "'' is not a number from 0 to 59"),
        ("-5 * * * *", "minute", "'' is not a number from 0 to 59"),
        ("* * 31 2 *", "day of month", "no month it names has such a day"),
    ],
)
def test_a_bad_field_is_refused_naming_the_field_and_why(expression, field, says):
    with pytest.raises(ValueError) as refused:
        cron.parsed(expression)
    assert str(refused.value).startswith(f"cron expression {expression!r}: the {field} field")
    assert says in str(refused.value)


@pytest.mark.parametrize(
    "expression, says",
    [
        ("* * * *", "expected five fields"),
        ("* * * * * *", "expected five fields"),
        ("", "expected five fields"),
        ("@reboot", "unknown alias; the aliases are @yearly"),
    ],
)
def test_a_bad_shape_is_refused_with_what_is_expected(expression, says):
    with pytest.raises(ValueError, match=says):
        cron.parsed(expression)


def test_a_wall_time_the_clocks_skip_fires_once_at_the_end_of_the_gap():
    # Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST; 02:30 does not exist that night.
    assert moments("30 2 * * *", at("2026-03-28 12:00"), 3, BERLIN) == [
        "2026-03-29 03:00 CEST",
        "2026-03-30 02:30 CEST",
        "2026-03-31 02:30 CEST",
    ]
    # Every quarter of the skipped hour: four wall times, one moment.
    assert moments("*/15 2 * * *", at("2026-03-29 00:00", BERLIN), 2, BERLIN) == [
        "2026-03-29 03:00 CEST",
        "2026-03-30 02:00 CEST",
    ]


def test_a_wall_time_the_clocks_show_twice_fires_once_the_first_time():
    # Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET; 02:30 happens twice, an hour apart.
    assert moments("30 2 * * *", at("2026-10-24 12:00"), 2, BERLIN) == ["2026-10-25 02:30 CEST", "2026-10-26 02:30 CET"]
    # New York, 2026-11-01: 02:00 EDT becomes 01:00 EST; hourly skips the repeated 01:00.
    assert moments("0 * * * *", at("2026-11-01 00:30", NEW_YORK), 3, NEW_YORK) == [
        "2026-11-01 01:00 EDT",
        "2026-11-01 02:00 EST",
        "2026-11-01 03:00 EST",
    ]


def test_the_latest_moment_inside_a_repeated_hour_is_its_first_pass():
    # 01:30 UTC is 02:30 CET, the second pass: the latest 02:xx moment fired was in the first.
    latest = cron.latest_at(cron.parsed("*/10 2 * * *"), at("2026-10-25 01:30"), BERLIN)
    assert latest.astimezone(BERLIN).strftime("%H:%M %Z") == "02:50 CEST"


def test_new_york_skipped_hour_fires_at_three():
    assert moments("15 2 * * *", at("2026-03-07 12:00"), 2, NEW_YORK) == [
        "2026-03-08 03:00 EDT",
        "2026-03-09 02:15 EDT",
    ]


@pytest.mark.parametrize("start", ["2026-03-28 20:00", "2026-10-24 20:00"])
def test_moments_in_a_zone_keep_their_order_through_a_clock_change(start):
    parsed, moment = cron.parsed("*/30 * * * *"), at(start)
    for _ in range(2 * 24 * 2):  # two days of half hours, the change in the middle
        following = cron.next_after(parsed, moment, BERLIN)
        assert moment < following <= moment + timedelta(hours=1, minutes=30)
        assert cron.latest_at(parsed, following, BERLIN) == following
        moment = following
