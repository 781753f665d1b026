"""``python -m netaclaw.serve [Daphne's options] netaclaw.asgi:application``: Daphne, with a
WebSocket over its size limit closed with 1009 instead of a TCP reset.

Daphne hands the limits to autobahn, whose default on any failed connection — a frame over
``--websocket-max-message-size`` included — is ``failByDrop``: it aborts the TCP connection,
and the client sees a reset, not the 1009 close README promises (issue 27 item 13). This
server sets ``failByDrop=False`` on Daphne's WebSocket factory (autobahn's public option;
Daphne's ``server_class`` hook), so autobahn sends the close frame with its code and waits
for the client's before it drops the connection. Everything else is Daphne's command line.

A client that does not read what it is sent (a frozen tab, a hostile client) cannot make
the server hold its events without bound (issue 27 item 11): once more than
``NETACLAW_WS_MAX_PENDING_BYTES`` wait in its connection's send buffer, the connection is
dropped (the page reconnects and resumes from the stored history; CONTRACT §8).

``--proxy-headers`` is refused: Daphne then takes the first address of ``X-Forwarded-For``,
which the client writes; name the proxies in ``NETACLAW_TRUSTED_PROXIES`` instead
(``netaclaw.proxies``).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from daphne.cli import CommandLineInterface
from daphne.server import Server
from daphne.ws_protocol import WebSocketProtocol
from twisted.internet import reactor

logger = logging.getLogger(__name__)

PROXY_HEADERS_REFUSED = (
    "netaclaw.serve: --proxy-headers would let the client choose its address (Daphne reads "
    "the first X-Forwarded-For entry); set NETACLAW_TRUSTED_PROXIES to your proxies' "
    "addresses instead"
)


def unsent_bytes(transport: Any) -> int | None:
    """Bytes written to a connection and not yet taken by the kernel: the buffer of the
    TCP transport under it (Twisted's ``FileDescriptor``; through TLS, the one beneath).
    None when the transport keeps no such buffer."""
    while transport is not None and not hasattr(transport, "dataBuffer"):
        transport = getattr(transport, "transport", None)
    if transport is None:
        return None
    pending = len(transport.dataBuffer) - transport.offset
    return pending + int(getattr(transport, "_tempDataLen", 0))


class BoundedWebSocketProtocol(WebSocketProtocol):
    """Daphne's WebSocket protocol with a bound on what a client leaves unread."""

    max_pending_bytes = 8 * 1024 * 1024
    dropped = False

    def serverSend(self, content: Any, binary: bool = False) -> None:
        if self.dropped:
            return
        pending = unsent_bytes(self.transport)
        if pending is not None and pending > self.max_pending_bytes:
            self.dropped = True
            logger.warning(
                "dropping a WebSocket that left %d bytes unread (%s)", pending, self.client_addr
            )
            self.transport.abortConnection()  # its disconnect reaches the consumer as usual
            return
        super().serverSend(content, binary)


class NetaclawServer(Server):
    """Daphne's server; once the reactor runs (its factories made, nothing accepted yet),
    its WebSocket factory closes failed connections with a close frame, and builds
    connections that a client cannot make hold unread events without bound."""

    def run(self) -> None:
        reactor.callWhenRunning(self.configure_sockets)
        super().run()

    def configure_sockets(self) -> None:
        from django.conf import settings  # the application, loaded by now, set Django up

        self.ws_factory.setProtocolOptions(failByDrop=False)
        BoundedWebSocketProtocol.max_pending_bytes = settings.NETACLAW["WS_MAX_PENDING_BYTES"]
        self.ws_factory.protocol = BoundedWebSocketProtocol


class NetaclawCommandLine(CommandLineInterface):
    server_class = NetaclawServer

    def run(self, args: list[str]) -> Any:
        if any(a == "--proxy-headers" or a.startswith("--proxy-headers-") for a in args):
            sys.exit(PROXY_HEADERS_REFUSED)
        return super().run(args)


if __name__ == "__main__":
    NetaclawCommandLine.entrypoint()
