"""Failures that name the network or a service (SPEC 2.4d's ``external``): a connection
reset, refused or aborted; a name that did not resolve; a timeout talking to a host; a 5xx
answer. Read from a failure's signature (``flakeboard.rules.signatures``: its numbers read <n>, so a
status is known by its words) or its message."""

from __future__ import annotations

import re

NETWORK_PATTERNS = tuple(re.compile(pattern, re.IGNORECASE) for pattern in (
    r"connection\s*(?:reset|refused|aborted)|econn(?:reset|refused|aborted)|broken pipe",
    r"remote ?disconnected|connection (?:closed|lost) by|max retries exceeded|"
    r"new ?connection ?error|(?:urllib3|requests)\S*\.\S*connection",
    r"name or service not known|name resolution|nodename nor servname|getaddrinfo|"
    r"gaierror|\bdns\b|could not resolve host|unknown host",
    r"(?:connect|read|socket|gateway)\s*(?:time ?out|timed out)|"
    r"connection timed out|timed out (?:while |when )?(?:talking|connecting|waiting for)"
    r"[^.]*\b(?:host|server|service)|host\S* timed out",
    r"service unavailable|bad gateway|internal server error|server error|"
    r"\b5\d\d\b\s*(?:server|service|gateway|error)|http\S*\s*5\d\d\b",
))


def names_network(signature: str) -> bool:
    """Whether a failure's signature (or message) names the network or a service."""
    return any(pattern.search(signature) for pattern in NETWORK_PATTERNS)
