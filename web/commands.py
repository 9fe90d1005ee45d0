"""What the apps' management commands share: a file read under the upload limit, and a
refusal as one line. The suite named on the command line, and the prune commands' frame,
are in ``ledger.commands``."""

from __future__ import annotations

from django.core.management.base import CommandError


def read_upload(path: str, limit: int) -> bytes:
    """The file's bytes; a CommandError when it cannot be read or is over ``limit``."""
    try:
        with open(path, "rb") as handle:
            body = handle.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    if len(body) > limit:
        raise CommandError(f"{path} is over the upload limit of {limit} bytes.")
    return body


def one_line(error) -> str:
    """A ValidationError as one readable line."""
    if hasattr(error, "message_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
    return " ".join(getattr(error, "messages", [str(error)]))
