"""The service's OpenAPI 3.1 document (``GET /openapi.json``), written out by hand: the API is
five routes, and the document states the limits the running service applies."""

from __future__ import annotations

from typing import Any

from pulpie_rt.version import __version__

_ERROR = {"$ref": "#/components/schemas/Error"}


def _answer(description: str, schema: dict | None = None) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": schema or _ERROR}}}


def openapi_document(limits) -> dict[str, Any]:
    """The document for a service running under ``limits`` (a ``limits.Limits``)."""
    extract_errors = {
        "400": _answer("empty_body (no body) or invalid_json (a body that is not JSON)"),
        "413": _answer(f"payload_too_large (body over {limits.payload_limit} bytes) or "
                       f"batch_too_large (over {limits.max_client_batch_size} pages)"),
        "415": _answer("unsupported_media_type: neither application/json nor text/html"),
        "422": _answer("invalid_request: JSON that is not {pages: [...], format: ...}"),
        "429": {**_answer(f"overloaded: {limits.max_concurrent_requests} requests are being "
                          "served; retry after the Retry-After header's seconds"),
                "headers": {"Retry-After": {"schema": {"type": "integer"}}}},
        "503": _answer("loading, load_failed or shutting_down"),
        "504": _answer(f"timeout: not every page finished within {limits.request_timeout_s:g} s; "
                       "`unfinished` lists their ids",
                       {"allOf": [_ERROR, {"type": "object", "properties": {
                           "unfinished": {"type": "array", "items": {}}}}]}),
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "pulpie-rt serve", "version": __version__,
                 "description": "Main content of web pages (Markdown, HTML or text), pages "
                                "batched across requests."},
        "paths": {
            "/v1/extract": {"post": {
                "summary": "Main content of one or more pages, in request order",
                "requestBody": {"required": True, "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/Request"}},
                    "text/html": {"schema": {"type": "string"},
                                  "description": "one raw page; ?id=...&format=... in the "
                                                 "query string, the charset in Content-Type"},
                }},
                "responses": {"200": _answer("one result per page, in order; a page that "
                                             "failed has `error` set and empty `content`",
                                             {"$ref": "#/components/schemas/Response"}),
                              **extract_errors},
            }},
            "/health": {"get": {"summary": "200 once the model is loaded, 503 before",
                                "responses": {"200": {"description": "ready"},
                                              "503": _answer("loading, load_failed or "
                                                             "shutting_down")}}},
            "/info": {"get": {"summary": "model, backend, device, limits, version",
                              "responses": {"200": {"description": "JSON object"}}}},
            "/metrics": {"get": {"summary": "Prometheus text format",
                                 "responses": {"200": {"description": "text/plain"}}}},
            "/openapi.json": {"get": {"summary": "this document",
                                      "responses": {"200": {"description": "JSON object"}}}},
        },
        "components": {"schemas": {
            "Request": {"type": "object", "required": ["pages"], "properties": {
                "pages": {"type": "array", "minItems": 1,
                          "maxItems": limits.max_client_batch_size,
                          "items": {"$ref": "#/components/schemas/Page"}},
                "format": {"enum": ["markdown", "html", "text"], "default": "markdown"},
            }},
            "Page": {"type": "object", "required": ["html"], "properties": {
                "id": {"description": "echoed on the result (default: the page's index)"},
                "html": {"type": "string"},
                "content_type": {"type": "string",
                                 "description": "the page's own Content-Type (charset)"},
            }},
            "Response": {"type": "object", "properties": {
                "format": {"type": "string"},
                "results": {"type": "array", "items": {"$ref": "#/components/schemas/Result"}},
            }},
            "Result": {"type": "object", "properties": {
                "id": {}, "content": {"type": "string"},
                "error": {"type": ["string", "null"],
                          "description": '"<stage>: <reason>" when the page failed'},
                "n_blocks": {"type": "integer"}, "n_main": {"type": "integer"},
                "truncated": {"type": ["string", "null"],
                              "description": "what the page limits cut from the page"},
                "empty_reason": {"type": ["string", "null"],
                                 "description": "why a page without error has no content"},
                "encoding": {"type": ["string", "null"],
                             "description": "the encoding page bytes were decoded with (null "
                                            "for a page sent as a JSON string)"},
            }},
            "Error": {"type": "object", "required": ["error", "error_type"], "properties": {
                "error": {"type": "string"}, "error_type": {"type": "string"},
            }},
        }},
    }
