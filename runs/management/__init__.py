from django.core.management.base import CommandError

from runs.validation import UploadInvalid


def read_upload(path: str, limit: int) -> bytes:
    try:
        with open(path, "rb") as handle:
            body = handle.read(limit + 1)
    except OSError as exc:
        raise CommandError(f"Cannot read {path}: {exc.strerror}") from None
    if len(body) > limit:
        raise CommandError(f"{path} is over the upload limit of {limit} bytes.")
    return body


def upload_error(exc: UploadInvalid) -> CommandError:
    return CommandError(f"{exc.code}: {exc.message}")
