"""The service's OpenAPI 3.1 document (``GET /openapi.json``): the routes written out here (a
few, with the limits the running service applies), a result's schema derived from the page
record's one definition (``runtime.flow.schema``)."""

from __future__ import annotations

from typing import Any

from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, favor_settings
from pulpie_rt.runtime.flow.schema import (
    DEFAULT_FORMAT,
    OUTPUT_FORMATS,
    SWITCHES,
    json_schema,
    record_fields,
)
from pulpie_rt.version import __version__

_ERROR = {"$ref": "#/components/schemas/Error"}


def _answer(description: str, schema: dict | None = None) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": schema or _ERROR}}}


def openapi_document(limits, api_key: bool = False, favor: str = DEFAULT_FAVOR
                     ) -> dict[str, Any]:
    """The document for a service running under ``limits`` (a ``limits.Limits``) and
    deciding with ``favor`` unless a request asks for another (``--favor``); with
    ``api_key``, every route but the probes needs the bearer token."""
    favor_schema = {"enum": list(favor_settings()), "default": favor,
                    "description": "precision keeps fewer blocks (the decision threshold "
                                   "raised), recall more (lowered), balanced the model's own; "
                                   "default: the service's (--favor)"}
    unauthorized = {"401": _answer("unauthorized: no valid 'Authorization: Bearer <key>'")} \
        if api_key else {}
    internal = {"500": _answer("internal: a failure of the service itself")}
    extract_errors = {
        "400": _answer("empty_body (no body) or invalid_json (a body that is not JSON, or "
                       "nested too deeply)"),
        **unauthorized,
        "408": _answer(f"request_timeout: the body did not arrive within "
                       f"{limits.request_read_timeout_s:g} s of the headers (the headers "
                       "have as long); the connection is closed"),
        "413": _answer(f"payload_too_large (body over {limits.payload_limit} bytes, refused "
                       "from its Content-Length before it is read) or batch_too_large (over "
                       f"{limits.max_client_batch_size} pages)"),
        "415": _answer("unsupported_media_type: neither application/json nor text/html"),
        "422": _answer("invalid_request: JSON that is not {pages: [...], format: ...}, or a "
                       "format, switch or favor that is not one of its choices"),
        "429": {**_answer(f"overloaded: {limits.max_concurrent_requests} requests are being "
                          f"served, or {limits.max_bytes_in_flight} bytes of request bodies "
                          "are held; retry after the Retry-After header's seconds"),
                "headers": {"Retry-After": {"schema": {"type": "integer"}}}},
        **internal,
        "503": _answer("loading, load_failed, not_serving or shutting_down"),
        "504": _answer(f"timeout: not every page finished within {limits.request_timeout_s:g} s; "
                       "`unfinished` lists their ids",
                       {"allOf": [_ERROR, {"type": "object", "properties": {
                           "unfinished": {"type": "array", "items": {}}}}]}),
    }
    ready = {"get": {"summary": "readiness: 200 while a request would be served; 503 while "
                                "loading, when extraction cannot run, and from SIGTERM on",
                     "security": [],
                     "responses": {"200": {"description": "ready"},
                                   "503": _answer("loading, load_failed, not_serving or "
                                                  "shutting_down")}}}
    security = {"security": [{"bearer": []}]} if api_key else {}
    return {
        "openapi": "3.1.0",
        **security,
        "info": {"title": "pulpie-rt serve", "version": __version__,
                 "description": "Main content of web pages (Markdown, HTML or text), pages "
                                "batched across requests."},
        "paths": {
            "/v1/extract": {"post": {
                "summary": "Main content of one or more pages, in request order",
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Request"}},
                    "text/html": {"schema": {"type": "string"},
                                  "description": "one raw page; ?id=...&format=...&links="
                                                 "false...&favor=... in the query string, "
                                                 "the charset in Content-Type"},
                }},
                "responses": {"200": _answer("one result per page, in order; a page that "
                                             "failed has `error` set and empty content",
                                             {"$ref": "#/components/schemas/Response"}),
                              **extract_errors},
            }},
            "/inspect": {
                "get": {"summary": "the page inspector's form: paste a page's HTML or upload "
                                   "its file",
                        "responses": {"200": {"description": "an HTML form",
                                              "content": {"text/html": {
                                                  "schema": {"type": "string"}}}},
                                      **unauthorized}},
                "post": {
                    "summary": "the page inspector's report of one page: its blocks in page "
                               "order, kept (main) and dropped (other), each block's score "
                               "(log-odds of main) against the decision threshold, and the "
                               "Markdown; one self-contained HTML page (nothing fetched, no "
                               "script of the page runs)",
                    "requestBody": {"required": True, "content": {
                        "multipart/form-data": {"schema": {"$ref": "#/components/schemas/"
                                                                   "InspectForm"}},
                        "application/x-www-form-urlencoded": {"schema": {
                            "$ref": "#/components/schemas/InspectForm"}},
                        "text/html": {"schema": {"type": "string"},
                                      "description": "one raw page, the charset in "
                                                     "Content-Type, ?favor=... in the query "
                                                     "string"},
                    }},
                    "responses": {"200": {"description": "the report",
                                          "content": {"text/html": {
                                              "schema": {"type": "string"}}}},
                                  **{code: answer for code, answer in extract_errors.items()
                                     if code != "422"},
                                  "422": _answer("invalid_request: a form that cannot be "
                                                 "read, or a favor that is not one of its "
                                                 "choices")},
                }},
            "/live": {"get": {"summary": "liveness: 200 while the process answers (loading "
                                         "and shutting down included)",
                              "security": [],
                              "responses": {"200": {"description": "alive"}}}},
            "/ready": ready,
            "/health": {"get": {**ready["get"], "summary": "the same as /ready"}},
            "/info": {"get": {"summary": "model, provider, device, limits, version (no file "
                                         "system paths)",
                              "responses": {"200": {"description": "JSON object"},
                                            **unauthorized}}},
            "/metrics": {"get": {"summary": "Prometheus text format",
                                 "responses": {"200": {"description": "text/plain"},
                                               **unauthorized}}},
            "/openapi.json": {"get": {"summary": "this document",
                                      "responses": {"200": {"description": "JSON object"},
                                                    **unauthorized}}},
        },
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
                       "schemas": {
            "Request": {"type": "object", "required": ["pages"], "properties": {
                "pages": {"type": "array", "minItems": 1,
                          "maxItems": limits.max_client_batch_size,
                          "items": {"$ref": "#/components/schemas/Page"}},
                "format": {"enum": list(OUTPUT_FORMATS), "default": DEFAULT_FORMAT,
                           "description": "the content as markdown, html or text; json: the "
                                          "Markdown and each block's label"},
                **{name: {"type": "boolean", "default": True,
                          "description": f"keep the content's {name}"} for name in SWITCHES},
                "favor": favor_schema,
            }},
            "Page": {"type": "object", "required": ["html"], "properties": {
                "id": {"type": ["string", "number", "null"],
                       "description": "echoed on the result (default: the page's index)"},
                "html": {"type": "string"},
                "content_type": {"type": "string",
                                 "description": "the page's own Content-Type (charset)"},
            }},
            "Response": {"type": "object", "properties": {
                "format": {"type": "string"},
                "results": {"type": "array", "items": {"$ref": "#/components/schemas/Result"}},
            }},
            # the record of the format asked for: the content under the format's name
            "Result": {"oneOf": [{"title": f"Result ({name})",
                                  **json_schema(record_fields(name))}
                                 for name in OUTPUT_FORMATS]},
            "InspectForm": {"type": "object", "properties": {
                "html": {"type": "string", "description": "the page's HTML, pasted"},
                "file": {"type": "string", "format": "binary",
                         "description": "the page's file (used when given; its bytes are "
                                        "decoded as the page says)"},
                "favor": favor_schema,
            }},
            "Error": {"type": "object", "required": ["error", "error_type"], "properties": {
                "error": {"type": "string"}, "error_type": {"type": "string"},
            }},
        }},
    }
