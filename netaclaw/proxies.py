"""Which address a request comes from, when it may have passed reverse proxies.

``daphne --proxy-headers`` takes the *first* address of ``X-Forwarded-For``, which the client
writes itself when its proxy appends to the header (nginx's ``$proxy_add_x_forwarded_for``):
the client chose the address login throttling saw (issue 27 item 8). Now Daphne runs without
``--proxy-headers`` and this middleware, first of all, decides: a request whose peer is one
of ``TRUSTED_PROXIES`` (``NETACLAW_TRUSTED_PROXIES``) comes from the nearest address of its
``X-Forwarded-For`` that is not a trusted proxy, read from the right — the one the outermost
trusted proxy saw, whatever the client wrote to its left; its ``X-Forwarded-Proto`` counts
(``SECURE_PROXY_SSL_HEADER``). Any other request comes from its peer, and its forwarding
headers are dropped, so nothing further down (throttling, the HTTPS check) reads them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from functools import lru_cache
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils.decorators import sync_and_async_middleware

Network = IPv4Network | IPv6Network

# what a proxy may tell about the client: dropped from any request that no trusted proxy sent
FORWARDING_HEADERS = (
    "HTTP_X_FORWARDED_FOR",
    "HTTP_X_FORWARDED_PROTO",
    "HTTP_X_FORWARDED_HOST",
    "HTTP_X_FORWARDED_PORT",
    "HTTP_X_REAL_IP",
    "HTTP_FORWARDED",
)


def parse_networks(spec: str) -> list[str]:
    """``"10.0.0.1, 192.168.0.0/16"`` → the networks' canonical forms; ValueError names a
    bad entry."""
    networks = []
    for item in (part.strip() for part in spec.split(",")):
        if not item:
            continue
        try:
            networks.append(str(ip_network(item, strict=False)))
        except ValueError:
            raise ValueError(f"not an IP address or network: {item!r}") from None
    return networks


@lru_cache(maxsize=8)
def _networks(spec: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ip_network(item, strict=False) for item in spec)


def _trusted(address: str, networks: Sequence[Network]) -> bool:
    try:
        parsed = ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in networks)


def client_address(peer: str, forwarded_for: str, networks: Sequence[Network]) -> str:
    """The client's address: ``peer`` unless it is a trusted proxy; else the rightmost
    address of ``forwarded_for`` that is not a trusted proxy (the last valid one when an
    entry cannot be read: what a trusted proxy wrote ends there)."""
    if not _trusted(peer, networks):
        return peer
    address = peer
    for hop in reversed([h.strip() for h in forwarded_for.split(",") if h.strip()]):
        try:
            address = str(ip_address(hop))
        except ValueError:
            break
        if not _trusted(address, networks):
            break
    return address


def resolve_client(request: HttpRequest) -> None:
    """Set ``REMOTE_ADDR`` to the client's address and drop forwarding headers that no
    trusted proxy sent."""
    meta = request.META
    networks = _networks(tuple(getattr(settings, "TRUSTED_PROXIES", ())))
    peer = str(meta.get("REMOTE_ADDR") or "")
    if networks and _trusted(peer, networks):
        meta["REMOTE_ADDR"] = client_address(
            peer, str(meta.get("HTTP_X_FORWARDED_FOR") or ""), networks
        )
        return
    for name in FORWARDING_HEADERS:
        meta.pop(name, None)


def client_ip(request: HttpRequest) -> str | None:
    """``AXES_CLIENT_IP_CALLABLE``: the address ``resolve_client`` settled on."""
    return request.META.get("REMOTE_ADDR") or None


Handler = Callable[[HttpRequest], HttpResponse] | Callable[[HttpRequest], Awaitable[HttpResponse]]


@sync_and_async_middleware
def trusted_proxy_middleware(get_response: Handler) -> Handler:
    """First in ``MIDDLEWARE``: ``resolve_client`` for every request, sync or async (no
    thread hop under Daphne)."""
    if iscoroutinefunction(get_response):

        async def async_middleware(request: HttpRequest) -> HttpResponse:
            resolve_client(request)
            return await get_response(request)

        markcoroutinefunction(async_middleware)
        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponse:
        resolve_client(request)
        return get_response(request)  # type: ignore[return-value]

    return middleware
