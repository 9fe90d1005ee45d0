"""manage.py notify posts each suite's items to its webhook (issue 20): signed, retried on a
5xx, never redirected, at most once a day per item, and never into the board's own network
unless WEBHOOKS_ALLOW_PRIVATE_IPS says so. A real HTTP receiver listens on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import socket
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core.management import CommandError, call_command

from flakeboard.email_url import mailer
from notify.models import Delivery, Webhook, WebhookPost
from notify.webhooks import send_test, webhook_set
from tests.helpers import record_sleeps
from tests.local_server import serving
from tests.test_gate_status import FLAKY, forty_known, quarantine
from tests.world import people_world
from web.outbound import Refused, is_public, post


class Receiver:
    """A webhook receiver on 127.0.0.1: it keeps every request and answers each with the
    next of ``answers`` (the last one again once they run out)."""

    def __init__(self):
        self.requests: list[tuple[str, dict, bytes]] = []
        self.answers: list[int] = [200]
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((self.path, dict(self.headers), raw))
                status = receiver.answers.pop(0) if len(receiver.answers) > 1 \
                    else receiver.answers[0]
                self.send_response(status)
                if 300 <= status < 400:
                    self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}"
                                                 "/elsewhere")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.requests]


@pytest.fixture
def receiver():
    receiver = Receiver()
    with serving(receiver.server):
        yield receiver


def build_world():
    """This module's shared world (tests/world.py): the suite and its items, built once for
    a run of the tests that ask for it."""
    world = people_world()
    world.items = add_items(world.suite, world.today)
    return world


@pytest.fixture
def items(settings, world):
    """Forty known nodes; one entry expiring in 3 days, one expired 2 days ago."""
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = True
    settings.BASE_URL = "https://board.example"
    settings.MAILERS = {"default": mailer("locmem:")}
    return world.items


def add_items(suite, today):
    forty_known(suite, cap=0.5)
    return {"expiring": quarantine(suite, 1, today, days=3),
            "expired": quarantine(suite, 2, today, days=-2)}


@pytest.fixture
def sleeps(monkeypatch):
    return record_sleeps(monkeypatch, "notify.management.commands.notify")


def hook(suite, url, fmt="json") -> str:
    return webhook_set(suite=suite, url=url, webhook_format=fmt, actor="@lea")[1]


def notify() -> str:
    out = io.StringIO()
    call_command("notify", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_the_json_format_carries_the_items_as_data_and_the_signature_verifies(
    suite, items, receiver, sleeps
):
    secret = hook(suite, receiver.url, "json")
    assert "acme: webhook sent." in notify()
    [(path, headers, raw)] = receiver.requests
    assert path == "/hook"
    expected = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers["X-Flakeboard-Signature"], f"sha256={expected}")
    delivery = uuid.UUID(headers["X-Flakeboard-Delivery"])
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("Flakeboard")
    data = json.loads(raw)
    assert (data["suite"], data["test"]) == ("acme", False)
    by_node = {item["node"]: item for item in data["items"]}
    assert set(by_node) == {FLAKY.format(1), FLAKY.format(2)}
    expired = by_node[FLAKY.format(2)]
    assert (expired["kind"], expired["owner"]) == ("expired", "@finley")
    assert expired["expires"] == items["expired"].expires.isoformat()
    assert set(expired["links"]) == {"renew", "clear"}
    assert expired["links"]["clear"].startswith("https://board.example/suites/acme/")
    logged = WebhookPost.objects.get()
    assert (logged.id, logged.status, logged.attempts, logged.response_code, logged.items) == (
        delivery, "sent", 1, 200, 2)
    assert sleeps == []


def test_the_slack_format_is_text_plus_blocks(suite, items, receiver, sleeps):
    hook(suite, receiver.url, "slack")
    notify()
    [(_, _, raw)] = receiver.requests
    message = json.loads(raw)
    assert message["text"] == "Flakeboard: 1 expiring, 1 expired in acme"
    texts = [block["text"]["text"] for block in message["blocks"]]
    assert texts[0] == message["text"]
    assert any(FLAKY.format(2) in text and "|renew>" in text for text in texts[1:])


def test_a_500_is_retried_then_logged_and_a_later_run_that_day_tries_again(
    suite, items, receiver, sleeps, caplog
):
    hook(suite, receiver.url)
    receiver.answers = [500]
    with pytest.raises(CommandError, match="failed"):
        notify()
    assert len(receiver.requests) == 3 and sleeps == [1.0, 3.0]
    failed = WebhookPost.objects.get()
    assert (failed.status, failed.attempts, failed.response_code) == ("failed", 3, 500)
    webhook_rows = Delivery.objects.filter(channel="webhook")
    assert set(webhook_rows.values_list("status", flat=True)) == {"failed"}
    assert any("webhook of acme" in r.getMessage() for r in caplog.records)
    receiver.answers = [503, 200]  # the later run: one more 5xx, then through
    assert "acme: webhook sent." in notify()
    assert len(receiver.requests) == 5
    assert set(webhook_rows.values_list("status", "attempts")) == {("sent", 2)}
    assert WebhookPost.objects.filter(status="sent").get().attempts == 2


def test_a_redirect_is_not_followed_and_counts_as_a_failure(suite, items, receiver, sleeps):
    hook(suite, receiver.url)
    receiver.answers = [302]
    with pytest.raises(CommandError):
        notify()
    assert receiver.paths() == ["/hook"]  # never /elsewhere
    failed = WebhookPost.objects.get()
    assert (failed.status, failed.attempts, failed.response_code) == ("failed", 1, 302)
    assert "redirects are not followed" in failed.error


def test_a_dry_run_says_what_would_be_posted_and_posts_nothing(suite, items, receiver):
    hook(suite, receiver.url)
    out = io.StringIO()
    call_command("notify", "--dry-run", stdout=out)
    assert "acme: 2 items would be posted to the webhook." in out.getvalue()
    assert receiver.requests == [] and not Delivery.objects.exists()


def test_a_second_run_the_same_day_posts_nothing(suite, items, receiver, sleeps, today):
    hook(suite, receiver.url)
    notify()
    assert "acme: webhook nothing new." in notify()
    assert len(receiver.requests) == 1
    quarantine(suite, 3, today, days=2)  # new today: posted alone
    notify()
    assert len(receiver.requests) == 2
    assert [i["node"] for i in json.loads(receiver.requests[1][2])["items"]] == [
        FLAKY.format(3)]


def test_without_the_switch_the_loopback_receiver_is_never_reached(
    settings, suite, items, receiver, sleeps
):
    hook(suite, receiver.url)
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = False
    with pytest.raises(CommandError):
        notify()
    assert receiver.requests == []
    refused = WebhookPost.objects.get()
    assert (refused.status, refused.attempts, refused.response_code) == ("failed", 1, None)
    assert "resolves to 127.0.0.1, a loopback address" in refused.error


def test_a_name_resolving_to_a_private_address_is_refused_before_connecting(
    settings, monkeypatch
):
    settings.WEBHOOKS_ALLOW_PRIVATE_IPS = False
    answers = {"hooks.example.com": ["93.184.216.34", "10.0.0.7"]}  # one public, one not

    def resolve(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[host]]

    connected = []
    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(socket.socket, "connect", lambda self, address: connected.append(address))
    with pytest.raises(Refused, match=r"10\.0\.0\.7"):
        post("https://hooks.example.com/x", b"{}", {})
    assert connected == []


@pytest.mark.parametrize(("address", "public"), [
    ("127.0.0.1", False), ("10.1.2.3", False), ("172.16.0.1", False), ("192.168.1.1", False),
    ("169.254.169.254", False), ("224.0.0.1", False), ("240.0.0.1", False),
    ("0.0.0.0", False),  # noqa: S104 (an address checked, never bound)
    ("100.64.0.1", False), ("::1", False), ("fe80::1", False), ("fc00::1", False),
    ("::ffff:127.0.0.1", False), ("::", False), ("93.184.216.34", True),
    ("2606:4700::1111", True),
])
def test_only_public_addresses_are_posted_to(address, public):
    assert is_public(address) is public


def test_a_test_delivery_is_logged_and_not_counted_against_the_day(
    suite, items, receiver, sleeps
):
    hook(suite, receiver.url, "json")
    webhook = Webhook.objects.get(suite=suite)
    posted = send_test(webhook, items["expiring"].expires, actor="@lea")
    assert (posted.ok, posted.response_code) == (True, 200)
    assert json.loads(receiver.requests[0][2])["test"] is True
    assert WebhookPost.objects.get().test
    assert not Delivery.objects.filter(channel="webhook").exists()
    notify()  # the day's items still go
    assert len(receiver.requests) == 2
