"""Passwords: how they are hashed, checked, and which may be chosen.

Werkzeug's scrypt at its default cost (N=2**15, r=8, p=1: about 32 MiB of memory and
a few tens of milliseconds per hash) makes each guess at a stolen digest expensive.
The same cost is paid on every sign-up and sign-in, so it is also what bounds how
many of those one server process answers per second. A password is refused when
it is too short or too long, among the most common ones, holds the address's name,
or is guessable by its pattern: NIST SP 800-63B asks for a check against what
guessers try, not for rules of character classes, so zxcvbn (Dropbox's estimator,
kept on the package index) scores it, and a score under SCORE_MIN is refused.
"""

import gzip
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash
from zxcvbn import zxcvbn

PASSWORD_MIN = 12  # characters a password needs at the least
PASSWORD_MAX = 128  # characters a password may have at the most
METHOD = "scrypt"  # Werkzeug's scrypt, at its default cost
LOCAL_PART_MIN = 4  # characters an address's name (before the @) needs before a password holding it is refused
# zxcvbn's score runs from 0 ("too guessable") to 4; 3 means "safely unguessable" to an
# attacker online: repeats, sequences, keyboard walks, dictionary words with digits
# and the site's own name score 0 to 2.
SCORE_MIN = 3
# Characters scored, from the start: zxcvbn's time grows faster than the length (over
# half a second for 128 random ones), and 40 cost about 10 ms, a tenth of the hash.
SCORED_LENGTH = 40
# Words any guesser of this site's passwords tries first. zxcvbn keeps its user inputs
# in a module-wide dictionary, so they are the same for every request (threads share
# it); the address's own name is checked apart (LOCAL_PART_MIN).
SITE_WORDS = ("guestbook", "guest", "book")

# The 20,000 most common passwords, lower-cased: the list Django ships for its
# CommonPasswordValidator (django/contrib/auth/common-passwords.txt.gz, BSD licence,
# compiled by Royce Williams from breached passwords), taken unchanged. Attackers try these first.
COMMON = Path(__file__).with_name("common-passwords.txt.gz")
COMMON_PASSWORDS = frozenset(gzip.decompress(COMMON.read_bytes()).decode("utf-8").lower().split("\n")) - {""}

# Checked against when an address is unknown, so that a sign-in costs one hash
# whether or not the address has an account and time tells nothing.
DUMMY_DIGEST = generate_password_hash("no account has this password", method=METHOD)


def digest(password: str) -> str:
    """The digest kept for `password`: method, cost, a random salt and the hash."""
    return generate_password_hash(password, method=METHOD)


def matches(digest: str | None, password: str) -> bool:
    """Whether `password` is the one `digest` was made from; with no digest, does the same work and says no."""
    if digest is None:
        check_password_hash(DUMMY_DIGEST, password)
        return False
    return check_password_hash(digest, password)


def problem(password: str, email: str) -> str:
    """Why `password` cannot be chosen by the account of `email`, as a sentence; "" when it can."""
    if len(password) < PASSWORD_MIN:
        return f"Choose a password of at least {PASSWORD_MIN} characters."
    if len(password) > PASSWORD_MAX:
        return f"Choose a password of at most {PASSWORD_MAX} characters."
    if password.strip().lower() in COMMON_PASSWORDS:
        return "That password is one of the most common ones, which are tried first by anyone guessing. Choose another."
    name = email.partition("@")[0].lower()
    if len(name) >= LOCAL_PART_MIN and name in password.lower():  # a shorter name cannot equal 12 characters either
        return (
            f"Choose a password without “{name}” in it: "
            "the name your address begins with is the first thing anyone would try."
        )
    if zxcvbn(password[:SCORED_LENGTH], user_inputs=SITE_WORDS)["score"] < SCORE_MIN:
        return (
            "That password follows a pattern that guessers try early: a repeat, a sequence, a common word "
            "with digits, or the site's name. A few unrelated words make a strong one."
        )
    return ""
