"""The name an account signs its entries with: chosen at sign-up, optional, at most NAME_MAX characters.

An account without one signs as ANONYMOUS. A name is shown to every visitor, so it
must not pass for another: it is printable text (no control, formatting or
bidirectional-override characters), holds no character that shows as nothing
(BLANKS) and no run of more than COMBINING_RUN_MAX combining marks, and its `key` (its
look-alike skeleton, skeletons.py, without case and without the characters that show
as nothing) is neither RESERVED's nor that of
a name taken, which the database's unique index on accounts.name_key enforces (names
chosen before keys existed get theirs at the app's start, `keys_made`). A sign-up
does not write its name on the account: it claims the key (`claimed`, table
name_claims) for CLAIM_MAX_AGE, and writes the same claim whether or not its address
had an account, so a later sign-up refused the name learns nothing of that address;
the account takes the name when it is confirmed (`claim_kept`), and may change it on
the name page (renames.py). The templates escape
a name like any text, and isolate it (<bdi>) so that a right-to-left name cannot
reorder the line it stands in.
"""

import re
import unicodedata

import psycopg
from flask import request

from .db import queries
from .forms import field
from .skeletons import skeleton
from .tokens import CONFIRM_MAX_AGE

NAME_MAX = 50  # characters a display name may hold
ANONYMOUS = "a guest"  # how the entries of an account without a name are signed
RESERVED = (ANONYMOUS,)  # names no account may take, nor any that looks like one of them
# Printable characters that show as nothing: Hangul fillers and the blank Braille pattern.
BLANKS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
COMBINING_RUN_MAX = 3  # combining marks in a row (after NFC) that a name may hold: more stack into a smear
TAKEN = "That name is taken, or looks like one that is: choose another, or none."  # the sign-up's answer to one
# Seconds a sign-up's claim on its name holds it: as long as the confirmation link it sends lives, 3 days.
CLAIM_MAX_AGE = CONFIRM_MAX_AGE
CLAIM_ENDED = (  # what a confirmation says when the name of its sign-up was held too long ago
    f"The name you signed up with was held for you {CLAIM_MAX_AGE // 86400} days only: your entries are signed "
    f"“{ANONYMOUS}” until you choose a name on the name page."
)
SPACES = re.compile(r" +")  # a page shows a run of spaces as one (other white space is not printable)


def posted() -> str:
    """The posted `name` field, in NFC, trimmed, its runs of spaces made one; "" when the form has none (it is
    optional)."""
    if "name" not in request.form:
        return ""
    return SPACES.sub(" ", unicodedata.normalize("NFC", field("name", NAME_MAX))).strip()


def problem(name: str) -> str:
    """Why `name` cannot be chosen, whoever has taken which, as a sentence; "" when it can."""
    if not name.isprintable():
        return "Choose a name of printable characters only: letters, digits, spaces and punctuation."
    if BLANKS.intersection(name):
        return "Choose a name without characters that show blank: every character of it must be seen."
    if longest_run_of_marks(name) > COMBINING_RUN_MAX:
        return f"Choose a name with at most {COMBINING_RUN_MAX} accents or other marks on one letter."
    if name and key(name) in {key(reserved) for reserved in RESERVED}:
        return f"“{name}” is reserved: entries without a name are signed “{ANONYMOUS}”. Choose another, or none."
    return ""


def longest_run_of_marks(name: str) -> int:
    """The most combining marks (Unicode categories Mn, Mc, Me) that follow one another in `name`."""
    longest = run = 0
    for char in name:
        run = run + 1 if unicodedata.category(char).startswith("M") else 0
        longest = max(longest, run)
    return longest


def key(name: str) -> str | None:
    """What two names that look alike share: the skeleton of its NFKC form, without case; None for no name."""
    if not name:
        return None
    return skeleton(skeleton(unicodedata.normalize("NFKC", name)).casefold())


def taken(db, name: str, account_id: int | None = None) -> bool:
    """Whether an account other than `account_id`, or a claim not its own, holds `name` or a name that looks like
    it."""
    params = {"key": key(name), "account_id": account_id}
    return bool(name) and db.execute(queries["name_taken"], params).fetchone() is not None


def claimed(db, name: str, account_id: int | None) -> bool:
    """Claims `name` for CLAIM_MAX_AGE, for the account a sign-up made (None: its address had one already); False,
    claiming nothing, when another claim or an account holds it. No name needs no claim."""
    if not name:
        return True
    params = {"key": key(name), "name": name, "account_id": account_id, "max_age": CLAIM_MAX_AGE}
    return db.execute(queries["name_claimed"], params).fetchone() is not None


def claim_kept(db, account_id: int) -> bool:
    """Gives the account being confirmed the name its claim holds; False when the claim ended first, and the account
    is left without a name. A claim another sign-up took over once it ended is no longer the account's."""
    return db.execute(queries["claim_taken_up"], {"id": account_id}).fetchone()[0]


def renamed(db, account_id: int, name: str) -> bool:
    """Gives the account `name` ("" for none); False, changing nothing, when another account or claim holds it."""
    try:
        with db.transaction():  # a savepoint, so a lost race leaves the caller's transaction usable
            params = {"id": account_id, "name": name, "key": key(name)}
            return db.execute(queries["account_renamed"], params).rowcount == 1
    except psycopg.errors.UniqueViolation:
        return False  # another account took a look-alike a moment ago


def released(db, account_id: int) -> None:
    """Unties the claims the account's sign-up wrote from it: they hold their keys to their end, for no account."""
    db.execute(queries["claims_released"], {"id": account_id})


def claims_pruned(db) -> int:
    """Deletes the claims that have ended, which hold nothing any more; returns how many."""
    return db.execute(queries["claims_pruned"]).rowcount


def of(db, account_id: int) -> str:
    """The name the account signs with ("" for none)."""
    row = db.execute(queries["account_name"], {"id": account_id}).fetchone()
    return row[0] if row else ""


def init_app(app) -> None:
    """Gives keys to the names chosen before accounts had them, once the app's tables are made."""
    with app.extensions["guestbook.pool"].connection() as db:
        keys_made(db)


def keys_made(db) -> int:
    """Gives each name without a key its key, oldest account first; returns how many got one.

    Of two old names that look alike, the older account's gets the key; the other keeps
    its name, without a key, so it holds no claim on its look-alikes.
    """
    keyed = 0
    for account_id, name in db.execute(queries["names_unkeyed"]).fetchall():  # whatever the row factory
        try:
            keyed += db.execute(queries["name_keyed"], {"id": account_id, "key": key(name)}).rowcount
        except psycopg.errors.UniqueViolation:
            pass  # a process starting beside this one gave the key to a look-alike a moment ago
    return keyed
