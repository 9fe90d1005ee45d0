"""Sign-in through the company's identity provider, behind an authenticating proxy.

The proxy (oauth2-proxy and the like) signs the person in and passes their user name in a
header, ``REMOTE_USER_HEADER``. Only when that setting names a header is the middleware
installed; otherwise Django drops it (``MiddlewareNotUsed``) and the header, which any
client can send, is ignored. A user seen for the first time is created with no suite
access: a lead adds them as a member.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.backends import RemoteUserBackend
from django.contrib.auth.middleware import RemoteUserMiddleware
from django.core.exceptions import MiddlewareNotUsed

# Django's user name: at most 150 characters, no control characters.
USERNAME_MAX = 150


def meta_key(header: str) -> str:
    """The ``request.META`` key of a header: ``X-Forwarded-User`` and
    ``HTTP_X_FORWARDED_USER`` both give ``HTTP_X_FORWARDED_USER``."""
    key = header.strip().upper().replace("-", "_")
    return key if key.startswith("HTTP_") else "HTTP_" + key


class ProxyRemoteUserMiddleware(RemoteUserMiddleware):
    def __init__(self, get_response):
        if not settings.REMOTE_USER_HEADER:
            raise MiddlewareNotUsed
        super().__init__(get_response)
        self.header = meta_key(settings.REMOTE_USER_HEADER)


class ProxyRemoteUserBackend(RemoteUserBackend):
    """Django's remote-user backend (the user created on first sign-in, with no
    membership), refusing a name Django's user model could not hold."""

    create_unknown_user = True

    def clean_username(self, username: str) -> str:
        return username.strip()

    def configure_user(self, request, user, created=True):
        if created:  # the proxy vouches for them; no password of the board's own
            user.set_unusable_password()
            user.save(update_fields=["password"])
        return user

    def authenticate(self, request, remote_user):
        name = self.clean_username(remote_user or "")
        if not name or len(name) > USERNAME_MAX or not name.isprintable():
            return None
        return super().authenticate(request, remote_user)
