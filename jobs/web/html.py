"""The dashboard's HTML, as small functions: the layout every page shares, tables, buttons.

Every value that comes from the database or the request passes `escaped` on its way
into the page, so a job's reason or a queue's name shows as text and never runs. No
page loads anything from another site: one stylesheet, one script and one icon, all served
by the dashboard itself.
"""

import html
from datetime import UTC, datetime
from string import Template
from typing import TYPE_CHECKING

from ..store.shelf import age as age  # as the command line says a duration (pages.py calls html.age)
from . import csrf

if TYPE_CHECKING:  # wsgi.py imports this module
    from .wsgi import Request

LAYOUT = Template("""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title · jobs</title>
<link rel="stylesheet" href="$root/style.css">
<link rel="icon" href="$root/icon.svg">
</head>
<body>
<header><strong>jobs</strong>
<a href="$root/">Queues</a> <a href="$root/jobs">Jobs</a> <a href="$root/failed">Failed</a>
<a href="$root/batches">Batches</a> <a href="$root/schedules">Schedules</a> <a href="$root/workers">Workers</a></header>
<main>
<h1>$title</h1>
$body
</main>
$script
</body>
</html>
""")


def escaped(value: object) -> str:
    """`value` as text safe inside HTML, quotes included."""
    return html.escape(str(value), quote=True)


def page(request: "Request", title: str, body: str, *, refreshing: bool = False) -> str:
    """A whole page: the layout around `body` (HTML already), with the refresh script when asked."""
    script = f'<script src="{escaped(request.root)}/refresh.js"></script>' if refreshing else ""
    return LAYOUT.substitute(title=escaped(title), root=escaped(request.root), body=body, script=script)


def table(headers: list[str], rows: list[list[str]], numeric: frozenset[str] = frozenset()) -> str:
    """A table of cells that are HTML already; the columns named in `numeric` align right.

    Each cell carries its column's name (data-label), which a narrow screen shows beside
    the value when the stylesheet lays each row out as a card.
    """

    def cell(tag: str, header: str, content: str) -> str:
        number = ' class="number"' if header in numeric else ""
        label = f' data-label="{escaped(header)}"' if tag == "td" and header else ""
        return f"<{tag}{number}{label}>{content}</{tag}>"

    head = "".join(cell("th", h, escaped(h)) for h in headers)
    body = "".join(
        "<tr>" + "".join(cell("td", h, c) for h, c in zip(headers, row, strict=True)) + "</tr>" for row in rows
    )
    return f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


def button(request: "Request", action: str, label: str, fields: dict[str, object], *, danger: bool = False) -> str:
    """A POST form of one button, to `action`, with hidden `fields` and the page's CSRF token."""
    hidden = "".join(f'<input type="hidden" name="{escaped(k)}" value="{escaped(v)}">' for k, v in fields.items())
    style = ' class="danger"' if danger else ""
    return (
        f'<form class="inline" method="post" action="{escaped(request.root)}/{action}">{token_field(request)}'
        f'{hidden}<button type="submit"{style}>{escaped(label)}</button></form>'
    )


def token_field(request: "Request") -> str:
    """The hidden field that carries the page's CSRF token in a form."""
    return f'<input type="hidden" name="{csrf.FIELD}" value="{escaped(request.csrf)}">'


def link(request: "Request", path: str, text: object, **params: object) -> str:
    """A link to a page of the dashboard."""
    return f'<a href="{escaped(request.url(path, **params))}">{escaped(text)}</a>'


def note(text: str, *, error: bool = False) -> str:
    """A box saying what happened (HTML already)."""
    return f'<div class="note{" error" if error else ""}" role="{"alert" if error else "status"}">{text}</div>'


def moment(ms: int | None) -> str:
    """A moment in ms since the epoch, as a UTC date and time, or "-"."""
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def when(moment: datetime | None) -> str:
    """A timestamptz as a UTC date and time, or "-"."""
    if moment is None:
        return "-"
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def first_line(text: str, width: int = 80) -> str:
    """The first line of `text`, cut to `width` characters."""
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= width else line[: width - 1] + "…"
