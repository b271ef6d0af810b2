"""Real pages re-encoded into the legacy encodings their text fits, with each kind of charset
declaration: the cases the decode parity command (``parity.decode_parity``) and the detector
benchmark (``bench.detector``) read, one definition for both."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

# (Python codec that writes the bytes, the label declared): the legacy encodings of the scripts
# the corpus holds text in
ENCODINGS: list[tuple[str, str]] = [
    ("cp1252", "windows-1252"),
    ("latin-1", "iso-8859-1"),
    ("iso-8859-2", "iso-8859-2"),
    ("iso-8859-5", "iso-8859-5"),
    ("iso-8859-7", "iso-8859-7"),
    ("iso-8859-9", "iso-8859-9"),
    ("iso-8859-15", "iso-8859-15"),
    ("cp1250", "windows-1250"),
    ("cp1251", "windows-1251"),
    ("cp1253", "windows-1253"),
    ("cp1254", "windows-1254"),
    ("cp1256", "windows-1256"),
    ("koi8-r", "koi8-r"),
    ("cp932", "shift_jis"),
    ("euc-jp", "euc-jp"),
    ("gbk", "gbk"),
    ("big5hkscs", "big5"),
    ("euc-kr", "euc-kr"),
]
KINDS = ("meta", "http-equiv", "transport", "none")
MIN_NON_ASCII = 20
MAX_OUTSIDE = 0.05
THRESHOLD = 0.99

_DECLARATION_RE = re.compile(r"<meta\b[^>]*charset[^>]*>", re.IGNORECASE)
_HEAD_RE = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_DOCTYPE_RE = re.compile(r"^\s*<!doctype[^>]*>", re.IGNORECASE)


@dataclass
class Case:
    page_id: str
    codec: str
    label: str
    kind: str
    data: bytes
    content_type: str | None
    original: str  # the same document as text


@cache
def round_trips(char: str, codec: str, label: str) -> bool:
    """Whether ``codec`` writes ``char`` as bytes the Encoding Standard's decoder of ``label``
    reads back as ``char``. Python's codecs and the standard's differ on a few characters
    (Python's big5 puts kana where the standard's Big5-HKSCS index has other characters;
    U+2022 goes to a byte pair the standard reads as U+2027): such a character is outside
    the encoding, as one it cannot write."""
    from pulpie_rt.runtime.stages.decode import decode

    try:
        data = char.encode(codec)
    except UnicodeEncodeError:
        return False
    return decode(data, label).text == char


def fits(non_ascii: Counter, codec: str, label: str) -> bool:
    """Whether a page with these non-ASCII characters fits the encoding (module docstring)."""
    total = sum(non_ascii.values())
    if total < MIN_NON_ASCII:
        return False
    # C1 controls (U+0080-U+009F) in a page's text are UTF-8 once read as Latin-1 (a "“" left
    # as U+00E2 U+0080 U+009C): mojibake, not text any legacy page holds; its re-encodings are
    # largely valid UTF-8 again and rightly read as such, so the case measures nothing
    if any("\x80" <= char <= "\x9f" for char in non_ascii):
        return False
    outside = sum(count for char, count in non_ascii.items()
                  if not round_trips(char, codec, label))
    return outside <= MAX_OUTSIDE * total


def declared(html: str, label: str, kind: str) -> str:
    """``html`` (its own charset declarations removed) with ``kind``'s declaration of
    ``label``."""
    if kind == "meta":
        tag = f'<meta charset="{label}">'
    elif kind == "http-equiv":
        tag = f'<meta http-equiv="Content-Type" content="text/html; charset={label}">'
    else:
        return html
    head = _HEAD_RE.search(html)
    if head is not None:
        return html[:head.end()] + tag + html[head.end():]
    doctype = _DOCTYPE_RE.match(html)
    at = doctype.end() if doctype else 0
    return html[:at] + tag + html[at:]


def cases(pages: list[dict], encodings: list[tuple[str, str]] = ENCODINGS,
          kinds: tuple[str, ...] = KINDS) -> Iterator[Case]:
    for page in pages:
        non_ascii = Counter({c: n for c, n in Counter(page["html"]).items() if ord(c) > 127})
        undeclared = _DECLARATION_RE.sub("", page["html"])
        for codec, label in encodings:
            if not fits(non_ascii, codec, label):
                continue
            # a character outside the encoding as a character reference, as a legacy site's
            # software writes it
            outside = {ord(c): f"&#{ord(c)};" for c in non_ascii
                       if not round_trips(c, codec, label)}
            written = undeclared.translate(outside) if outside else undeclared
            for kind in kinds:
                document = declared(written, label, kind)
                content_type = f"text/html; charset={label}" if kind == "transport" else None
                yield Case(str(page["id"]), codec, label, kind, document.encode(codec),
                           content_type, document)
