"""A webhook's connection (issue 20): a receiver that never answers is given up on after
WEBHOOKS_TIMEOUT, tried again by the backoff and logged as a timeout; an https receiver is
reached over TLS with the URL's name as SNI and Host, its certificate verified against
WEBHOOKS_CA_FILE, and one that does not verify fails at once. Real sockets on 127.0.0.1;
only the backoff's sleeps are stubbed."""

from __future__ import annotations

import hashlib
import hmac
import json
import socketserver
import ssl
import subprocess
import threading

import pytest
from django.core.management import CommandError

from notify.models import Delivery, WebhookPost
from tests.local_server import serving
from tests.test_notify_webhooks import (  # noqa: F401 (items and sleeps are fixtures)
    Receiver,
    build_world,  # the items' world (tests/world.py)
    hook,
    items,
    notify,
    sleeps,
)

TIMEOUT = 0.2  # seconds: the real socket timeout of these tests


class Silent(socketserver.ThreadingTCPServer):
    """Accepts every connection, reads nothing and never answers, until it hangs up."""

    daemon_threads = True

    def __init__(self):
        self.accepted = threading.Semaphore(0)
        self.hang_up = threading.Event()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                server.accepted.release()
                server.hang_up.wait()

        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"


@pytest.fixture
def silent():
    silent = Silent()
    with serving(silent):
        yield silent
        silent.hang_up.set()


def test_a_receiver_that_never_answers_times_out_is_retried_and_logged(
    settings, suite, items, silent, sleeps  # noqa: F811
):
    settings.WEBHOOKS_TIMEOUT = TIMEOUT
    hook(suite, silent.url)
    with pytest.raises(CommandError, match="failed"):
        notify()
    assert all(silent.accepted.acquire(timeout=10) for _ in range(3))  # three connections
    assert sleeps == [1.0, 3.0]
    failed = WebhookPost.objects.get()
    assert (failed.status, failed.attempts, failed.response_code) == ("failed", 3, None)
    assert failed.error == f"timeout: no answer within {TIMEOUT:g} s"
    assert set(Delivery.objects.filter(channel="webhook").values_list("status", flat=True)) \
        == {"failed"}


def certificate(tmp_path, name: str) -> tuple[str, str]:
    """A self-signed certificate for ``name`` (in its subjectAltName) and its key."""
    cert, key = tmp_path / f"{name}-cert.pem", tmp_path / f"{name}-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1",
         "-subj", f"/CN={name}", "-addext", f"subjectAltName=DNS:{name}"],
        check=True, capture_output=True)
    return str(cert), str(key)


class TLSReceiver(Receiver):
    """The test receiver behind TLS, recording the name each client asked for (SNI)."""

    def __init__(self, cert: str, key: str):
        super().__init__()
        self.names: list[str | None] = []
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        context.sni_callback = lambda sock, name, ctx: self.names.append(name)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_port
        self.url = f"https://localhost:{self.port}/hook"


@pytest.fixture
def tls(tmp_path, settings):
    """A receiver whose certificate the board trusts (WEBHOOKS_CA_FILE), and the path of a
    second, untrusted certificate for the same name."""
    (tmp_path / "trusted").mkdir()
    cert, key = certificate(tmp_path / "trusted", "localhost")
    settings.WEBHOOKS_CA_FILE = cert
    receiver = TLSReceiver(cert, key)
    with serving(receiver.server):
        yield receiver


@pytest.mark.slow
def test_an_https_delivery_arrives_over_tls_for_the_urls_name_and_verifies(
    suite, items, tls, sleeps  # noqa: F811
):
    secret = hook(suite, tls.url)
    assert "acme: webhook sent." in notify()
    [(path, headers, raw)] = tls.requests
    assert path == "/hook" and tls.names == ["localhost"]
    assert headers["Host"] == f"localhost:{tls.port}"
    expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    assert headers["X-Flakeboard-Signature"] == f"sha256={expected}"
    assert json.loads(raw)["suite"] == "acme"
    sent = WebhookPost.objects.get()
    assert (sent.status, sent.attempts, sent.response_code) == ("sent", 1, 200)


@pytest.mark.slow
def test_a_certificate_the_board_does_not_trust_fails_at_once(
    tmp_path, suite, items, tls, sleeps  # noqa: F811
):
    (tmp_path / "other").mkdir()
    untrusted = TLSReceiver(*certificate(tmp_path / "other", "localhost"))
    with serving(untrusted.server):
        hook(suite, untrusted.url)
        with pytest.raises(CommandError, match="failed"):
            notify()
    assert untrusted.requests == [] and sleeps == []
    failed = WebhookPost.objects.get()
    assert (failed.status, failed.attempts, failed.response_code) == ("failed", 1, None)
    assert failed.error.startswith("certificate: ") and "self-signed" in failed.error


@pytest.mark.slow
def test_the_certificate_must_name_the_urls_host(suite, items, tls, sleeps):  # noqa: F811
    hook(suite, f"https://127.0.0.1:{tls.port}/hook")  # the certificate names localhost only
    with pytest.raises(CommandError, match="failed"):
        notify()
    assert tls.requests == [] and sleeps == []
    failed = WebhookPost.objects.get()
    assert failed.attempts == 1 and "mismatch" in failed.error.lower()
