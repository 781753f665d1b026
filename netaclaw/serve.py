"""``python -m netaclaw.serve [Daphne's options] netaclaw.asgi:application``: Daphne, with a
WebSocket over its size limit closed with 1009 instead of a TCP reset.

Daphne hands the limits to autobahn, whose default on any failed connection — a frame over
``--websocket-max-message-size`` included — is ``failByDrop``: it aborts the TCP connection,
and the client sees a reset, not the 1009 close README promises (issue 27 item 13). This
server sets ``failByDrop=False`` on Daphne's WebSocket factory (autobahn's public option;
Daphne's ``server_class`` hook), so autobahn sends the close frame with its code and waits
for the client's before it drops the connection. Everything else is Daphne's command line.

``--proxy-headers`` is refused: Daphne then takes the first address of ``X-Forwarded-For``,
which the client writes; name the proxies in ``NETACLAW_TRUSTED_PROXIES`` instead
(``netaclaw.proxies``).
"""

from __future__ import annotations

import sys
from typing import Any

from daphne.cli import CommandLineInterface
from daphne.server import Server
from twisted.internet import reactor

PROXY_HEADERS_REFUSED = (
    "netaclaw.serve: --proxy-headers would let the client choose its address (Daphne reads "
    "the first X-Forwarded-For entry); set NETACLAW_TRUSTED_PROXIES to your proxies' "
    "addresses instead"
)


class NetaclawServer(Server):
    """Daphne's server; once the reactor runs (its factories made, nothing accepted yet),
    its WebSocket factory closes failed connections with a close frame."""

    def run(self) -> None:
        reactor.callWhenRunning(self.close_failed_sockets_cleanly)
        super().run()

    def close_failed_sockets_cleanly(self) -> None:
        self.ws_factory.setProtocolOptions(failByDrop=False)


class NetaclawCommandLine(CommandLineInterface):
    server_class = NetaclawServer

    def run(self, args: list[str]) -> Any:
        if any(a == "--proxy-headers" or a.startswith("--proxy-headers-") for a in args):
            sys.exit(PROXY_HEADERS_REFUSED)
        return super().run(args)


if __name__ == "__main__":
    NetaclawCommandLine.entrypoint()
