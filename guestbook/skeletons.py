"""Skeletons of text (Unicode Technical Standard #39): two strings that look alike share one.

A skeleton drops the characters that show as nothing (DEFAULT_IGNORABLE) and maps
every other to the prototype of the characters that look like it (Cyrillic "а",
fullwidth "ａ" and Latin "a" all become one; "m" becomes "rn"), so names.py can
refuse a name that would pass for one already taken. The map is built once from the
confusables table of the confusable-homoglyphs package (Unicode's confusables.txt,
kept up to date there), which records each line of the table both ways; each group of
look-alikes is joined back together and given one prototype.
"""

import unicodedata

from confusable_homoglyphs.confusables import confusables_data

MARK = "\u200e"  # LEFT-TO-RIGHT MARK: the table wraps right-to-left characters in it for display
# Unicode's Default_Ignorable_Code_Point ranges (DerivedCoreProperties.txt), first and last code point: characters
# a font shows as nothing, which UTS #39 drops from a skeleton. Most are refused in a name as unprintable or blank
# anyway; the combining ones (U+034F, the variation selectors, Mongolian FVS, Khmer inherent vowels) are printable.
DEFAULT_IGNORABLE_RANGES = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG and JUNGSEONG FILLERS
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ and AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS and VOWEL SEPARATOR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE, NON-JOINER and JOINER, LEFT-TO-RIGHT and RIGHT-TO-LEFT MARKS
    (0x202A, 0x202E),  # bidirectional embeddings and overrides
    (0x2060, 0x206F),  # WORD JOINER, invisible operators, bidirectional isolates, deprecated format characters
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTORS 1 to 16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # unassigned, reserved as ignorable
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT CONTROLS
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM to END PHRASE
    (0xE0000, 0xE0FFF),  # TAG characters, VARIATION SELECTORS 17 to 256, and the unassigned ones between
)
DEFAULT_IGNORABLE = dict.fromkeys(code for first, last in DEFAULT_IGNORABLE_RANGES for code in range(first, last + 1))


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
    """The skeleton of `text`, as UTS #39 defines it: decomposed, without its default ignorable characters, each
    character its prototype, decomposed again."""
    visible = unicodedata.normalize("NFD", text).translate(DEFAULT_IGNORABLE)  # translate deletes what maps to None
    mapped = "".join(PROTOTYPES.get(char, char) for char in visible)
    return unicodedata.normalize("NFD", mapped)
