"""manage.py notify (issue 20): each owner's daily digest, sent through a real SMTP server
that the test starts on 127.0.0.1, at most once a day per item; who reads it, as the
settings page and the docs say."""

from __future__ import annotations

import email
import html
import io
import re
import socket
from email import policy
from urllib.parse import urlsplit

import pytest
from aiosmtpd.controller import Controller
from django.core.management import CommandError, call_command
from django.urls import resolve, reverse
from django.utils import timezone

from flakeboard.email_url import mailer
from ledger.models import QuarantineEntry
from ledger.tiers import tier_rule_add
from notify.models import Delivery
from runs.ingest import report_ingest
from tests.docs_text import doc_text
from tests.helpers import body, measurement
from tests.test_gate_status import FLAKY, quarantine
from tests.world import people_world

BASE_URL = "https://board.example"
FINLEY, LEA, QA = "finley@example.com", "lea@example.com", "qa@example.org"


class Inbox:
    """An aiosmtpd handler that keeps every message it accepts, and refuses some mailboxes."""

    def __init__(self):
        self.messages: list[email.message.EmailMessage] = []
        self.refused: set[str] = set()

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address in self.refused:
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(email.message_from_bytes(envelope.content, policy=policy.default))
        return "250 Message accepted"

    def to(self, address) -> list[email.message.EmailMessage]:
        return [m for m in self.messages if m["To"] == address]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def use_smtp(settings, port):
    settings.MAILERS = {"default": mailer(f"smtp://127.0.0.1:{port}?timeout=5")}


