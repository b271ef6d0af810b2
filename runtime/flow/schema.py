"""The page record: one definition of the fields every door gives a page's result.

A door's record is the page's own fields (``PAGE_FIELDS``: what the input said, echoed where
the door keeps its input) and the result's (``result_fields``): the main content in the
format asked for, under that format's name (``markdown``, ``html`` or ``text``), then
``RESULT_FIELDS``, and with the ``json`` format each block's label (``LABELS``). What is
asked is an ``Output``: the format, and whether links, images and tables are kept. Every door
derives what it writes from here:

- ``pulpie-rt run``: JSONL lines (``record``) and Parquet parts (``arrow_schema``);
- the service: each result of ``POST /v1/extract`` (``record``) and its OpenAPI document's
  ``Result`` (``json_schema``);
- Ray Data: the columns added to every row (``columns``, ``arrow_schema``; the row keeps its
  own id);
- datatrove: the content in ``Document.text``, the other result fields in
  ``Document.metadata`` (``metadata``; the document keeps its own id);
- Python: ``PageResult``'s attributes of the same names, and the C SDK: its
  ``pulpie_rt_result_<name>`` accessors (``core/include/pulpie_rt.h``; tests/test_schema.py
  checks both against this list).

A field's value is the ``PageResult`` attribute of its name (the content:
``PageResult.content``), so a field the engine's result gains is added here once and every
door writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin

# the formats the main content is given in: a ``PageResult`` attribute each
CONTENT_FORMATS = ("markdown", "html", "text")
# what a door may be asked for: a content format, or json (the record with the Markdown and
# each block's label)
OUTPUT_FORMATS = (*CONTENT_FORMATS, "json")
DEFAULT_FORMAT = "markdown"
# a field's type, as the user guide names it (``id``: a string in files, a string or number
# as a service caller sent it; ``labels``: block id -> "main" | "other"; ``strings``: a list
# of strings)
TYPES = {"string": "string", "integer": "integer", "id": "string, number",
         "labels": "object", "strings": "array of strings"}
# what a reader may leave out of the content (``Output``'s switches)
SWITCHES = ("links", "images", "tables")


@dataclass(frozen=True)
class Output:
    """What a door writes of each page: ``format`` (one of ``OUTPUT_FORMATS``) and whether the
    content keeps its links (False: their text without their targets), images and tables.
    ``ValueError`` names a format or a switch it cannot take."""

    format: str = DEFAULT_FORMAT
    links: bool = True
    images: bool = True
    tables: bool = True

    def __post_init__(self) -> None:
        if self.format not in OUTPUT_FORMATS:
            raise ValueError(f"format {self.format!r} is not one of {', '.join(OUTPUT_FORMATS)}")
        for name in SWITCHES:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false, not {value!r}")

    @property
    def content_format(self) -> str:
        """The content's format: the Markdown for ``json``."""
        return DEFAULT_FORMAT if self.format == "json" else self.format

    def describe(self) -> str:
        """The format and what is left out, e.g. ``text without links, tables``."""
        dropped = [name for name in SWITCHES if not getattr(self, name)]
        return self.format + (f" without {', '.join(dropped)}" if dropped else "")

    def content(self, result: Any) -> str:
        """``result``'s content as asked."""
        return result.content(self.content_format, links=self.links, images=self.images,
                              tables=self.tables)


def output_of(output: Output | str) -> Output:
    """``output``, or the ``Output`` of a format name."""
    return output if isinstance(output, Output) else Output(output)


