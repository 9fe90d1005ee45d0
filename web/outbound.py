"""The board's outbound HTTP, which cannot be turned against its own network (SSRF): one
POST to a webhook (notify), one GET of an OIDC issuer's keys (ledger.oidc), the calls to an
issue tracker's REST API (trackers), and the retries with backoff they share.

The host is resolved here, every address it resolves to is checked, and the connection is
made to a checked address: the name is not resolved a second time, so a name that rebinds
between the check and the connection cannot slip through. The Host header and, for https,
the certificate and SNI still name the host. Redirects are never followed: a 3xx is an
answer like any other, which the caller counts as a failure. Certificates are verified
against the system's CAs, or WEBHOOKS_CA_FILE's for a receiver behind a private CA. The
WEBHOOKS_* settings govern both uses. A webhook's URL meets the same guard (``check_url``)
when it is saved, so one that names a private address is refused then, not only each day.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

USER_AGENT = "Flakeboard-Webhook/1"


class Refused(Exception):
    """The URL names an address the board does not post to (or cannot resolve). Its text
    is a clause, without a capital or a full stop: "10.0.0.7 resolves to ..."."""


# Why an address is not public, in the order checked: the first that holds names it.
NOT_PUBLIC = (
    ("is_unspecified", "an unspecified address"),
    ("is_loopback", "a loopback address"),
    ("is_link_local", "a link-local address"),
    ("is_multicast", "a multicast address"),
    ("is_private", "a private address"),
    ("is_reserved", "a reserved address"),
)


def not_public(address: str) -> tuple[str, str] | None:
    """None for a public address; else the address as checked (an IPv4-mapped IPv6
    address is its IPv4 one) and what it is: ("127.0.0.1", "a loopback address")."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    for test, kind in NOT_PUBLIC:
        if getattr(ip, test):
            return str(ip), kind
    return None if ip.is_global else (str(ip), "an address that is not public")


def is_public(address: str) -> bool:
    return not_public(address) is None


def checked_addresses(host: str, port: int, *, unresolved_ok: bool = False) -> list[tuple]:
    """Every (family, sockaddr) the host resolves to; Refused when any is not public
    (unless WEBHOOKS_ALLOW_PRIVATE_IPS), naming it as resolved, or when it resolves to none
    (unless ``unresolved_ok``: then none, for a URL saved now and checked again when used)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        if unresolved_ok:
            return []
        raise Refused(f"{host} does not resolve: {exc}") from exc
    addresses = [(family, sockaddr) for family, _, _, _, sockaddr in found]
    if not addresses and not unresolved_ok:
        raise Refused(f"{host} does not resolve")
    if not settings.WEBHOOKS_ALLOW_PRIVATE_IPS:
        for _, sockaddr in addresses:
            if (why := not_public(sockaddr[0])) is not None:
                address, kind = why
                raise Refused(f"{host} resolves to {address}, {kind} "
                              "(WEBHOOKS_ALLOW_PRIVATE_IPS is off)")
    return addresses


def check_url(url: str, *, unresolved_ok: bool = False):
    """The guard on a URL the board posts to or fetches, when it is saved and when it is
    used: an http(s) URL with a host whose every address is public. Its parts, port and
    checked addresses; Refused, saying why, when it is not one."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("the URL must start with http:// or https:// and name a host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise Refused("the URL's port is not a number from 0 to 65535") from None
    return parts, port, checked_addresses(parts.hostname, port, unresolved_ok=unresolved_ok)


def _connect(addresses: list[tuple], timeout: float) -> socket.socket:
    """A socket connected to the first checked address that answers."""
    error: OSError = OSError("no address to connect to")
    for family, sockaddr in addresses:
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(sockaddr)
        except OSError as exc:
            sock.close()
            error = exc
            continue
        return sock
    raise error


class _CheckedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host, port, *, addresses, timeout):
        super().__init__(host, port, timeout=timeout)
        self._addresses = addresses

    def connect(self):
        self.sock = _connect(self._addresses, self.timeout)


def tls_context() -> ssl.SSLContext:
    """Verifying certificates and host names: against WEBHOOKS_CA_FILE when set, else the
    system's trust store."""
    return ssl.create_default_context(cafile=settings.WEBHOOKS_CA_FILE or None)