@pytest.fixture
def smtp(settings):
    """A real SMTP server on 127.0.0.1, the board's mail going to it; stopped after."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    use_smtp(settings, controller.port)
    yield inbox
    controller.stop()


def build_world():
    """This module's shared world (tests/world.py): the suites, their people and the ledger,
    built once for a run of the tests that ask for it."""
    world = people_world("lead", "owner", "viewer", "outsider",
                         suites=("suite", "other_suite"))
    world.ledger = add_ledger(world.suite, world.today, **world.users)
    return world


@pytest.fixture
def ledger(settings, world, suite, lead, owner, viewer, outsider, today):
    """Forty known nodes and, by owner: @finley (a member with an e-mail) one expiring, one
    expired and one tier violation; qa@example.org (an e-mail owner) one expiring; @ghost
    (no such user), @vic (a member without an e-mail) and @otto (another suite's lead) one
    expired each; @finley one active, which is in no digest. The world's, but a test that
    commits (tests/test_job_locks.py) builds its own."""
    settings.BASE_URL = BASE_URL
    settings.DEFAULT_FROM_EMAIL = "Flakeboard <board@example.com>"
    if world is not None:
        return world.ledger
    return add_ledger(suite, today, lead=lead, owner=owner, viewer=viewer, outsider=outsider)


def add_ledger(suite, today, *, lead, owner, viewer, outsider):
    for user, address in [(lead, LEA), (owner, FINLEY), (outsider, "otto@example.com")]:
        user.email = address
        user.save()
    suite.max_quarantined_share = 0.5
    suite.save()
    report_ingest(suite=suite, body=body([measurement(FLAKY.format(i)) for i in range(40)]),
                  actor="ci")
    entries = {
        "expiring": quarantine(suite, 1, today, days=3),
        "expired": quarantine(suite, 2, today, days=-2),
        "violation": quarantine(suite, 3, today, days=20),
        "active": quarantine(suite, 4, today, days=20),
        "qa": quarantine(suite, 5, today, days=5),
        "ghost": quarantine(suite, 6, today, days=-1),
        "vic": quarantine(suite, 7, today, days=-1),
        "otto": quarantine(suite, 8, today, days=-1),
    }
    tier_rule_add(suite=suite, glob=FLAKY.format(3), tier=0, actor="@lea")
    for name, owner_of in [("qa", QA), ("ghost", "@ghost"), ("vic", "@vic"), ("otto", "@otto")]:
        QuarantineEntry.objects.filter(pk=entries[name].pk).update(owner=owner_of)
    return entries


def notify(*args) -> str:
    out = io.StringIO()
    call_command("notify", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def text(message) -> str:
    return message.get_content().replace("\r\n", "\n")  # SMTP's line ends


def subject(message) -> str:
    return " ".join(str(message["Subject"]).split())  # unfolded


def nodes_in(message) -> set[str]:
    return {FLAKY.format(i) for i in range(1, 10) if f"- {FLAKY.format(i)}\n" in text(message)}


def test_each_owner_gets_one_digest_of_their_own_items(smtp, ledger):
    notify()
    assert sorted(m["To"] for m in smtp.messages) == [FINLEY, LEA, QA]
    [finley] = smtp.to(FINLEY)
    assert nodes_in(finley) == {FLAKY.format(1), FLAKY.format(2), FLAKY.format(3)}
    assert subject(finley) == "Flakeboard: 1 expiring, 1 expired, 1 tier violation in acme"
    assert finley["From"] == "Flakeboard <board@example.com>"
    [qa] = smtp.to(QA)
    assert nodes_in(qa) == {FLAKY.format(5)}
    assert subject(qa) == "Flakeboard: 1 expiring in acme"


def test_unreachable_owners_are_listed_to_the_leads_never_dropped(smtp, ledger):
    notify()
    [lea] = smtp.to(LEA)
    content = text(lea)
    assert nodes_in(lea) == {FLAKY.format(6), FLAKY.format(7), FLAKY.format(8)}
    assert "Unreachable owners" in content
    for owner in ("@ghost", "@vic", "@otto"):  # no user; no e-mail; not of this suite
        assert f"== {owner} ==" in content
    assert subject(lea) == "Flakeboard: 3 expired in acme"
    assert not smtp.to("otto@example.com")


# What decides who reads a digest, as the settings page and docs/operations.md say it.
RECIPIENTS_RULE = [
    "a digest shows the suite's entries, so it goes only to someone who may read them",
    "go to the suite's leads instead",
    "even one outside the suite",
    "an e-mail address is where the owner asked to be told",
]


def plain(text: str) -> str:
    """Words as a reader sees them: no tags, no Markdown code marks, spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>|`", "", html.unescape(text)).split())


def test_who_reads_a_digest_is_written_where_owners_look(client_for, lead, suite):
    page = client_for(lead).get(reverse("settings", args=[suite.slug])).content.decode()
    assert '<a href="#digests">Daily digests</a>' in page
    section = page.split('<section id="digests"')[1].split("</section>")[0]
    docs = doc_text("docs/operations.md").split("## Notifications")[1].split("\n## ")[0]
    for said in RECIPIENTS_RULE:
        assert said in plain(section), said
        assert said in plain(docs), said


def test_each_item_links_to_renew_or_clear_on_the_public_address(smtp, ledger):
    notify()
    content = text(smtp.to(FINLEY)[0])
    links = [line.split(": ", 1) for line in content.splitlines()
             if line.strip().startswith(("renew: ", "clear: "))]
    by_entry = {}
    for action, url in links:
        parts = urlsplit(url)
        assert f"{parts.scheme}://{parts.netloc}" == BASE_URL
        match = resolve(parts.path)
        assert match.url_name == f"entry_{action.strip()}"
        assert match.kwargs["suite"] == "acme"
        by_entry.setdefault(match.kwargs["pk"], []).append(match.url_name)
    assert by_entry == {
        ledger["expired"].pk: ["entry_renew", "entry_clear"],
        ledger["expiring"].pk: ["entry_renew", "entry_clear"],
        ledger["violation"].pk: ["entry_clear"],  # a violation can only leave the ledger
    }


def test_a_second_run_the_same_day_sends_nothing_new(smtp, ledger, today):
    notify()
    assert len(smtp.messages) == 3
    recorded = Delivery.objects.count()
    assert recorded == 3 + 1 + 3  # finley's three items, qa's one, the lead's three
    assert set(Delivery.objects.values_list("status", flat=True)) == {Delivery.Status.SENT}
    out = notify()
    assert len(smtp.messages) == 3
    assert Delivery.objects.count() == recorded
    assert "acme: 0 digests sent, 0 digests failed, 3 digests nothing new." in out
    # An item that is new today is still told, alone.
    quarantine(ledger["active"].suite, 9, today, days=2)
    notify()
    [*_, newest] = smtp.messages
    assert (newest["To"], nodes_in(newest)) == (FINLEY, {FLAKY.format(9)})


def test_a_dry_run_prints_what_would_be_sent_and_sends_and_records_nothing(smtp, ledger):
    out = notify("--dry-run")
    assert smtp.messages == []
    assert Delivery.objects.count() == 0
    assert "acme: 3 digests would be sent" in out
    assert f"To: {FINLEY}\nSubject: Flakeboard: 1 expiring, 1 expired, 1 tier violation" in out
    assert FLAKY.format(8) in out and f"{BASE_URL}/suites/acme/ledger/" in out


def test_a_refused_recipient_is_logged_and_recorded_and_the_others_are_sent(
    smtp, ledger, caplog
):
    smtp.refused.add(FINLEY)
    with pytest.raises(CommandError, match="1 digest failed to send"):
        notify()
    assert sorted(m["To"] for m in smtp.messages) == [LEA, QA]
    failed = Delivery.objects.filter(recipient=FINLEY)
    assert {(d.status, d.attempts) for d in failed} == {(Delivery.Status.FAILED, 1)}
    assert all("550" in d.error for d in failed)
    assert any(FINLEY in r.getMessage() for r in caplog.records if r.name == "flakeboard.notify")
    # A later run the same day tries the failed digest again, and only that one.
    smtp.refused.clear()
    notify()
    assert [m["To"] for m in smtp.messages[2:]] == [FINLEY]
    assert {(d.status, d.attempts) for d in failed.all()} == {(Delivery.Status.SENT, 2)}


def test_a_server_that_refuses_connections_fails_every_digest_without_crashing(
    settings, ledger, caplog
):
    use_smtp(settings, free_port())  # nothing listens there
    with pytest.raises(CommandError, match="3 digests failed to send"):
        notify()
    assert Delivery.objects.count() == 7
    assert set(Delivery.objects.values_list("status", flat=True)) == {Delivery.Status.FAILED}
    warnings = [r.getMessage() for r in caplog.records if r.name == "flakeboard.notify"]
    assert len(warnings) == 3 and all("Connection refused" in w or "refused" in w.lower()
                                      for w in warnings)


def test_the_suite_option_limits_the_run_to_one_suite(smtp, ledger, other_suite):
    out = notify("--suite", "other")
    assert smtp.messages == [] and "other: 0 digests sent" in out
    with pytest.raises(CommandError, match="No suite"):
        notify("--suite", "nope")


def test_an_entry_ready_to_clear_is_a_section_of_its_owners_digest(smtp, ledger):
    active = ledger["active"]
    QuarantineEntry.objects.filter(pk=active.pk).update(ready_to_clear=True,
                                                        ready_since=timezone.now())
    notify()
    [finley] = smtp.to(FINLEY)
    assert FLAKY.format(4) in nodes_in(finley)
    assert "Ready to clear" in text(finley)
    assert subject(finley) == ("Flakeboard: 1 expiring, 1 expired, 1 tier violation, "
                                 "1 ready to clear in acme")


def test_no_entry_ready_no_section(smtp, ledger):
    notify()
    assert "Ready to clear" not in text(smtp.to(FINLEY)[0])


def test_without_a_lead_to_tell_staff_are_told_and_without_staff_it_is_said(
    smtp, ledger, lead, staff, caplog
):
    lead.email = ""
    lead.save()
    staff.email = "stella@example.com"
    staff.save()
    notify()
    [stella] = smtp.to("stella@example.com")
    assert nodes_in(stella) == {FLAKY.format(6), FLAKY.format(7), FLAKY.format(8)}
    staff.delete()
    Delivery.objects.all().delete()
    err = io.StringIO()
    call_command("notify", stdout=io.StringIO(), stderr=err)
    assert "acme: 3 items with nobody to tell" in err.getvalue()
    assert any("no owner reachable" in r.getMessage() for r in caplog.records)
