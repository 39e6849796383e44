"""A job's arguments: checked before anything is written, and the secret ones hidden from every viewer.

`later`, `later_many`, chains and batches call `encoded` first, so a job that could
not survive the trip through the table is refused in the caller's hands, naming the
job and the place in its arguments, and no row is written.

Secret arguments are the ones a job's caller names in `later(..., secret=[...])`
(`declared` checks them). The names are kept with the job (the column `secret`), so
every viewer honours them without knowing the code that queued it: the dashboard shows
those arguments as HIDDEN, even when asked to show the arguments, and the runner takes
their values out of a failed attempt's reason and traceback before it writes or logs
them (`redacted`), so the failed shelf, `python -m jobs failed` and the log never hold
them either.
"""

import json
import math
import re
from collections.abc import Collection
from typing import Any

# The encoder of every job's arguments, made once (json.dumps given options makes one a call);
# it keeps nothing between calls, so every thread shares it.
ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

HIDDEN = "[secret]"  # what a viewer shows in place of a secret argument, or of its value in a reason
SECRET_RUN_MIN = 16  # characters of a run of letters, digits, "-" and "_" in a secret that is hidden on its own
RUN = re.compile(rf"[A-Za-z0-9_-]{{{SECRET_RUN_MIN},}}")  # a token, a key, the signature of a signed link


class Refusal(Exception):
    """What is wrong with a value, and the path to it, gathered as the walk unwinds."""

    def __init__(self, error: type[Exception], what: str) -> None:
        super().__init__(what)
        self.error, self.what = error, what
        self.path: list[str] = []


def encoded(queue: str, name: str, args: dict[str, Any]) -> str:
    """The JSON text of a job's arguments, or a clear error naming the job.

    Arguments must survive the trip through the table unchanged: a dict with string
    keys whose values are JSON (None, bools, finite numbers, strings without NUL,
    lists and dicts of the same), of exactly those built-in types. Anything else is
    refused rather than silently converted (json.dumps would turn 1 into "1" as a
    key, a tuple into a list, and an enum into its value).
    """
    named(queue, name)
    return encoded_args(name, args)


def named(queue: str, name: str) -> None:
    """Refuses an empty queue or name, or one holding a NUL character."""
    for what, value in (("queue", queue), ("name", name)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"a job needs a {what}: got {value!r}")
        if "\x00" in value:
            raise ValueError(f"a job's {what} cannot hold a NUL character: {value!r}")


def encoded_args(name: str, args: dict[str, Any]) -> str:
    """The JSON text of job `name`'s arguments (see `encoded`)."""
    if type(args) is not dict:
        raise TypeError(f"job {name!r}: args must be a dict, not {type(args).__name__}")
    try:
        walked(args)
    except Refusal as refusal:
        raise refusal.error(f"job {name!r}: args{''.join(reversed(refusal.path))} {refusal.what}") from None
    return ENCODER.encode(args)


def walked(value: Any) -> None:
    """Raises a Refusal when `value` is not plain JSON; the one walk over the rules.

    It tests exact types, the quick test every job passes; the path to what is wrong
    is built only when something is (a try costs nothing until it catches).
    """
    kind = type(value)
    if kind is str:
        if "\x00" in value:
            raise Refusal(ValueError, "holds a NUL character")
    elif kind is int or kind is bool or value is None:
        return
    elif kind is float:
        if not math.isfinite(value):
            raise Refusal(ValueError, f"is {value}, which JSON cannot hold")
    elif kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise Refusal(TypeError, f"has a key {key!r} that is not a string")
            if "\x00" in key:
                raise Refusal(ValueError, f"has a key {key!r} holding a NUL character")
            stepped(item, key)
    elif kind is list:
        for i, item in enumerate(value):
            stepped(item, i)
    else:
        raise Refusal(TypeError, f"is a {kind.__name__}, which is not JSON")


def stepped(item: Any, step: str | int) -> None:
    """Walks `item`, adding `step` (its key, or its index in a list) to the path of whatever is wrong inside it."""
    try:
        walked(item)
    except Refusal as refusal:
        refusal.path.append(f"[{step!r}]")
        raise


def declared(name: str, args: dict[str, Any], secret: Collection[str] | None) -> list[str] | None:
    """The secret argument names of job `name`, checked: each a key of `args`; None when there are none."""
    if secret is None:
        return None
    if isinstance(secret, str) or not all(isinstance(key, str) for key in secret):
        raise TypeError(f"job {name!r}: secret takes a list of argument names, not {secret!r}")
    missing = [key for key in secret if key not in args]
    if missing:
        raise ValueError(f"job {name!r}: secret names arguments it does not have: {', '.join(missing)}")
    return list(dict.fromkeys(secret)) or None


def hidden(args: dict[str, Any], secret: list[str] | None) -> dict[str, Any]:
    """`args` with the value of each secret argument replaced by HIDDEN."""
    return {key: HIDDEN if secret and key in secret else value for key, value in args.items()}


def redacted(text: str, args: dict[str, Any], secret: list[str] | None) -> str:
    """`text` without the values of the secret arguments, nor any run of SECRET_RUN_MIN characters of them.

    A reason seldom quotes a whole value (a letter's body), but often a part of it (the
    link in the body, the token in the link): each run of letters, digits, "-" and "_"
    of SECRET_RUN_MIN characters or more in a secret string is taken out on its own.
    """
    if not secret or not text:
        return text
    pieces: set[str] = set()
    for key in secret:
        for value in strings(args.get(key)):
            pieces.add(value)
            pieces.update(RUN.findall(value))
    for piece in sorted(pieces, key=len, reverse=True):  # the longest first, so a whole value goes as one
        if piece:
            text = text.replace(piece, HIDDEN)
    return text


def strings(value: Any) -> list[str]:
    """Every string in a JSON value: itself, or those inside its lists and dicts."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in strings(item)]
    return []
