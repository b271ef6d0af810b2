"""page bytes (+ the transport's content type) -> text: the one decoding of every entry point.

``Extractor``, ``Pipeline``, ``pulpie-rt extract`` / ``run`` (JSONL, Parquet, WARC), the
service and the Ray and datatrove integrations all read a page given as bytes through
``decode_input``; a page given as ``str`` was decoded by its caller and is taken as it is.

The decision runs in the compiled core (``core/src/decode.rs``, which documents it), in this
order:

1. a byte order mark (UTF-8, UTF-16LE/BE). The HTML standard puts the BOM before the
   transport's charset, and so do we: a BOM is written by the tool that wrote the bytes,
   while a header is a server's default that is wrong for a share of crawled pages; with no
   BOM (every re-encoded page of the acceptance, ``parity/decode_parity.py``) the order of the
   two does not matter;
2. the transport's charset (an HTTP or WARC header, a caller's ``content_type``);
3. ``<meta charset>`` / ``<meta http-equiv="Content-Type">`` (the standard's prescan of the
   first 1,024 bytes, then the rest of the page);
4. the core's detector (``core/src/detect.rs``; chosen over charset-normalizer by
   ``bench/detector.py``: more pages right, ~40x faster);
5. UTF-8 with replacement.

A declared legacy encoding on bytes that are valid UTF-8 (and not all ASCII) is read as UTF-8,
and a declared UTF-8 on bytes without one valid multi-byte sequence goes to the detector: the
bytes settle those two contradictions, frequent in crawls.

Labels are the Encoding Standard's (``iso-8859-1`` and ``ascii`` name windows-1252, ...); the
encoding recorded is its Encoding Standard name (``windows-1252``, ``Shift_JIS``, ``UTF-8``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pulpie_rt.runtime import native

__all__ = ["Decoded", "decode", "decode_input", "SOURCES"]

# how the encoding was decided (``Decoded.source``)
SOURCES = ("bom", "transport", "meta", "meta-late", "utf-8-content", "detector", "default")


@dataclass(frozen=True)
class Decoded:
    """A page's text, the encoding it was read with and how that was decided (``SOURCES``)."""

    text: str
    encoding: str
    source: str


def decode(data: bytes, content_type: str | None = None) -> Decoded:
    """The text of page bytes; ``content_type`` is the transport's (``text/html;
    charset=...``, or a bare label such as ``"windows-1251"``), None when there is none."""
    text, encoding, source = native.decode_page(bytes(data), content_type)
    return Decoded(text, encoding, source)


def decode_input(html: str | bytes | bytearray | memoryview, content_type: str | None = None
                 ) -> tuple[str, str | None]:
    """``(text, encoding)`` of a page as a caller gives it: bytes are decoded (``decode``), a
    ``str`` is already text (encoding None, ``content_type`` unused)."""
    if isinstance(html, str):
        return html, None
    if isinstance(html, native.PageText):  # text as the core takes it (a JSONL input's)
        return html.text(), None
    decoded = decode(bytes(html), content_type)
    return decoded.text, decoded.encoding
