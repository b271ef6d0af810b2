"""The service's HTTP API (Starlette): routes, request parsing, limits and error answers.

    POST /v1/extract   pages in, per-page results in order (JSON, or one raw HTML page)
    GET  /health       200 once the model is loaded, 503 before (and while shutting down)
    GET  /info         model, backend, device, limits, version
    GET  /metrics      Prometheus text format (``metrics.py``)
    GET  /openapi.json the API (``openapi.py``); /docs redirects there

Every error answer is JSON ``{"error": "<message>", "error_type": "<kind>"}`` with the status
of ``ERRORS``. A request whose body is refused is still read to its end (up to
``DRAIN_LIMIT`` bytes, then the connection is closed) so that the client, which sends the body
before it reads the answer, gets the answer and not a reset connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from pulpie_rt.integrations.serve.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from pulpie_rt.integrations.serve.openapi import openapi_document
from pulpie_rt.integrations.serve.service import ExtractionService
from pulpie_rt.runtime.flow.pages import PageInput, PageResult
from pulpie_rt.version import __version__

FORMATS = ("markdown", "html", "text")
HTML_TYPES = ("text/html", "application/xhtml+xml")
JSON_TYPES = ("application/json", "")  # no Content-Type: JSON
# A refused body is read up to this many bytes before the answer; past it the connection closes.
DRAIN_LIMIT = 64 * 1024 * 1024
# Bodies and answers past this size are (de)serialised off the event loop.
OFF_LOOP_BYTES = 256 * 1024
RETRY_AFTER_S = 1

# error_type -> HTTP status (the documented answers; README "Serve", openapi.py)
ERRORS = {
    "empty_body": 400,
    "invalid_json": 400,
    "payload_too_large": 413,
    "batch_too_large": 413,
    "unsupported_media_type": 415,
    "invalid_request": 422,
    "overloaded": 429,
    "loading": 503,
    "load_failed": 503,
    "shutting_down": 503,
    "timeout": 504,
}


def error_response(error_type: str, message: str, headers: dict | None = None,
                   **extra: Any) -> JSONResponse:
    """The JSON error answer ``{error, error_type, ...extra}`` with its documented status."""
    return JSONResponse({"error": message, "error_type": error_type, **extra},
                        status_code=ERRORS[error_type], headers=headers)


class RequestRefused(Exception):
    """A request answered with an error before any page started."""

    def __init__(self, error_type: str, message: str, **extra: Any):
        super().__init__(message)
        self.response = error_response(error_type, message, **extra)


class BodyReader:
    """The request body, read at most once, within the payload limit."""

    def __init__(self, request: Request, limit: int):
        self.request = request
        self.limit = limit
        self._chunks: AsyncIterator[bytes] | None = None

    async def read(self) -> bytes:
        """The whole body; ``RequestRefused`` (413) past the limit, after reading it out."""
        declared = self.request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self.drain()
            raise RequestRefused("payload_too_large", self._too_large(int(declared)))
        self._chunks = self.request.stream()
        parts: list[bytes] = []
        size = 0
        async for chunk in self._chunks:
            size += len(chunk)
            if size > self.limit:
                size += await self.drain()
                raise RequestRefused("payload_too_large", self._too_large(size))
            parts.append(chunk)
        return b"".join(parts)

    async def drain(self) -> int:
        """Read and drop what is left of the body (up to ``DRAIN_LIMIT``); bytes read."""
        if self._chunks is None:
            self._chunks = self.request.stream()
        dropped = 0
        with contextlib.suppress(Exception):  # a client that went away: nothing to drain
            async for chunk in self._chunks:
                dropped += len(chunk)
                if dropped > DRAIN_LIMIT:
                    break
        return dropped

    def _too_large(self, size: int) -> str:
        return f"the request body ({size} bytes) is over the payload limit ({self.limit} bytes)"


def parse_pages(body: bytes, media_type: str, content_type: str, query: dict[str, str],
                max_pages: int) -> tuple[list[PageInput], str]:
    """The pages and the output format of a request body; ``RequestRefused`` when it is not
    one (400, 413, 415, 422)."""
    if media_type not in JSON_TYPES and media_type not in HTML_TYPES:
        raise RequestRefused("unsupported_media_type",
                             f"Content-Type {content_type!r} is not supported: send "
                             "application/json or text/html")
    if not body:
        raise RequestRefused("empty_body", "the request body is empty")
    if media_type in HTML_TYPES:  # one raw page; id and format in the query string
        output_format = query.get("format", "markdown")
        check_format(output_format)
        return [PageInput(body, page_id=query.get("id", 0), content_type=content_type)], \
            output_format
    try:
        payload = json.loads(body)
    except ValueError as exc:  # JSONDecodeError, or bytes that are no Unicode text
        raise RequestRefused("invalid_json", f"the body is not valid JSON: {exc}") from exc
    if not isinstance(payload, dict):
        raise RequestRefused("invalid_request", "the body must be a JSON object "
                             '{"pages": [{"id": ..., "html": ...}], "format": ...}')
    output_format = payload.get("format", "markdown")
    check_format(output_format)
    pages = payload.get("pages")
    if not isinstance(pages, list) or not pages:
        raise RequestRefused("invalid_request", '"pages" must be a non-empty list of '
                             '{"id": ..., "html": ..., "content_type": ...}')
    if len(pages) > max_pages:
        raise RequestRefused("batch_too_large", f"{len(pages)} pages in one request: the "
                             f"maximum is {max_pages} (--max-client-batch-size)")
    inputs = []
    for index, page in enumerate(pages):
        if not isinstance(page, dict):
            raise RequestRefused("invalid_request", f"pages[{index}] is not a JSON object")
        page_content_type = page.get("content_type")
        if page_content_type is not None and not isinstance(page_content_type, str):
            raise RequestRefused("invalid_request", f"pages[{index}].content_type must be a "
                                 "string")
        # an "html" that is missing or not a string is that page's own error (the page flow's
        # "input: ..."), not the request's
        inputs.append(PageInput(page.get("html"), page_id=page.get("id", index),
                                content_type=page_content_type))
    return inputs, output_format


def check_format(output_format: Any) -> None:
    if output_format not in FORMATS:
        raise RequestRefused("invalid_request", f"format {output_format!r} is not one of "
                             f"{', '.join(FORMATS)}")


def result_json(result: PageResult, output_format: str) -> dict[str, Any]:
    """One page's answer: its id, its content in ``output_format``, its error, block counts,
    what the page limits cut (``truncated``) and why a page without error has no content
    (``empty_reason``)."""
    if result.error is not None:
        content = ""
    elif output_format == "markdown":
        content = result.markdown
    elif output_format == "html":
        content = result.html
    else:
        content = result.text
    return {"id": result.page_id, "content": content, "error": result.error,
            "n_blocks": result.n_blocks, "n_main": result.n_main,
            "truncated": result.truncated, "empty_reason": result.empty_reason,
            "encoding": result.encoding}


def render_json(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class ServeApp:
    """The routes of one service; ``app`` is the ASGI application."""

    def __init__(self, service: ExtractionService,
                 on_load_failed: Callable[[str], None] | None = None):
        self.service = service
        self.limits = service.limits
        self.metrics = service.metrics
        self.on_load_failed = on_load_failed
        self.active_requests = 0  # extract requests admitted and not answered (event loop only)
        self.app = Starlette(routes=[
            Route("/v1/extract", self.extract, methods=["POST"]),
            Route("/health", self.health, methods=["GET"]),
            Route("/info", self.info, methods=["GET"]),
            Route("/metrics", self.metrics_text, methods=["GET"]),
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/docs", self.docs, methods=["GET"]),
        ], lifespan=self.lifespan)

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Load the model in a thread (the server answers /health 503 meanwhile); at shutdown,
        once the server has answered every request, stop the batcher and the workers."""
        loader = threading.Thread(target=self.service.load, name="pulpie-rt-load", daemon=True)
        loader.start()
        watcher = asyncio.create_task(self._watch_load())
        try:
            yield
        finally:
            watcher.cancel()
            await asyncio.to_thread(loader.join)
            await asyncio.to_thread(self.service.close)

    async def _watch_load(self) -> None:
        await asyncio.to_thread(self.service.loaded.wait)
        if self.service.state == "failed" and self.on_load_failed is not None:
            self.on_load_failed(self.service.load_error or "unknown error")

    # -- routes

    async def health(self, request: Request) -> Response:
        refused = self._not_ready()
        return refused.response if refused else JSONResponse({"status": "ok"})

    async def info(self, request: Request) -> Response:
        return JSONResponse({**self.service.info(), "version": __version__,
                             "limits": self.limits.as_dict(), "formats": list(FORMATS)})

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document(self.limits))

    async def docs(self, request: Request) -> Response:
        return RedirectResponse("/openapi.json")

    async def extract(self, request: Request) -> Response:
        started = time.perf_counter()
        self.metrics.in_progress.inc()
        try:
            response = await self._extract(request)
        finally:
            self.metrics.in_progress.dec()
        self.metrics.requests.labels(status=str(response.status_code)).inc()
        self.metrics.request_seconds.observe(time.perf_counter() - started)
        return response

    # -- internals

    def _not_ready(self) -> RequestRefused | None:
        state = self.service.state
        if state == "ready":
            return None
        if state == "loading":
            return RequestRefused("loading", "the model is loading")
        if state == "failed":
            return RequestRefused("load_failed",
                                  f"the model did not load: {self.service.load_error}")
        return RequestRefused("shutting_down", "the service is shutting down")

    async def _extract(self, request: Request) -> Response:
        body = BodyReader(request, self.limits.payload_limit)
        refused = self._not_ready()
        if refused is None and self.active_requests >= self.limits.max_concurrent_requests:
            refused = RequestRefused(
                "overloaded", f"{self.active_requests} requests are being served, the maximum "
                "(--max-concurrent-requests): retry later")
            refused.response.headers["Retry-After"] = str(RETRY_AFTER_S)
        if refused is not None:
            await body.drain()
            return refused.response
        self.active_requests += 1
        try:
            return await self._serve(request, body)
        except RequestRefused as exc:
            return exc.response
        finally:
            self.active_requests -= 1

    async def _serve(self, request: Request, body: BodyReader) -> Response:
        data = await body.read()
        content_type = request.headers.get("content-type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        query = dict(request.query_params)
        parse = partial(parse_pages, data, media_type, content_type, query,
                        self.limits.max_client_batch_size)
        pages, output_format = (await asyncio.to_thread(parse) if len(data) > OFF_LOOP_BYTES
                                else parse())
        loop = asyncio.get_running_loop()
        with_text = output_format == "text"
        tickets = [self.service.submit(page, loop, with_text) for page in pages]
        timeout = self.limits.request_timeout_s
        _, unfinished = await asyncio.wait([t.future for t in tickets], timeout=timeout)
        if unfinished:
            late = [t for t in tickets if not t.future.done()]
            for ticket in late:
                ticket.cancel()
            return error_response(
                "timeout", f"the request timed out after {timeout:g} s with {len(late)} of "
                f"{len(tickets)} pages not finished", unfinished=[t.page.page_id for t in late])
        results = [result_json(t.future.result(), output_format) for t in tickets]
        payload = {"format": output_format, "results": results}
        size = sum(len(r["content"]) for r in results)
        content = (await asyncio.to_thread(render_json, payload) if size > OFF_LOOP_BYTES
                   else render_json(payload))
        return Response(content, media_type="application/json")


def create_app(service: ExtractionService,
               on_load_failed: Callable[[str], None] | None = None) -> Starlette:
    """The ASGI application of ``service`` (it loads the model at start-up, in a thread)."""
    return ServeApp(service, on_load_failed).app
