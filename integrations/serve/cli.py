"""``pulpie-rt serve [MODEL]``: the HTTP service on uvicorn (extra ``serve``)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys

from pulpie_rt.integrations.serve.limits import Limits, default_workers
from pulpie_rt.runtime.flow.engine import DEFAULT_FAVOR, FAVOR_HELP, favor_settings
from pulpie_rt.runtime.model.devices import backend_names
from pulpie_rt.runtime.model.resolve import DEFAULT_MODEL

_DEFAULTS = Limits()
# Where the API key may come from instead of --api-key (a command line is visible to every
# user of the machine in `ps`).
API_KEY_VARIABLE = "PULPIE_RT_API_KEY"
# Seconds an idle keep-alive connection stays open. uvicorn's default (5 s) equals httpx's own
# idle expiry: a client that reuses a connection just as the server closes it gets a dropped
# connection. Longer than common clients' expiry, the client always closes first.
KEEP_ALIVE_S = 75


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from pulpie_rt.integrations.serve.app import ServeApp
        from pulpie_rt.integrations.serve.protocol import read_timeout_protocol
        from pulpie_rt.integrations.serve.service import ExtractionService
    except ImportError as exc:
        print(f"pulpie-rt serve: {exc.name} is missing: pip install 'pulpie-rt[serve]'",
              file=sys.stderr)
        return 2
    limits = Limits(
        max_batch_tokens=args.max_batch_tokens,
        max_batch_wait_ms=args.max_batch_wait_ms,
        max_concurrent_requests=args.max_concurrent_requests,
        max_client_batch_size=args.max_client_batch_size,
        payload_limit=args.payload_limit,
        max_bytes_in_flight=args.max_bytes_in_flight,
        request_timeout_s=args.request_timeout,
        request_read_timeout_s=args.request_read_timeout,
        shutdown_timeout_s=args.shutdown_timeout,
    )
    service = ExtractionService(args.model, backend=args.backend, device=args.device,
                                workers=args.workers, threads=args.threads, limits=limits,
                                profile=args.profile, favor=args.favor)
    load_failures: list[str] = []

    def on_load_failed(message: str) -> None:
        load_failures.append(message)
        server.should_exit = True

    logging.basicConfig(level=logging.INFO, format="%(levelname)s: %(message)s")
    api_key = args.api_key or os.environ.get(API_KEY_VARIABLE) or None
    app = ServeApp(service, on_load_failed, api_key)
    protocol = read_timeout_protocol(
        limits.request_read_timeout_s,
        lambda phase: service.metrics.read_timeouts.labels(phase=phase).inc())
    config = uvicorn.Config(app.asgi, host=args.host, port=args.port, http=protocol,
                            log_level=args.log_level, access_log=args.access_log,
                            interface="asgi3", lifespan="on", timeout_keep_alive=KEEP_ALIVE_S,
                            timeout_graceful_shutdown=limits.shutdown_timeout_s)

    class GracefulServer(uvicorn.Server):
        def handle_exit(self, sig, frame) -> None:
            # no new request can come: readiness says so, requests still arriving are
            # dropped, queued pages run without waiting for groups to fill; uvicorn waits
            # for the requests in flight up to --shutdown-timeout
            app.begin_shutdown()
            super().handle_exit(sig, frame)

    server = GracefulServer(config)
    # uvicorn shuts down gracefully on SIGTERM, then raises the signal again for the handler it
    # found installed; Python's default one would end the process with status 143. A graceful
    # stop is a success: the handler in place meanwhile ignores it, and the command returns 0.
    previous = signal.signal(signal.SIGTERM, _stopped)
    try:
        server.run()
    finally:
        signal.signal(signal.SIGTERM, previous)
    if load_failures:
        print(f"pulpie-rt serve: the model did not load: {load_failures[0]}", file=sys.stderr)
        return 1
    return 0


def _stopped(signum, frame) -> None:
    """SIGTERM after uvicorn's graceful shutdown: nothing left to do."""


