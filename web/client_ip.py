"""The client's address behind our own proxies, for sign-in throttling (django-axes reads it
through ``AXES_CLIENT_IP_CALLABLE``).

Each proxy appends the address it was called from to ``X-Forwarded-For``. Entries left of
the ones our own proxies appended were written by the client and prove nothing; so with
``FLAKEBOARD_TRUSTED_PROXIES = N`` the client is the N-th entry from the right, and with
0 (the default) the header is ignored. A header too short for N, or whose entry there is
not an address, is not trusted either: the answer is then the proxy's ``REMOTE_ADDR``.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def _address(text: str) -> str | None:
    """``text`` as a plain IPv4 or IPv6 address, in its canonical form, or None."""
    try:
        address = ipaddress.ip_address(text.strip())
    except ValueError:
        return None
    # A zone ("fe80::1%eth0") names an interface of the proxy, and PostgreSQL's inet
    # column refuses it.
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id is not None:
            return None
        if address.ipv4_mapped is not None:
            address = address.ipv4_mapped
    return str(address)


def client_address(remote_addr: str | None, forwarded_for: str | None,
                   trusted_proxies: int) -> str | None:
    """The client's address: the ``trusted_proxies``-th entry from the right of the
    ``X-Forwarded-For`` value ``forwarded_for``, else ``remote_addr``."""
    if trusted_proxies > 0 and forwarded_for:
        entries = forwarded_for.split(",")
        if len(entries) >= trusted_proxies:
            found = _address(entries[-trusted_proxies])
            if found is not None:
                return found
    return remote_addr or None


def request_client_address(request) -> str | None:
    """``client_address`` of a request, with the deployment's trusted proxy count."""
    return client_address(
        request.META.get("REMOTE_ADDR"),
        request.META.get("HTTP_X_FORWARDED_FOR"),
        settings.FLAKEBOARD_TRUSTED_PROXIES,
    )