class _CheckedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host, port, *, addresses, timeout):
        super().__init__(host, port, timeout=timeout, context=tls_context())
        self._addresses = addresses

    def connect(self):
        sock = _connect(self._addresses, self.timeout)
        # The certificate is verified for the host's name, not for the address.
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)


def _connection(url: str, timeout: float | None):
    if timeout is None:
        timeout = settings.WEBHOOKS_TIMEOUT
    parts, port, addresses = check_url(url)
    kind = _CheckedHTTPSConnection if parts.scheme == "https" else _CheckedHTTPConnection
    connection = kind(parts.hostname, port, addresses=addresses, timeout=timeout)
    return connection, (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def exchange(method: str, url: str, *, body: bytes | None = None,
             headers: dict[str, str] | None = None, max_bytes: int = 64 * 1024,
             user_agent: str = USER_AGENT, timeout: float | None = None,
             cut_long: bool = False) -> tuple[int, bytes]:
    """One request to ``url``: its status and at most ``max_bytes`` of its body (a longer
    body is refused, OSError, unless ``cut_long``: then it is cut). ``timeout``
    (WEBHOOKS_TIMEOUT unless given) bounds the connection and each read. Raises Refused
    before any connection is made to a refused address, OSError (TimeoutError,
    ssl.SSLCertVerificationError included) when the exchange fails; a redirect is an
    answer, never followed."""
    connection, path = _connection(url, timeout)
    try:
        connection.request(method, path, body=body,
                           headers={"User-Agent": user_agent, **(headers or {})})
        response = connection.getresponse()
        answer = response.read(max_bytes + 1)
        if len(answer) > max_bytes and not cut_long:
            raise OSError(f"{url} answered more than {max_bytes:,} bytes")
        return response.status, answer
    finally:
        connection.close()


def get(url: str, *, max_bytes: int, user_agent: str, timeout: float | None = None
        ) -> tuple[int, bytes]:
    """GET ``url``: its status and at most ``max_bytes`` of its body; see ``exchange``."""
    return exchange("GET", url, headers={"Accept": "application/json"}, max_bytes=max_bytes,
                    user_agent=user_agent, timeout=timeout)


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float | None = None
         ) -> int:
    """POST ``body`` to ``url``; its status code (the answer's body is read to end the
    exchange, not kept). Raises as ``exchange``."""
    return exchange("POST", url, body=body, headers=headers, timeout=timeout,
                    cut_long=True)[0]


ATTEMPTS = 3
BACKOFF = (1.0, 3.0)  # seconds before the second and the third attempt


@dataclass(frozen=True)
class Answer:
    """How a request went, its retries included: ``body`` is the last answer's."""

    ok: bool
    attempts: int
    response_code: int | None
    error: str
    body: bytes = b""


def with_retries(send: Callable[[], tuple[int, bytes]], sleep) -> Answer:
    """Up to ATTEMPTS tries of ``send`` (which answers a status and a body): again after a
    5xx, a timeout or a failed connection, ``sleep`` waiting BACKOFF between; never after a
    refused address, a certificate that does not verify (trying again would not change it),
    a 3xx (redirects are not followed) or a 4xx."""
    code, error, answer = None, "", b""
    for attempt in range(1, ATTEMPTS + 1):
        if attempt > 1:
            sleep(BACKOFF[attempt - 2])
        try:
            code, answer = send()
        except Refused as exc:
            return Answer(False, attempt, None, f"refused: {exc}")
        except ssl.SSLCertVerificationError as exc:
            return Answer(False, attempt, None, f"certificate: {exc.verify_message or exc}")
        except TimeoutError:
            code, error = None, f"timeout: no answer within {settings.WEBHOOKS_TIMEOUT:g} s"
            continue
        except OSError as exc:
            code, error = None, f"{type(exc).__name__}: {exc}"
            continue
        if 200 <= code < 300:
            return Answer(True, attempt, code, "", answer)
        error = f"HTTP {code}" + (" (redirects are not followed)" if 300 <= code < 400 else "")
        if code < 500:
            return Answer(False, attempt, code, error, answer)
    return Answer(False, ATTEMPTS, code, error, answer)