@dataclass(frozen=True)
class Field:
    """One field of the record: its name, its type (one of ``TYPES``), whether it may be null,
    and what it means."""

    name: str
    type: str
    nullable: bool
    meaning: str

    def json_schema(self) -> dict[str, Any]:
        """The field as a JSON Schema (OpenAPI 3.1) property."""
        if self.type == "id":
            return {"type": ["string", "number", "null"], "description": self.meaning}
        if self.type == "labels":
            return {"type": "object", "additionalProperties": {"enum": ["main", "other"]},
                    "description": self.meaning}
        if self.type == "strings":
            return {"type": "array", "items": {"type": "string"}, "description": self.meaning}
        kind = "integer" if self.type == "integer" else "string"
        return {"type": [kind, "null"] if self.nullable else kind, "description": self.meaning}

    def arrow_type(self) -> Any:
        """The field's Arrow type (every Arrow column is nullable, as Arrow's default)."""
        import pyarrow as pa

        if self.type == "labels":
            return pa.map_(pa.string(), pa.string())
        if self.type == "strings":
            return pa.list_(pa.string())
        return pa.int64() if self.type == "integer" else pa.string()


ID = Field("id", "id", True, "the page's id (a WARC record's WARC-Record-ID; the service: "
                              "as sent, else the page's index in the request)")
URL = Field("url", "string", True, "the WARC record's target URI (WARC inputs only)")
# what the input said about the page, echoed: the service and pulpie-rt run write them (url
# for WARC inputs); Ray's rows and datatrove's documents keep their own
PAGE_FIELDS = (ID, URL)

_CONTENT_MEANING = {
    "markdown": "the main content as Markdown",
    "html": "the main content as HTML",
    "text": "the main content as plain text, one line per block",
}
RESULT_FIELDS = (
    Field("n_main", "integer", False, "blocks labelled main"),
    Field("n_other", "integer", False, "blocks labelled other"),
    Field("error", "string", True, '"<stage>: <reason>" for a page that failed, else null'),
    Field("truncated", "string", True, "what the page limits cut from the page, else null"),
    Field("empty_reason", "string", True, "why a page without error has no content, else "
                                          "null"),
    Field("encoding", "string", True, "what the page's bytes were decoded with (null for a "
                                      "page given as text)"),
)
# what the page's own markup says of it, read by the core in the same parse (core/src/metadata):
# each field's first value in order of trust, JSON-LD, OpenGraph and article:*, the other
# <meta>, <time datetime>, the page's <h1> or <title>; null (authors: []) where it says none
METADATA_FIELDS = (
    Field("title", "string", True, "the page's title: JSON-LD's headline, og:title, "
                                   "meta, else its <h1> or <title>"),
    Field("authors", "strings", False, "the page's authors as its markup names them (JSON-LD, "
                                       "meta author, article:author), [] when none"),
    Field("published", "string", True, "when the page was published, ISO 8601 "
                                       '("2024-03-05" or "2024-03-05T10:30:00+01:00")'),
    Field("modified", "string", True, "when the page was last modified, ISO 8601"),
    Field("site_name", "string", True, "the site's name (JSON-LD's WebSite or publisher, "
                                       "og:site_name)"),
    Field("language", "string", True, "the page's language, an ISO 639 code: declared (<html "
                                      "lang>, Content-Language, JSON-LD, og:locale), else "
                                      "detected from the main content; null when unclear"),
    Field("canonical_url", "string", True, "<link rel=canonical>, else og:url, resolved "
                                           "against <base href> and the record's url; else the "
                                           "record's url"),
    Field("description", "string", True, "the page's description (JSON-LD, og:description, "
                                         "meta description)"),
)
RESULT_FIELDS = (*RESULT_FIELDS, *METADATA_FIELDS)


LABELS = Field("labels", "labels", False, 'each block\'s label, {block id: "main" | "other"}, '
                                           "in page order (the json format)")


def content_field(content_format: str = DEFAULT_FORMAT) -> Field:
    """The main content's field, named by its format (``""`` for a failed page)."""
    if content_format not in CONTENT_FORMATS:
        raise ValueError(f"format {content_format!r} is not one of "
                         f"{', '.join(CONTENT_FORMATS)}")
    return Field(content_format, "string", False,
                 f"{_CONTENT_MEANING[content_format]} (\"\" on error or when there is none)")


