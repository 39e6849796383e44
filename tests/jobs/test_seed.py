"""The seed's spec, step for step: a queue worked at moments the test chooses."""

import jobs

T = 1_000_000
SOON = [T, T, T, T, T + 3000, T + 60000, T + 60000, T + 60000]
APART = [T + d for d in (1_000_000, 1_000_000, 10_000_000, 10_000_000, 100_000_000, 100_000_000)]

greeted: list[str] = []


def greet(db, args):
    greeted.append(args["name"])


def broken(db, args):
    raise RuntimeError("it broke")


PERFORMERS = {"greet": greet, "broken": broken}


def test_seed_transcript_fails_retries_and_keeps_reasons(db):
    jobs.later(db, "default", "greet", {"name": "Ada"}, T)
    jobs.later(db, "default", "broken", {}, T)
    jobs.later(db, "default", "missing", {}, T)
    jobs.later(db, "default", "greet", {"name": "Bo"}, T + 60000)
    jobs.later(db, "mail", "greet", {"name": "Cy"}, T)
    greeted.clear()

    told = [jobs.worked(db, "default", PERFORMERS, at) or "nothing due" for at in SOON + APART]

    assert told == [
        "ran greet",
        "failed broken on attempt 1: it broke",
        "failed missing on attempt 1: no performer is named missing",
        "nothing due",
        "failed broken on attempt 2: it broke",
        "failed missing on attempt 2: no performer is named missing",
        "failed broken on attempt 3: it broke",
        "ran greet",
        "failed missing on attempt 3: no performer is named missing",
        "failed broken on attempt 4: it broke",
        "failed missing on attempt 4: no performer is named missing",
        "failed broken on attempt 5: it broke",
        "failed missing on attempt 5: no performer is named missing",
        "nothing due",
    ]
    assert greeted == ["Ada", "Bo"]
    left = [(j["name"], j["queue"], j["attempts"], j["failure"]) for j in jobs.listed(db)]
    assert left == [
        ("broken", "default", 5, "it broke"),
        ("missing", "default", 5, "no performer is named missing"),
        ("greet", "mail", 0, ""),
    ]


def test_failed_job_waits_attempts_to_the_fourth_plus_two_seconds(db):
    jobs.later(db, "default", "broken", {}, T)
    waits = []
    moment = T
    for _ in range(4):  # the first four attempts, each failing
        jobs.worked(db, "default", PERFORMERS, moment)
        (row,) = jobs.listed(db)
        waits.append(row["run_at"] - moment)
        moment = row["run_at"]
    assert waits == [3000, 18000, 83000, 258000]


def test_failure_keeps_the_traceback_and_every_reason(db):
    jobs.later(db, "default", "broken", {}, T)
    jobs.worked(db, "default", PERFORMERS, T)
    jobs.worked(db, "default", PERFORMERS, T + 3000)
    (row,) = jobs.listed(db)
    assert "RuntimeError: it broke" in row["traceback"]
    assert "def broken" in row["traceback"] or "in broken" in row["traceback"]
    assert row["reasons"] == ["it broke", "it broke"]
