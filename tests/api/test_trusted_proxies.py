"""The address login throttling sees (issue 27 item 8). Behind a proxy that appends to
``X-Forwarded-For``, ``daphne --proxy-headers`` took the header's first address, which the
client writes: it chose its own address, sprayed passwords from "new" ones and locked out
other people's. Now only a peer of ``NETACLAW_TRUSTED_PROXIES`` is believed, and from it
the nearest address that is not a trusted proxy, read from the right."""

from __future__ import annotations

from ipaddress import ip_network

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.urls import reverse

from netaclaw.proxies import client_address
from tests.factories import make_user
from tests.support.api_clients import client_for

pytestmark = pytest.mark.django_db

PASSWORD = "the-right-password-93"
LIMIT = settings.AXES_FAILURE_LIMIT
PROXY = "10.0.0.1"


@pytest.fixture(autouse=True)
def _behind_a_proxy(settings):
    settings.TRUSTED_PROXIES = ["10.0.0.0/24"]


def _token(username: str, password: str, *, peer: str = PROXY, forwarded: str | None = None):
    extra = {"REMOTE_ADDR": peer}
    if forwarded is not None:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded
    return client_for().post(
        "/api/auth/token/", {"username": username, "password": password}, format="json", **extra
    )


def test_the_client_cannot_choose_the_address_throttling_sees() -> None:
    make_user("carol", password=PASSWORD)
    for n in range(LIMIT):  # a new "address" each time, written by the client
        _token("carol", "wrong", forwarded=f"203.0.113.{n}, 198.51.100.7")
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"198.51.100.7"}
    assert _token("carol", PASSWORD, forwarded="203.0.113.99, 198.51.100.7").status_code == 429
    # someone else behind the same proxy is not locked out
    assert _token("carol", PASSWORD, forwarded="198.51.100.8").status_code == 200


def test_a_client_cannot_lock_out_the_address_it_names() -> None:
    make_user("dave", password=PASSWORD)
    for _ in range(LIMIT):  # the attacker at 192.0.2.66 claims the victim's address
        _token("dave", "wrong", forwarded="198.51.100.9, 192.0.2.66")
    assert _token("dave", PASSWORD, forwarded="198.51.100.9").status_code == 200


def test_forwarding_headers_count_only_from_a_trusted_proxy() -> None:
    make_user("erin", password=PASSWORD)
    _token("erin", "wrong", peer="192.0.2.50", forwarded="198.51.100.99")
    assert list(AccessAttempt.objects.values_list("ip_address", flat=True)) == ["192.0.2.50"]


def test_https_is_believed_only_from_a_trusted_proxy(client, settings) -> None:
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    settings.SECURE_SSL_REDIRECT = True
    login = reverse("login")
    direct = client.get(login, REMOTE_ADDR="192.0.2.50", HTTP_X_FORWARDED_PROTO="https")
    assert direct.status_code == 301  # a forged header: still plain HTTP, redirected
    proxied = client.get(login, REMOTE_ADDR=PROXY, HTTP_X_FORWARDED_PROTO="https")
    assert proxied.status_code == 200


@pytest.mark.parametrize(
    ("peer", "forwarded", "client"),
    [
        ("192.0.2.1", "1.1.1.1", "192.0.2.1"),  # not a proxy: its own address
        ("10.0.0.1", "", "10.0.0.1"),  # a proxy that forwarded nothing
        ("10.0.0.1", "1.1.1.1, 2.2.2.2", "2.2.2.2"),
        ("10.0.0.1", "1.1.1.1, 2.2.2.2, 10.0.0.7", "2.2.2.2"),  # two trusted hops
        ("10.0.0.1", "not-an-address, 10.0.0.7", "10.0.0.7"),
        ("10.0.0.1", "10.0.0.8, 10.0.0.7", "10.0.0.8"),
        ("10.0.0.1", "2001:db8::1", "2001:db8::1"),
    ],
)
def test_client_address(peer: str, forwarded: str, client: str) -> None:
    assert client_address(peer, forwarded, [ip_network("10.0.0.0/24")]) == client
