"""The signed links of every letter: what their tokens carry, how long they live, and what ends them.

A token is [account id, fingerprint], signed and timestamped by itsdangerous with
SECRET_KEY and one salt per purpose, so a confirm token can never pass for a reset
one. The fingerprint is an HMAC of the account's state the link belongs to:
  confirm  the address: the link works until CONFIRM_MAX_AGE has passed (again is harmless);
  reset    the password digest: the reset changes it, so the link works once;
  unlock   the moment of the lock: unlocking or locking again ends the link.
The state itself never goes in, because anyone holding a link can read its payload
(itsdangerous signs, it does not encrypt), and a password digest is not for reading.
"""

import hashlib
import hmac
from datetime import UTC

from flask import current_app
from itsdangerous import BadData, URLSafeTimedSerializer

CONFIRM_MAX_AGE = 3 * 24 * 3600  # seconds a confirmation link lives: 3 days
RESET_MAX_AGE = 3600  # seconds a reset link lives unless RESET_TOKEN_MAX_AGE says otherwise: an hour
UNLOCK_MAX_AGE = 3600  # seconds an unlock link lives: as long as a lock (accounts.LOCK_DURATION)
SALTS = {"confirm": "guestbook confirm", "reset": "guestbook reset", "unlock": "guestbook unlock"}


def made(purpose: str, account) -> str:
    """A token for `purpose` ("confirm", "reset" or "unlock") bound to `account`'s present state."""
    return serializer(purpose).dumps([account.id, fingerprint(purpose, state(purpose, account))])


def opened(purpose: str, token: str) -> tuple[int, str] | None:
    """The account id and fingerprint a genuine, unexpired token for `purpose` holds; None otherwise."""
    try:
        account_id, print_ = serializer(purpose).loads(token, max_age=max_age(purpose))
    except (BadData, TypeError, ValueError):
        return None
    if not isinstance(account_id, int) or not isinstance(print_, str):
        return None
    return account_id, print_


def fits(purpose: str, print_: str, account) -> bool:
    """Whether a token's fingerprint still matches `account`'s state, compared in constant time."""
    return hmac.compare_digest(print_.encode(), fingerprint(purpose, state(purpose, account)).encode())


def state(purpose: str, account) -> str:
    """The part of `account` a token for `purpose` is bound to (see the module's docstring)."""
    if purpose == "confirm":
        return account.email
    if purpose == "unlock":
        return account.locked_at.astimezone(UTC).isoformat() if account.locked_at else ""
    return account.password_digest  # "reset", and the session (see auth.load_signed_in_account)


def secret_key() -> bytes:
    """SECRET_KEY, as bytes; create_app refuses to make an app without one."""
    key = current_app.secret_key
    assert key is not None, "the app has no SECRET_KEY"  # create_app checks it, so only a hand-made app lacks one
    return key.encode() if isinstance(key, str) else key


def fingerprint(purpose: str, value: str) -> str:
    """An HMAC of `value` under SECRET_KEY and `purpose`: it tells values apart and reveals none."""
    return hmac.new(secret_key(), f"{purpose}\x00{value}".encode(), hashlib.sha256).hexdigest()


def max_age(purpose: str) -> int:
    """How many seconds a token for `purpose` lives."""
    if purpose == "reset":
        return current_app.config["RESET_TOKEN_MAX_AGE"]
    return CONFIRM_MAX_AGE if purpose == "confirm" else UNLOCK_MAX_AGE


def serializer(purpose: str) -> URLSafeTimedSerializer:
    """The signer for `purpose`: SECRET_KEY, with that purpose's own salt."""
    return URLSafeTimedSerializer(secret_key(), salt=SALTS[purpose])
