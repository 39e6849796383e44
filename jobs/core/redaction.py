"""Secret arguments: the ones a job's caller names in `later(..., secret=[...])`, which no viewer shows.

The names are kept with the job (the column `secret`), so every viewer honours them
without knowing the code that queued it: the dashboard shows those arguments as
HIDDEN, even when asked to show the arguments, and the runner takes their values out
of a failed attempt's reason and traceback before it writes or logs them, so the
failed shelf, `python -m jobs failed` and the log never hold them either.
"""

import re
from collections.abc import Collection
from typing import Any

HIDDEN = "[secret]"  # what a viewer shows in place of a secret argument, or of its value in a reason
SECRET_RUN_MIN = 16  # characters of a run of letters, digits, "-" and "_" in a secret that is hidden on its own
RUN = re.compile(rf"[A-Za-z0-9_-]{{{SECRET_RUN_MIN},}}")  # a token, a key, the signature of a signed link


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
