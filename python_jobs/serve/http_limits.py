"""Connection limits for the HTTP servers (collector and read API): uvicorn's httptools protocol with
bounds on the request head, on the time to send it, and on the number of open connections.

uvicorn bounds neither the size nor the arrival time of a request's head with httptools (its
``h11_max_incomplete_event_size`` is h11's only), so one client could hold memory with a header that
never ends, or a connection for ever by trickling it. ``LimitedHttpToolsProtocol`` adds:

- ``max_header_bytes``: the bytes of a request before the end of its headers (request line and
  headers). A request over it is answered 431 and its connection closed; the bytes are counted
  as they arrive, before the parser buffers them, so an endless header costs at most this much.
  (Bytes that arrive in the same read as the end of the previous request, which only a pipelining
  client sends, are not counted: such a head may pass the limit by at most one read.)
- ``header_timeout_seconds``: a request must complete its headers within this time of the connection
  opening, or of the end of the previous response on a kept-alive connection. The deadline is one
  timer per connection (not pushed back by each read), so a client that trickles a byte at a time is
  cut off at it: answered 408 when it has sent part of a request, closed silently when it has sent
  nothing (an idle connection). A timer is armed only while a request head is incomplete at the end
  of a read, and at connection open: a request that arrives whole costs no timer.
- ``keep_alive_timeout_seconds``: an idle kept-alive connection is closed after it (uvicorn's
  ``timeout_keep_alive``); it may not exceed ``header_timeout_seconds``.
- ``max_connections``: a connection beyond it is answered 503 and closed at once, before anything of
  it is read.

431 and 408 are written, then the server half-closes and drops what still arrives for at most
``LINGER_SECONDS`` before it closes: closing a socket with unread bytes would reset the connection
and could destroy the answer before the client reads it.

After the headers, the body is the app's business (``CollectorConfig.max_body_bytes`` and
``body_timeout_seconds``); this class adds one attribute test per read of a body.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

DEFAULT_MAX_HEADER_BYTES = 64 * 1024
DEFAULT_HEADER_TIMEOUT_SECONDS = 10.0
DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS = 5.0
DEFAULT_MAX_CONNECTIONS = 1000
# How long a refused connection (431, 408) drains what the client still sends before it is closed.
LINGER_SECONDS = 2.0

# What the protocol is reading: a request body (the app's), a request head (counted), or nothing
# more (answered and closing).
_BODY, _HEAD, _REFUSED = 0, 1, 2


@dataclass(frozen=True)
class HttpLimits:
    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES
    header_timeout_seconds: float = DEFAULT_HEADER_TIMEOUT_SECONDS
    keep_alive_timeout_seconds: float = DEFAULT_KEEP_ALIVE_TIMEOUT_SECONDS
    max_connections: int = DEFAULT_MAX_CONNECTIONS

    def __post_init__(self) -> None:
        if self.max_header_bytes < 1024:
            raise ValueError("the header size limit must be at least 1KiB")
        if self.header_timeout_seconds <= 0 or self.keep_alive_timeout_seconds <= 0:
            raise ValueError("the header and keep-alive timeouts must be positive")
        if self.keep_alive_timeout_seconds > self.header_timeout_seconds:
            raise ValueError(
                "the keep-alive timeout may not exceed the header timeout (a kept-alive connection must "
                "complete its next request's headers within the header timeout of the previous answer)"
            )
        if self.max_connections < 1:
            raise ValueError("the connection limit must be at least 1")

    def uvicorn_options(self) -> dict[str, Any]:
        """The keyword arguments of ``uvicorn.Config`` / ``uvicorn.run`` that apply these limits."""
        return {"http": limited_protocol(self), "timeout_keep_alive": self.keep_alive_timeout_seconds}


def limited_protocol(limits: HttpLimits) -> type[LimitedHttpToolsProtocol]:
    """A ``LimitedHttpToolsProtocol`` subclass bound to ``limits`` (uvicorn builds one per connection
    from the class alone, so the limits travel as class attributes)."""
    return type(
        "LimitedHttpToolsProtocol",
        (LimitedHttpToolsProtocol,),
        {
            "max_header_bytes": limits.max_header_bytes,
            "header_timeout_seconds": limits.header_timeout_seconds,
            "max_connections": limits.max_connections,
        },
    )


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """See the module docstring. Use ``limited_protocol`` to bind limits other than the defaults."""

    max_header_bytes = DEFAULT_MAX_HEADER_BYTES
    header_timeout_seconds = DEFAULT_HEADER_TIMEOUT_SECONDS
    max_connections = DEFAULT_MAX_CONNECTIONS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading = _HEAD
        self._head_bytes = 0  # bytes received of the current request head
        self._head_started = 0.0  # loop time the current head's deadline counts from
        self._head_timer: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None

    # Connection events

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            self._reading = _REFUSED
            self._write_answer(503, "too many connections; try again later")
            self.transport.close()
            return
        self._head_started = self.loop.time()
        self._head_timer = self.loop.call_at(self._head_started + self.header_timeout_seconds, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._linger):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._linger = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        reading = self._reading
        if reading == _BODY:  # the hot path: a body's bytes are the app's to bound
            super().data_received(data)
            return
        if reading == _REFUSED:
            return  # draining until the client closes or the linger ends
        room = self.max_header_bytes - self._head_bytes
        if len(data) <= room:
            self._head_bytes += len(data)
            super().data_received(data)
        else:
            # The head must end within ``room`` bytes: parse those, and the rest only if it did.
            self._head_bytes = self.max_header_bytes
            super().data_received(data[:room])
            if self._reading == _HEAD and self._head_bytes == self.max_header_bytes:
                if not self.transport.is_closing():  # (a parse error has been answered 400)
                    self._header_too_large()
                return
            if self.parser is not None and not self.transport.is_closing():
                self.data_received(data[room:])
                return
        if (
            self._reading == _HEAD
            and self._head_bytes
            and self._head_timer is None
            and not self.transport.is_closing()
        ):
            # A head cut across reads: its deadline counts from the connection or the last answer.
            self._head_timer = self.loop.call_at(
                self._head_started + self.header_timeout_seconds, self._head_timed_out
            )

    # Parser callbacks

    def on_headers_complete(self) -> None:
        self._reading = _BODY
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        # What follows belongs to the next request's head (pipelined, or after the answer).
        self._reading = _HEAD
        self._head_bytes = 0
        super().on_message_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing() or self._reading != _HEAD:
            return
        self._head_started = self.loop.time()
        if self._head_bytes and self._head_timer is None:  # a pipelined head already started
            self._head_timer = self.loop.call_at(
                self._head_started + self.header_timeout_seconds, self._head_timed_out
            )

    # Refusals

    def _header_too_large(self) -> None:
        if self.cycle is not None and not self.cycle.response_complete:
            # Pipelined behind a request still being answered: an answer now would be read as
            # that request's, so the connection is just closed.
            self._reading = _REFUSED
            self.transport.close()
            return
        self._refuse(431, f"the request line and headers exceed {self.max_header_bytes} bytes")

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or self._reading != _HEAD:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            return  # still answering the previous request; on_response_complete restarts the clock
        if self._head_bytes:
            self._refuse(408, f"the request headers did not arrive within {self.header_timeout_seconds:g} s")
        else:
            self._reading = _REFUSED
            self.transport.close()  # an idle connection: nothing to answer

    def _refuse(self, status: int, message: str) -> None:
        """Answers ``status`` and closes: half-close, drop what still arrives, close after the linger."""
        self._reading = _REFUSED
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        self._write_answer(status, message)
        self.flow.resume_reading()
        try:
            self.transport.write_eof()
        except (NotImplementedError, RuntimeError, OSError):  # e.g. TLS has no half-close
            self.transport.close()
            return
        self._linger = self.loop.call_later(LINGER_SECONDS, self.transport.close)

    def _write_answer(self, status: int, message: str) -> None:
        body = message.encode("ascii", "replace")
        content = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            content.extend([name, b": ", value, b"\r\n"])
        content.extend([
            b"content-type: text/plain; charset=utf-8\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
            body,
        ])
        self.transport.write(b"".join(content))
