"""EMAIL_URL: where the board's e-mail goes, as one URL, made Django's default mailer
(MAILERS; see docs/configuration.md).

``smtp://user:pass@host:587?tls=1``, ``smtp://host:25``, ``smtps://host`` (SSL from the
start), ``console:``, ``file:///var/spool/flakeboard``, ``locmem:`` and ``dummy:``. Read
once, at settings time: a URL that cannot work is refused there, before any digest is due.
"""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

BACKEND = "django.core.mail.backends.{}.EmailBackend"
# A mail server that does not answer must not hold a cron job for ever.
SMTP_TIMEOUT_SECONDS = 10
_SIMPLE = {"console": "console", "locmem": "locmem", "dummy": "dummy"}
_FLAGS = {"1": True, "true": True, "yes": True, "on": True,
          "0": False, "false": False, "no": False, "off": False}
_SMTP_OPTIONS = {"tls", "ssl", "timeout"}


def _refused(url: str, why: str) -> ImproperlyConfigured:
    # The password is never echoed: the URL is shown without its user part.
    shown = url.split("@", 1)[-1] if "@" in url else url
    return ImproperlyConfigured(
        f"EMAIL_URL “…{shown}” {why}. Examples: smtp://user:pass@host:587?tls=1, "
        "smtp://host:25, smtps://host:465, console:, file:///path/to/dir."
    )


def _flag(url: str, options: dict, name: str) -> bool:
    values = options.get(name)
    if not values:
        return False
    if values[-1].lower() not in _FLAGS:
        raise _refused(url, f"has {name}={values[-1]}; use {name}=1 or {name}=0")
    return _FLAGS[values[-1].lower()]


def _smtp(url: str, parts, ssl_scheme: bool) -> dict:
    options = parse_qs(parts.query, keep_blank_values=True)
    if unknown := sorted(set(options) - _SMTP_OPTIONS):
        raise _refused(url, f"has unknown option {', '.join(unknown)} (known: tls, ssl, timeout)")
    if not parts.hostname:
        raise _refused(url, "names no host")
    try:
        port = parts.port
    except ValueError:
        raise _refused(url, "has a port that is not a number from 1 to 65535") from None
    use_tls = _flag(url, options, "tls")
    use_ssl = ssl_scheme or _flag(url, options, "ssl")
    if use_tls and use_ssl:
        raise _refused(url, "asks for both tls (STARTTLS) and ssl; choose one")
    timeout = options.get("timeout", [str(SMTP_TIMEOUT_SECONDS)])[-1]
    if not timeout.isdigit() or int(timeout) < 1:
        raise _refused(url, "has a timeout that is not a whole number of seconds (1 or more)")
    return {
        "BACKEND": BACKEND.format("smtp"),
        "OPTIONS": {
            "host": parts.hostname,
            "port": port or (465 if use_ssl else 587 if use_tls else 25),
            "username": unquote(parts.username or ""),
            "password": unquote(parts.password or ""),
            "use_tls": use_tls,
            "use_ssl": use_ssl,
            "timeout": int(timeout),
        },
    }


def mailer(url: str) -> dict:
    """Django's mailer (a MAILERS entry) for ``url``; ImproperlyConfigured, saying why, if
    it is not one the board can send with."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme in ("smtp", "smtps"):
        return _smtp(url, parts, ssl_scheme=scheme == "smtps")
    if scheme in _SIMPLE:
        return {"BACKEND": BACKEND.format(_SIMPLE[scheme])}
    if scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            raise _refused(url, "needs an absolute path, as file:///path/to/dir")
        return {"BACKEND": BACKEND.format("filebased"),
                "OPTIONS": {"file_path": unquote(parts.path)}}
    raise _refused(url, "has an unknown scheme (known: smtp, smtps, console, file, locmem, dummy)")
