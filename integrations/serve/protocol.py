"""uvicorn's HTTP/1.1 connection (h11) with a timeout for receiving request headers, and JSON
for the requests it cannot parse.

uvicorn times out idle keep-alive connections but not a client that connects and sends its
headers slowly or never: such a connection is held for as long as the client likes, and
enough of them keep a graceful shutdown waiting forever. Here a connection that has not
delivered a whole request head within ``read_timeout_s`` of its first byte (or of being
opened) gets ``408`` and is closed. The body is the application's to time (``app.py``: it
starts once the head has arrived).

Between requests, uvicorn's keep-alive timeout applies as before; the timer here starts again
with the next byte. Bytes of a body the application did not read (a request refused from its
headers) are dropped by uvicorn as they come, under the same timer, so a refused client that
keeps trickling a body is also let go.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


def raw_json_answer(status: int, reason: str, error_type: str, message: str) -> bytes:
    """A whole HTTP/1.1 answer with the service's JSON error body, closing the connection
    (written to the socket directly: no request was parsed that h11 could answer)."""
    body = json.dumps({"error": message, "error_type": error_type}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
            f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n").encode() + body


def read_timeout_protocol(read_timeout_s: float,
                          on_timeout: Callable[[str], None] | None = None) -> type[H11Protocol]:
    """uvicorn's ``http=`` class: ``H11Protocol`` with the request-head timeout.
    ``on_timeout(phase)`` is called for each connection it drops (``"headers"``)."""

    answer = raw_json_answer(408, "Request Timeout", "request_timeout",
                             f"the request headers did not arrive within {read_timeout_s:g} s "
                             "(--request-read-timeout)")

    class ReadTimeoutH11Protocol(H11Protocol):
        _head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self._between_requests():
                self._arm()
            else:
                self._disarm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # idle now: uvicorn's keep-alive timer runs until the next byte (unless a
            # pipelined request has just started)
            self._disarm()

        def send_400_response(self, msg: str) -> None:
            """A request h11 cannot parse (a malformed or oversized head): the JSON error
            answer every other error has, not uvicorn's plain text."""
            self.transport.write(raw_json_answer(400, "Bad Request", "invalid_http",
                                                 f"invalid HTTP request: {msg}"))
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _between_requests(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(read_timeout_s, self._timed_out)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _timed_out(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or not self._between_requests():
                return
            # a partial request head waiting: say why it is dropped; a body nobody reads, or
            # nothing at all: just close
            pending, _ = self.conn.trailing_data
            if self.conn.their_state is h11.IDLE and pending:
                self.transport.write(answer)
            if on_timeout is not None:
                on_timeout("headers")
            self.transport.close()

    return ReadTimeoutH11Protocol
