"""The service's HTTP API (Starlette): routes, request admission, limits and error answers.

    POST /v1/extract   pages in, per-page results in order (JSON, or one raw HTML page)
    GET  /live         200 while the process answers (liveness)
    GET  /ready        200 while a request would be served, 503 otherwise (readiness);
                       /health is the same
    GET  /info         model, provider, device, limits, version (no file system paths)
    GET  /metrics      Prometheus text format (``metrics.py``)
    GET  /openapi.json the API (``openapi.py``); /docs shows it (Swagger UI)
    GET  /inspect      a form to paste a page or upload its file; POST /inspect: the page
                       inspector's report of it (``runtime.inspector``), HTML

Every error answer, on every route, is JSON ``{"error": "<message>", "error_type": "<kind>"}``
with the status of ``ERRORS``; a failure of our own is a JSON 500 ``internal``.

Admission of an extract request, in order: ready; a bearer token when the service has an API
key; a ``Content-Length`` over the payload limit is refused at once (413) without reading the
body; the body's bytes are reserved against ``max_bytes_in_flight`` (429 past it: the
announced length when the headers arrive, a chunked body as it arrives); the body must
arrive within ``request_read_timeout_s`` (408 and the connection closed); only then does the
request take one of ``max_concurrent_requests`` slots (429 past it), so clients that stall
hold no slot. A refused body is not read: uvicorn drops its bytes as they come (under the
head timer of ``protocol.py``) and the connection stays usable.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html as html_lib
import json
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from functools import partial
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

from pulpie_rt.integrations.serve.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from pulpie_rt.integrations.serve.openapi import openapi_document
from pulpie_rt.integrations.serve.service import ExtractionService
from pulpie_rt.runtime.flow.engine import favor_settings
from pulpie_rt.runtime.flow.pages import PageInput, PageResult, describe
from pulpie_rt.runtime.flow.schema import (
    DEFAULT_FORMAT,
    OUTPUT_FORMATS,
    SWITCHES,
    Output,
    record,
)
from pulpie_rt.runtime.io import loads_json
from pulpie_rt.version import __version__

logger = logging.getLogger("pulpie_rt.serve")

HTML_TYPES = ("text/html", "application/xhtml+xml")
JSON_TYPES = ("application/json", "")  # no Content-Type: JSON
# Bodies and answers past this size are (de)serialised off the event loop.
OFF_LOOP_BYTES = 256 * 1024
RETRY_AFTER_S = 1
# Routes open without the API key: the probes of an orchestrator, which carry no token.
OPEN_PATHS = frozenset({"/live", "/ready", "/health"})
# Swagger UI's files (swagger-ui-bundle-v2, Apache-2.0), served from the package: no CDN
DOCS_ASSETS = "/docs/assets"
# The status counted for a request whose client went away before its answer (nginx's).
CLIENT_CLOSED = 499

# error_type -> HTTP status (the documented answers; README "Serve", openapi.py)
ERRORS = {
    "empty_body": 400,
    "invalid_json": 400,
    "invalid_http": 400,  # a request head h11 cannot parse (protocol.py)
    "unauthorized": 401,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "payload_too_large": 413,
    "batch_too_large": 413,
    "unsupported_media_type": 415,
    "invalid_request": 422,
    "overloaded": 429,
    "internal": 500,
    "loading": 503,
    "load_failed": 503,
    "not_serving": 503,
    "shutting_down": 503,
    "timeout": 504,
}


def error_response(error_type: str, message: str, headers: dict | None = None,
                   **extra: Any) -> JSONResponse:
    """The JSON error answer ``{error, error_type, ...extra}`` with its documented status."""
    return JSONResponse({"error": message, "error_type": error_type, **extra},
                        status_code=ERRORS[error_type], headers=headers)


class RequestRefused(Exception):
    """A request answered with an error before any page started. ``close``: the connection
    closes after the answer (a body left half-sent by a client that stalled)."""

    def __init__(self, error_type: str, message: str, close: bool = False,
                 headers: dict | None = None, **extra: Any):
        super().__init__(message)
        headers = dict(headers or {})
        if close:
            headers["Connection"] = "close"
        self.response = error_response(error_type, message, headers or None, **extra)


class ClientGone(Exception):
    """The client closed the connection before its request was whole."""


def overloaded(message: str) -> RequestRefused:
    return RequestRefused("overloaded", f"{message}: retry later",
                          headers={"Retry-After": str(RETRY_AFTER_S)})


def parse_pages(body: bytes, media_type: str, content_type: str, query: dict[str, str],
                max_pages: int) -> tuple[list[PageInput], Output]:
    """The pages and the output asked for (format and switches) of a request body;
    ``RequestRefused`` when it is not one (400, 413, 415, 422)."""
    if media_type not in JSON_TYPES and media_type not in HTML_TYPES:
        raise RequestRefused("unsupported_media_type",
                             f"Content-Type {content_type!r} is not supported: send "
                             "application/json or text/html")
    if not body:
        raise RequestRefused("empty_body", "the request body is empty")
    if media_type in HTML_TYPES:  # one raw page; id, format and switches in the query string
        switches = {}
        for name in SWITCHES:
            value = query.get(name, "true")
            if value not in ("true", "false"):
                raise RequestRefused("invalid_request", f"{name} must be true or false, not "
                                     f"{value!r}")
            switches[name] = value == "true"
        output = output_asked(query.get("format", DEFAULT_FORMAT), switches)
        favor = favor_asked(query.get("favor"))
        return [PageInput(body, page_id=query.get("id", 0), content_type=content_type,
                          favor=favor)], output
    try:
        payload = loads_json(body)  # orjson, the standard library where it refuses the body
    except ValueError as exc:  # JSONDecodeError, or bytes that are no Unicode text
        raise RequestRefused("invalid_json", f"the body is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # arrays or objects nested past the parser's depth
        raise RequestRefused("invalid_json", "the body is not valid JSON: it is nested too "
                             "deeply") from exc
    if not isinstance(payload, dict):
        raise RequestRefused("invalid_request", "the body must be a JSON object "
                             '{"pages": [{"id": ..., "html": ...}], "format": ...}')
    output = output_asked(payload.get("format", DEFAULT_FORMAT),
                          {name: payload.get(name, True) for name in SWITCHES})
    favor = favor_asked(payload.get("favor"))
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
        page_id = page.get("id", index)
        if page_id is not None and not isinstance(page_id, (str, int, float)):
            raise RequestRefused("invalid_request", f"pages[{index}].id must be a string, a "
                                 "number or null")
        # an "html" that is missing or not a string is that page's own error (the page flow's
        # "input: ..."), not the request's
        inputs.append(PageInput(page.get("html"), page_id=page_id,
                                content_type=page_content_type, favor=favor))
    return inputs, output


def output_asked(output_format: Any, switches: dict[str, Any]) -> Output:
    """The ``Output`` a request asks for; ``RequestRefused`` (422) naming what it cannot be."""
    try:
        return Output(output_format, **switches)
    except ValueError as exc:
        raise RequestRefused("invalid_request", str(exc)) from exc


def favor_asked(favor: Any) -> str | None:
    """The favor a request asks for (None: the service's, ``--favor``); ``RequestRefused``
    (422) naming the choices for anything else."""
    settings = favor_settings()
    if favor is None or (isinstance(favor, str) and favor in settings):
        return favor
    raise RequestRefused("invalid_request", f"favor {favor!r} is not one of "
                         f"{', '.join(settings)}")


def result_json(result: PageResult, output: Output) -> dict[str, Any]:
    """One page's answer: its record (``flow.schema``) as ``output`` asks."""
    return record(result.page_id, result, output)


def docs_page(document: dict[str, Any]) -> str:
    """Swagger UI over ``document`` (held in the page: it needs no second request, which an
    API key would refuse), its script and style from ``DOCS_ASSETS``."""
    spec = json.dumps(document).replace("</", "<\\/")  # no "</script>" inside the script
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pulpie-rt serve: API</title>
<link rel="stylesheet" href="{DOCS_ASSETS}/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="{DOCS_ASSETS}/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({{spec: {spec}, dom_id: "#swagger-ui"}});</script>
</body></html>
"""


INSPECT_FORM = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pulpie-rt serve: inspect a page</title>
<style>body { font-family: system-ui, sans-serif; margin: 24px; max-width: 60em; }
textarea { width: 100%; height: 22em; font-family: ui-monospace, monospace; }
fieldset { margin: 12px 0; }</style></head>
<body><h1>Inspect a page</h1>
<p>The page's blocks as the model decided them: kept and dropped, each block's score against
the decision threshold, and the Markdown beside them.</p>
<form method="post" action="/inspect" enctype="multipart/form-data">
<fieldset><legend>Paste the page's HTML</legend>
<textarea name="html" id="html" placeholder="&lt;html&gt;..."></textarea></fieldset>
<fieldset><legend>or upload its file (its bytes are decoded as the page's own charset
says)</legend><input type="file" name="file" id="file" accept=".html,.htm,text/html">
</fieldset>
<fieldset><legend>Favor</legend>{favor_choices}</fieldset>
<button type="submit" id="inspect">Inspect</button>
</form></body></html>
"""


def inspect_form(default_favor: str) -> str:
    """The form, its favor choices checked at the service's own (``--favor``)."""
    choices = "\n".join(
        f'<label><input type="radio" name="favor" value="{name}" id="favor-{name}"'
        f'{" checked" if name == default_favor else ""}> {name}</label>'
        for name in favor_settings())
    return INSPECT_FORM.replace("{favor_choices}", choices)


# the form: its own style, no script, posts only to this service
FORM_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'"


def report_csp(report: str) -> str:
    """The report's own Content-Security-Policy (the one its <meta> states), as a header."""
    start = report.index('http-equiv="Content-Security-Policy" content="') + 46
    return html_lib.unescape(report[start:report.index('"', start)])


async def inspect_page_of(request: Request, data: bytes, limits
                          ) -> tuple[str | bytes, str | None, str, str | None]:
    """``(page, content_type, source, favor)`` of a POST /inspect: a form's ``file`` (its
    bytes, its part's Content-Type) or ``html`` (pasted text), or a raw ``text/html`` body
    (its Content-Type's charset, ``?favor=`` in the query string); the form's or the query's
    ``favor`` (None: the service's); ``RequestRefused`` (400, 415, 422) otherwise."""
    from starlette.datastructures import UploadFile
    from starlette.formparsers import FormParser, MultiPartParser

    content_type = request.headers.get("content-type", "")
    media_type = content_type.split(";", 1)[0].strip().lower()
    if media_type in HTML_TYPES:
        if not data:
            raise RequestRefused("empty_body", "the request has no body: send a page")
        return data, content_type, request.query_params.get("id", "page"), \
            favor_asked(request.query_params.get("favor"))

    async def body():
        yield data

    if media_type == "multipart/form-data":
        parser = MultiPartParser(request.headers, body(), max_files=1, max_fields=4,
                                 max_part_size=limits.payload_limit)
    elif media_type == "application/x-www-form-urlencoded":
        parser = FormParser(request.headers, body(), max_fields=4,
                            max_part_size=limits.payload_limit)
    else:
        raise RequestRefused("unsupported_media_type", f"POST /inspect takes a form "
                             "(multipart/form-data or application/x-www-form-urlencoded) or "
                             f"text/html, not {media_type or 'no Content-Type'!r}")
    try:
        form = await parser.parse()
    except Exception as exc:  # python-multipart's and Starlette's refusals of a bad body
        raise RequestRefused("invalid_request", f"the form cannot be read: {describe(exc)}"
                             ) from exc
    try:
        favor = favor_asked(form.get("favor"))
    except RequestRefused:
        await form.close()
        raise
    upload = form.get("file")
    if isinstance(upload, UploadFile) and upload.filename:
        page = await upload.read()
        await form.close()
        if page:
            return page, upload.headers.get("content-type"), upload.filename, favor
    pasted = form.get("html")
    await form.close()
    if isinstance(pasted, str) and pasted.strip():
        return pasted, None, "pasted page", favor
    raise RequestRefused("empty_body", "the form has no page: paste its HTML in 'html' or "
                         "upload its file in 'file'")


def render_json(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def declared_length(request: Request) -> int | None:
    """The request's ``Content-Length`` (h11 has checked it is one number), None when the body
    is chunked."""
    value = request.headers.get("content-length")
    return int(value) if value is not None and value.isdigit() else None


class BytesHeld:
    """Request body bytes one request holds against ``max_bytes_in_flight``."""

    __slots__ = ("bytes",)

    def __init__(self) -> None:
        self.bytes = 0


class ServeApp:
    """The routes of one service; ``asgi`` is the ASGI application."""

    def __init__(self, service: ExtractionService,
                 on_load_failed: Callable[[str], None] | None = None,
                 api_key: str | None = None):
        self.service = service
        self.limits = service.limits
        self.metrics = service.metrics
        self.on_load_failed = on_load_failed
        self.api_key = api_key.encode() if api_key else None
        self.active_requests = 0  # requests whole and being served (event loop only)
        self.bytes_in_flight = 0  # body bytes held by requests (event loop only)
        self.shutdown_deadline: float | None = None  # time.monotonic() by which to be gone
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = asyncio.Event()  # set at SIGTERM (bound to the loop at first use)
        self.app = Starlette(routes=[
            Route("/v1/extract", self.extract, methods=["POST"]),
            Route("/live", self.live, methods=["GET"]),
            Route("/ready", self.ready, methods=["GET"]),
            Route("/health", self.ready, methods=["GET"]),
            Route("/info", self.info, methods=["GET"]),
            Route("/metrics", self.metrics_text, methods=["GET"]),
            Route("/openapi.json", self.openapi, methods=["GET"]),
            Route("/docs", self.docs, methods=["GET"]),
            Route("/inspect", self.inspect, methods=["GET", "POST"]),
            Mount(DOCS_ASSETS, StaticFiles(directory=str(swagger_ui_path))),
        ], lifespan=self.lifespan, exception_handlers={HTTPException: self.http_error,
                                                       Exception: self.internal_error})

    async def asgi(self, scope, receive, send) -> None:
        """The application: the API key checked, then the routes."""
        if (scope["type"] == "http" and self.api_key is not None
                and scope["path"] not in OPEN_PATHS
                and not scope["path"].startswith(DOCS_ASSETS + "/")  # the package's files
                and not self._authorized(scope)):
            response = error_response("unauthorized", "a valid API key is needed: send "
                                      "'Authorization: Bearer <key>'",
                                      headers={"WWW-Authenticate": "Bearer"})
            if scope["path"] == "/v1/extract":
                self.metrics.requests.labels(status="401").inc()
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                scheme, _, token = value.partition(b" ")
                return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(),
                                                                           self.api_key)
        return False

    # -- start and stop

    @contextlib.asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        """Load the model in a thread (the server answers /ready 503 meanwhile); at shutdown,
        once the server has answered the requests it had (or given up on them at the
        shutdown timeout), stop the service within what is left of that timeout."""
        self._loop = asyncio.get_running_loop()
        loader = threading.Thread(target=self.service.load, name="pulpie-rt-load", daemon=True)
        loader.start()
        watcher = asyncio.create_task(self._watch_load())
        try:
            yield
        finally:
            watcher.cancel()
            if self.shutdown_deadline is None:
                self.shutdown_deadline = time.monotonic() + self.limits.shutdown_timeout_s
            await asyncio.to_thread(loader.join, self._time_left())
            await asyncio.to_thread(self.service.close, self._time_left())

    def _time_left(self) -> float:
        return max(0.5, self.shutdown_deadline - time.monotonic())

    def begin_shutdown(self) -> None:
        """SIGTERM: readiness says no at once, requests still being received are answered 503
        and dropped, the service stops waiting for groups to fill. Safe to call from a signal
        handler."""
        if self.shutdown_deadline is None:
            self.shutdown_deadline = time.monotonic() + self.limits.shutdown_timeout_s
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed already
                self._loop.call_soon_threadsafe(self._stop)

    def _stop(self) -> None:
        self._stopping.set()
        self.service.stop_waiting()

    async def _watch_load(self) -> None:
        await asyncio.to_thread(self.service.loaded.wait)
        if self.service.state == "failed" and self.on_load_failed is not None:
            self.on_load_failed(self.service.load_error or "unknown error")

    # -- routes

    async def live(self, request: Request) -> Response:
        return JSONResponse({"status": "alive"})

    async def ready(self, request: Request) -> Response:
        refused = self._not_ready()
        return refused.response if refused else JSONResponse({"status": "ready"})

    async def info(self, request: Request) -> Response:
        return JSONResponse({**self.service.info(), "version": __version__,
                             "limits": self.limits.as_dict(), "formats": list(OUTPUT_FORMATS)})

    async def metrics_text(self, request: Request) -> Response:
        return Response(self.metrics.exposition(), media_type=METRICS_CONTENT_TYPE)

    async def openapi(self, request: Request) -> Response:
        return JSONResponse(openapi_document(self.limits, self.api_key is not None,
                                             self.service.favor))

    async def docs(self, request: Request) -> Response:
        return HTMLResponse(docs_page(openapi_document(self.limits, self.api_key is not None,
                                                       self.service.favor)))

    async def inspect(self, request: Request) -> Response:
        """GET: the form; POST: the report of the page it sent (admitted as an extract
        request is: the same limits, the same engine and queue)."""
        if request.method == "GET":
            return HTMLResponse(inspect_form(self.service.favor),
                                headers={"Content-Security-Policy": FORM_CSP})
        try:
            return await self._extract(request, self._serve_inspect)
        except RequestRefused as exc:
            return exc.response
        except ClientGone:
            return Response(status_code=CLIENT_CLOSED)

    async def _serve_inspect(self, request: Request, data: bytes) -> Response:
        from pulpie_rt.runtime.inspector import InspectError, inspection_of, report_html

        html, content_type, source, favor = await inspect_page_of(request, data, self.limits)
        page = PageInput(html, page_id=source, content_type=content_type, favor=favor)
        ticket = self.service.submit(page, asyncio.get_running_loop(), Output())
        timeout = self.limits.request_timeout_s
        try:
            result = await asyncio.wait_for(asyncio.shield(ticket.future), timeout)
        except TimeoutError:
            ticket.cancel()
            return error_response("timeout", f"the request timed out after {timeout:g} s "
                                  "with 1 of 1 pages not finished", unfinished=[source])
        try:
            inspection = await asyncio.to_thread(inspection_of, self.service.engine, result,
                                                 html, content_type, source, None, favor)
        except InspectError as exc:
            return error_response("internal", f"internal error: {exc}")
        report = await asyncio.to_thread(report_html, inspection)
        return HTMLResponse(report, headers={"Content-Security-Policy": report_csp(report)})

    async def http_error(self, request: Request, exc: HTTPException) -> Response:
        """Starlette's own refusals (no such route, method) as JSON."""
        error_type = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code)
        if error_type is None:
            return JSONResponse({"error": exc.detail, "error_type": "http_error"},
                                status_code=exc.status_code, headers=exc.headers)
        return error_response(error_type, f"{request.method} {request.url.path}: {exc.detail}",
                              headers=exc.headers)

    async def internal_error(self, request: Request, exc: Exception) -> Response:
        logger.error("pulpie-rt serve: %s %s failed", request.method, request.url.path,
                     exc_info=exc)
        return error_response("internal", f"internal error: {describe(exc)}")

    async def extract(self, request: Request) -> Response:
        started = time.perf_counter()
        self.metrics.in_progress.inc()
        try:
            response = await self._extract(request)
        except RequestRefused as exc:
            response = exc.response
        except ClientGone:
            response = Response(status_code=CLIENT_CLOSED)  # nobody reads it: counted only
        except Exception as exc:  # a bug of ours: still a JSON answer, still counted
            logger.exception("pulpie-rt serve: a request failed")
            response = error_response("internal", f"internal error: {describe(exc)}")
        finally:
            self.metrics.in_progress.dec()
        self.metrics.requests.labels(status=str(response.status_code)).inc()
        self.metrics.request_seconds.observe(time.perf_counter() - started)
        return response

    # -- internals

    def _not_ready(self) -> RequestRefused | None:
        if self._stopping.is_set():
            return RequestRefused("shutting_down", "the service is shutting down")
        state = self.service.state
        if state == "ready":
            if self.service.serving():
                return None
            return RequestRefused("not_serving", "the service cannot extract pages now "
                                  "(an extraction thread has stopped)")
        if state == "loading":
            return RequestRefused("loading", "the model is loading")
        if state == "failed":
            return RequestRefused("load_failed",
                                  f"the model did not load: {self.service.load_error}")
        return RequestRefused("shutting_down", "the service is shutting down")

    def _hold(self, held: BytesHeld, size: int) -> None:
        """Reserve ``size`` more body bytes for a request; 429 past ``max_bytes_in_flight``."""
        if self.bytes_in_flight + size > self.limits.max_bytes_in_flight:
            raise overloaded(f"{self.bytes_in_flight} bytes of requests are held, the "
                             f"maximum is {self.limits.max_bytes_in_flight} "
                             "(--max-bytes-in-flight)")
        held.bytes += size
        self.bytes_in_flight += size
        self.metrics.bytes_in_flight.set(self.bytes_in_flight)

    def _release(self, held: BytesHeld) -> None:
        self.bytes_in_flight -= held.bytes
        held.bytes = 0
        self.metrics.bytes_in_flight.set(self.bytes_in_flight)

    def _too_many_requests(self) -> RequestRefused | None:
        if self.active_requests >= self.limits.max_concurrent_requests:
            return overloaded(f"{self.active_requests} requests are being served, the maximum "
                              "(--max-concurrent-requests)")
        return None

    async def _extract(self, request: Request, serve=None) -> Response:
        refused = self._not_ready()
        if refused is not None:
            raise refused
        declared = declared_length(request)
        limit = self.limits.payload_limit
        if declared is not None and declared > limit:
            raise RequestRefused("payload_too_large", f"the request body ({declared} bytes) is "
                                 f"over the payload limit ({limit} bytes)")
        refused = self._too_many_requests()  # the slots are full now: no use reading the body
        if refused is not None:
            raise refused
        held = BytesHeld()
        try:
            self._hold(held, declared or 0)
            data = await self._read_body(request, held)
            refused = self._too_many_requests()
            if refused is not None:
                raise refused
            self.active_requests += 1
            try:
                return await (serve or self._serve)(request, data)
            finally:
                self.active_requests -= 1
        finally:
            self._release(held)

    async def _read_body(self, request: Request, held: BytesHeld) -> bytes:
        """The whole body, within the payload limit, the bytes in flight and the read
        timeout; a shutdown ends the wait (503)."""
        deadline = time.monotonic() + self.limits.request_read_timeout_s
        limit = self.limits.payload_limit
        parts: list[bytes] = []
        size = 0
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            while True:
                message = await self._receive(request, stopping, deadline)
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk = message.get("body", b"")
                if chunk:
                    size += len(chunk)
                    if size > limit:
                        raise RequestRefused("payload_too_large", f"the request body is over "
                                             f"the payload limit ({limit} bytes)")
                    if size > held.bytes:
                        self._hold(held, size - held.bytes)
                    parts.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(parts)
        finally:
            stopping.cancel()

    async def _receive(self, request: Request, stopping: asyncio.Future,
                       deadline: float) -> dict:
        remaining = deadline - time.monotonic()
        receiving = asyncio.ensure_future(request.receive())
        done, _ = await asyncio.wait({receiving, stopping}, timeout=max(0.0, remaining),
                                     return_when=asyncio.FIRST_COMPLETED)
        if receiving in done:
            return receiving.result()
        receiving.cancel()
        if stopping in done:
            raise RequestRefused("shutting_down", "the service is shutting down", close=True)
        self.metrics.read_timeouts.labels(phase="body").inc()
        raise RequestRefused("request_timeout", "the request body did not arrive within "
                             f"{self.limits.request_read_timeout_s:g} s "
                             "(--request-read-timeout)", close=True)

    async def _serve(self, request: Request, data: bytes) -> Response:
        content_type = request.headers.get("content-type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        query = dict(request.query_params)
        parse = partial(parse_pages, data, media_type, content_type, query,
                        self.limits.max_client_batch_size)
        pages, output = (await asyncio.to_thread(parse) if len(data) > OFF_LOOP_BYTES
                         else parse())
        del data
        loop = asyncio.get_running_loop()
        tickets = [self.service.submit(page, loop, output) for page in pages]
        try:
            timeout = self.limits.request_timeout_s
            _, unfinished = await asyncio.wait([t.future for t in tickets], timeout=timeout)
            if unfinished:
                late = [t for t in tickets if not t.future.done()]
                return error_response(
                    "timeout", f"the request timed out after {timeout:g} s with {len(late)} "
                    f"of {len(tickets)} pages not finished",
                    unfinished=[t.page.page_id for t in late])
            results = [result_json(t.future.result(), output) for t in tickets]
        finally:
            for ticket in tickets:  # answered, timed out or cancelled: nobody waits any more
                if not ticket.future.done():
                    ticket.cancel()
        payload = {"format": output.format, "results": results}
        size = sum(len(r[output.content_format]) for r in results)
        content = (await asyncio.to_thread(render_json, payload) if size > OFF_LOOP_BYTES
                   else render_json(payload))
        return Response(content, media_type="application/json")


def create_app(service: ExtractionService,
               on_load_failed: Callable[[str], None] | None = None,
               api_key: str | None = None) -> Callable:
    """The ASGI application of ``service`` (it loads the model at start-up, in a thread)."""
    return ServeApp(service, on_load_failed, api_key).asgi
