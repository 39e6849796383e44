"""Skeletons of text (Unicode Technical Standard #39): two strings that look alike share one.

A skeleton maps every character to the prototype of the characters that look like it
(Cyrillic "а", fullwidth "ａ" and Latin "a" all become one; "m" becomes "rn"), so
names.py can refuse a name that would pass for one already taken. The map is built
once from the confusables table of the confusable-homoglyphs package (Unicode's
confusables.txt, kept up to date there), which records each line of the table both
ways; each group of look-alikes is joined back together and given one prototype.
"""

import unicodedata

from confusable_homoglyphs.confusables import confusables_data

MARK = "\u200e"  # LEFT-TO-RIGHT MARK: the table wraps right-to-left characters in it for display


def prototypes() -> dict[str, str]:
    """Each character of the table, mapped to the prototype of its group of look-alikes.

    The groups are the connected parts of the table's pairs. A group's prototype is
    its sequence of several characters when it has one (the table's prototypes are
    the only sequences in it), else an ASCII character when it has one, for skeletons
    a person can read; the choice changes no comparison, as every member gets the same.
    """
    group: dict[str, str] = {}  # each string, mapped to a member of its group, which leads to the group's root

    def root(text: str) -> str:
        while group.setdefault(text, text) != text:
            group[text] = group[group[text]]  # halves the path on the way
            text = group[text]
        return text

    for text, alikes in confusables_data.items():
        for alike in alikes:
            group[root(alike["c"].strip(MARK))] = root(text.strip(MARK))
    members: dict[str, list[str]] = {}
    for text in group:
        members.setdefault(root(text), []).append(text)
    chosen: dict[str, str] = {}
    for texts in members.values():
        longer = [text for text in texts if len(text) > 1]
        prototype = longer[0] if longer else min(texts, key=lambda text: (not text.isascii(), text))
        chosen.update((text, prototype) for text in texts if len(text) == 1)
    return chosen


PROTOTYPES = prototypes()


def skeleton(text: str) -> str:
    """The skeleton of `text`, as UTS #39 defines it: decomposed, each character its prototype, decomposed again."""
    mapped = "".join(PROTOTYPES.get(char, char) for char in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)
