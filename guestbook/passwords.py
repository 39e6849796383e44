"""Passwords: how they are hashed, checked, and which may be chosen.

Werkzeug's scrypt at its default cost (N=2**15, r=8, p=1: about 32 MiB of memory and
a few tens of milliseconds per hash) makes each guess at a stolen digest expensive.
The same cost is paid on every sign-up and sign-in, so it is also what bounds how
many of those one server process answers per second. A password is refused when
it is too short or too long, among the most common ones, or holds the address's name.
"""

import gzip
from pathlib import Path

from werkzeug.security import check_password_hash, generate_password_hash

PASSWORD_MIN = 12  # characters a password needs at the least
PASSWORD_MAX = 128  # characters a password may have at the most
METHOD = "scrypt"  # Werkzeug's scrypt, at its default cost
LOCAL_PART_MIN = 4  # characters an address's name (before the @) needs before a password holding it is refused

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
        return f"Choose a password without “{name}” in it: the name your address begins with is the first thing anyone would try."
    return ""
