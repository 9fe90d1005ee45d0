"""An upload or a lookup refused as the API refuses it, wherever its body is read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from web.api.errors import refused

from ..refusals import UploadInvalid


@contextmanager
def as_refusal() -> Iterator[None]:
    """An UploadInvalid raised within, answered as the API refuses a body: 400 when it is
    no JSON, 413 over an upload's rows, else 422, each refused row and field named."""
    try:
        yield
    except UploadInvalid as exc:
        raise refused(exc) from None
