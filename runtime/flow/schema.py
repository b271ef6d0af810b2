"""The page record: one definition of the fields every door gives a page's result.

A door's record is the page's own fields (``PAGE_FIELDS``: what the input said, echoed where
the door keeps its input) and the result's (``result_fields``): the main content in the
format asked for, under that format's name (``markdown``, ``html`` or ``text``), then
``RESULT_FIELDS``. Every door derives what it writes from here:

- ``pulpie-rt run``: JSONL lines (``record``) and Parquet parts (``arrow_schema``);
- the service: each result of ``POST /v1/extract`` (``record``) and its OpenAPI document's
  ``Result`` (``json_schema``);
- Ray Data: the columns added to every row (``result_fields``, ``arrow_schema``; the row keeps
  its own id);
- datatrove: the content in ``Document.text``, the other result fields in
  ``Document.metadata`` (``metadata``; the document keeps its own id);
- Python: ``PageResult``'s attributes of the same names, and the C SDK: its
  ``pulpie_rt_result_<name>`` accessors (``core/include/pulpie_rt.h``; tests/test_schema.py
  checks both against this list).

A field's value is the ``PageResult`` attribute of its name, so a field the engine's result
gains is added here once and every door writes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# the formats the main content is given in: a ``PageResult`` attribute each
CONTENT_FORMATS = ("markdown", "html", "text")
DEFAULT_FORMAT = "markdown"
# a field's type, as the user guide names it (``id``: a string in files, a string or number
# as a service caller sent it)
TYPES = {"string": "string", "integer": "integer", "id": "string, number"}


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
        kind = "integer" if self.type == "integer" else "string"
        return {"type": [kind, "null"] if self.nullable else kind, "description": self.meaning}

    def arrow_type(self) -> Any:
        """The field's Arrow type (every Arrow column is nullable, as Arrow's default)."""
        import pyarrow as pa

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


def check_format(content_format: str) -> None:
    if content_format not in CONTENT_FORMATS:
        raise ValueError(f"format {content_format!r} is not one of {', '.join(CONTENT_FORMATS)}")


def content_field(content_format: str = DEFAULT_FORMAT) -> Field:
    """The main content's field, named by its format (``""`` for a failed page)."""
    check_format(content_format)
    return Field(content_format, "string", False,
                 f"{_CONTENT_MEANING[content_format]} (\"\" on error or when there is none)")


def result_fields(content_format: str = DEFAULT_FORMAT) -> tuple[Field, ...]:
    """A result's fields, in order: the content, then ``RESULT_FIELDS``."""
    return (content_field(content_format), *RESULT_FIELDS)


def record_fields(content_format: str = DEFAULT_FORMAT, *, url: bool = False
                  ) -> tuple[Field, ...]:
    """A record's fields, in order: ``id``, the result's, and ``url`` when the input has it."""
    return (ID, *result_fields(content_format), *((URL,) if url else ()))


def result_values(result: Any, content_format: str = DEFAULT_FORMAT) -> dict[str, Any]:
    """``result``'s (a ``PageResult``'s) value of each result field, in order."""
    return {f.name: getattr(result, f.name) for f in result_fields(content_format)}


def columns(results: Sequence[Any], content_format: str = DEFAULT_FORMAT) -> dict[str, list]:
    """``results``' values as columns, one per result field, in order (Ray's added columns, a
    pandas frame's)."""
    return {f.name: [getattr(r, f.name) for r in results] for f in result_fields(content_format)}


def record(page_id: Any, result: Any, content_format: str = DEFAULT_FORMAT, *,
           error: str | None = None, url: str | None = None) -> dict[str, Any]:
    """One page's record: ``page_id``, ``result``'s values, ``url`` when given. ``error``, when
    given, is the page's own (an input the reader could not use) in place of the result's."""
    values = {ID.name: page_id, **result_values(result, content_format)}
    if error is not None:
        values["error"] = error
    if url is not None:
        values[URL.name] = url
    return values


def metadata(result: Any) -> dict[str, Any]:
    """The result fields but the content (a datatrove document's ``metadata``; the content is
    its ``text``)."""
    return {f.name: getattr(result, f.name) for f in RESULT_FIELDS}


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