@lru_cache(maxsize=64)  # asked once per record written: the same few outputs
def result_fields(output: Output | str = DEFAULT_FORMAT) -> tuple[Field, ...]:
    """A result's fields, in order: the content, ``RESULT_FIELDS``, ``LABELS`` for json."""
    output = output_of(output)
    return (content_field(output.content_format), *RESULT_FIELDS,
            *((LABELS,) if output.format == "json" else ()))


def record_fields(output: Output | str = DEFAULT_FORMAT, *, url: bool = False
                  ) -> tuple[Field, ...]:
    """A record's fields, in order: ``id``, the result's, and ``url`` when the input has it."""
    return (ID, *result_fields(output), *((URL,) if url else ()))


def result_values(result: Any, output: Output | str = DEFAULT_FORMAT) -> dict[str, Any]:
    """``result``'s (a ``PageResult``'s) value of each result field, in order. A content the
    core cannot render (where the Markdown specification raises on the pruned HTML) is empty,
    and ``error`` says why."""
    output = output_of(output)
    failed = None
    try:
        content = output.content(result)
    except Exception as exc:  # (the imports here: not on each record's way)
        from pulpie_rt.runtime import native
        from pulpie_rt.runtime.flow.pages import describe

        if not isinstance(exc, (native.CoreError, native.SpecificationRaises)):
            raise
        content, failed = "", f"markdown: {describe(exc)}"
    content_name = output.content_format
    values = {f.name: content if f.name == content_name else getattr(result, f.name)
              for f in result_fields(output)}
    if failed is not None and values["error"] is None:
        values["error"] = failed
    return values


def columns(results: Sequence[Any], output: Output | str = DEFAULT_FORMAT) -> dict[str, list]:
    """``results``' values as columns, one per result field, in order (Ray's added columns, a
    pandas frame's)."""
    rows = [result_values(r, output) for r in results]
    return {f.name: [row[f.name] for row in rows] for f in result_fields(output)}


def record(page_id: Any, result: Any, output: Output | str = DEFAULT_FORMAT, *,
           error: str | None = None, url: str | None = None) -> dict[str, Any]:
    """One page's record: ``page_id``, ``result``'s values, ``url`` when given. ``error``, when
    given, is the page's own (an input the reader could not use) in place of the result's."""
    values = {ID.name: page_id, **result_values(result, output)}
    if error is not None:
        values["error"] = error
    if url is not None:
        values[URL.name] = url
        # what the page names, resolved against where it was fetched (the core knows only
        # its <base href>); the record's own URL where it names none
        canonical = values["canonical_url"]
        values["canonical_url"] = urljoin(url, canonical) if canonical else url
    return values


def metadata(result: Any, output: Output | str = DEFAULT_FORMAT) -> dict[str, Any]:
    """The result fields but the content (what a datatrove document's ``metadata`` gets; the
    content is its ``text``)."""
    values = result_values(result, output)
    del values[output_of(output).content_format]
    return values


def arrow_schema(fields: Sequence[Field]) -> Any:
    """An Arrow schema of ``fields``."""
    import pyarrow as pa

    return pa.schema([(f.name, f.arrow_type()) for f in fields])


def json_schema(fields: Sequence[Field]) -> dict[str, Any]:
    """A JSON Schema object of ``fields``, each one required and no other."""
    return {"type": "object", "required": [f.name for f in fields],
            "properties": {f.name: f.json_schema() for f in fields},
            "additionalProperties": False}


def fields_table(fields: Sequence[Field]) -> str:
    """``fields`` as a Markdown table (the user guide's)."""
    rows = ["| field | type | meaning |", "|---|---|---|"]
    for f in fields:
        kind = TYPES[f.type] + (" or null" if f.nullable else "")
        meaning = f.meaning.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
        rows.append(f"| `{f.name}` | {kind} | {meaning} |")
    return "\n".join(rows)
