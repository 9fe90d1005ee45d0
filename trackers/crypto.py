"""A tracker's token at rest: Fernet (cryptography), with keys derived from SECRET_KEY and
its fallbacks by HKDF. A token encrypted under an older SECRET_KEY still reads while that
key is among SECRET_KEY_FALLBACKS, and ``rotated`` re-encrypts it under the current one
(sync_trackers does, at its next run)."""

from __future__ import annotations

import base64

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

_INFO = b"flakeboard trackers token"


def _fernet(secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_INFO).derive(
        secret.encode())
    return Fernet(base64.urlsafe_b64encode(key))


def _keys() -> MultiFernet:
    secrets = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return MultiFernet([_fernet(secret) for secret in secrets])


def encrypt(token: str) -> str:
    return _keys().encrypt(token.encode()).decode()


class Unreadable(Exception):
    """The token was encrypted under a SECRET_KEY the board no longer has."""


def decrypt(stored: str) -> str:
    try:
        return _keys().decrypt(stored.encode()).decode()
    except InvalidToken:
        raise Unreadable("the tracker's token was encrypted under another SECRET_KEY: "
                         "set the token again") from None


def is_current(stored: str) -> bool:
    """Whether the token is encrypted under the current SECRET_KEY (not a fallback)."""
    try:
        _fernet(settings.SECRET_KEY).decrypt(stored.encode())
    except InvalidToken:
        return False
    return True


def rotated(stored: str) -> str:
    """The token encrypted under the current SECRET_KEY."""
    try:
        return _keys().rotate(stored.encode()).decode()
    except InvalidToken:
        raise Unreadable("the tracker's token cannot be read to rotate it") from None