def _positive(kind):
    """An argparse type: a number of ``kind`` above 0."""

    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
        return value

    return parse


def register(subparsers) -> None:
    serve = subparsers.add_parser(
        "serve", help="HTTP service: POST /v1/extract, pages batched across requests",
        description="Serve main-content extraction over HTTP (README, 'Serve'). Pages of all "
                    "requests share one queue; a batcher fills engine batches from it under "
                    "--max-batch-tokens. Needs the 'serve' extra.")
    serve.add_argument("model", nargs="?", default=DEFAULT_MODEL,
                       help="default (the embedded model, or $PULPIE_RT_MODEL when set), a hub "
                            "name (orange-small|orange-base|orange-large), checkpoint dir, "
                            f"bundle dir or engine file (default {DEFAULT_MODEL})")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument("--profile", default=None,
                       help="speed/quality profile of the model (the embedded default model: "
                            "fast or accurate; default: the bundle's own, see the model card)")
    serve.add_argument("--favor", choices=list(favor_settings()), default=DEFAULT_FAVOR,
                       help=FAVOR_HELP)
    serve.add_argument("--backend", choices=backend_names(), default="auto")
    serve.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: auto)")
    serve.add_argument("--workers", type=_positive(int), default=None,
                       help="extraction threads, each running a group of queued pages "
                            "through the one engine (default: the CPUs this process may use, "
                            f"here {default_workers()})")
    serve.add_argument("--threads", type=_positive(int), default=None,
                       help="the engine's intra-op threads (default: the engine's)")
    serve.add_argument("--max-batch-tokens", type=_positive(int),
                       default=_DEFAULTS.max_batch_tokens,
                       help="chunk tokens per batch across requests (default %(default)s)")
    serve.add_argument("--max-batch-wait-ms", type=float, default=_DEFAULTS.max_batch_wait_ms,
                       help="longest wait for a batch to fill when the engine is idle "
                            "(default %(default)s)")
    serve.add_argument("--max-concurrent-requests", type=_positive(int),
                       default=_DEFAULTS.max_concurrent_requests,
                       help="requests served at once; past it 429 with Retry-After "
                            "(default %(default)s)")
    serve.add_argument("--max-client-batch-size", type=_positive(int),
                       default=_DEFAULTS.max_client_batch_size,
                       help="pages in one request; past it 413 (default %(default)s)")
    serve.add_argument("--payload-limit", type=_positive(int), default=_DEFAULTS.payload_limit,
                       help="bytes of one request body; past it 413 (default %(default)s)")
    serve.add_argument("--max-bytes-in-flight", type=_positive(int),
                       default=_DEFAULTS.max_bytes_in_flight,
                       help="request body bytes held at once (announced lengths reserved when "
                            "the headers arrive); past it 429 (default %(default)s)")
    serve.add_argument("--request-timeout", type=_positive(float),
                       default=_DEFAULTS.request_timeout_s,
                       help="seconds a request may take once received; past it 504 listing "
                            "the pages not finished (default %(default)s)")
    serve.add_argument("--request-read-timeout", type=_positive(float),
                       default=_DEFAULTS.request_read_timeout_s,
                       help="seconds a client has to send the request headers, and again its "
                            "body; past it 408 and the connection is closed (default "
                            "%(default)s)")
    serve.add_argument("--shutdown-timeout", type=_positive(float),
                       default=_DEFAULTS.shutdown_timeout_s,
                       help="seconds SIGTERM waits for the requests received to be answered "
                            "before it drops them and exits (default %(default)s)")
    serve.add_argument("--api-key", default=None,
                       help="a bearer token every request but /live, /ready and /health must "
                            f"carry (Authorization: Bearer KEY); also ${API_KEY_VARIABLE}, "
                            "which keeps it out of the process list")
    serve.add_argument("--log-level", default="info",
                       choices=["critical", "error", "warning", "info", "debug"])
    serve.add_argument("--access-log", action="store_true", help="log every request")
    serve.set_defaults(func=cmd_serve)
