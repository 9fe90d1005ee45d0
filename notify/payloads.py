"""A webhook's body: the suite's items of the day as data (the generic JSON format), or the
same items as a Slack-compatible message (``text`` plus blocks); and its signature."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import date

from ledger.models import Suite

from .digests import SECTIONS, Digest
from .models import Webhook
from .text import subject

SIGNATURE_HEADER = "X-Flakeboard-Signature"
DELIVERY_HEADER = "X-Flakeboard-Delivery"


def data(digest: Digest, *, test: bool = False) -> dict:
    """The generic JSON format: the suite, the day and each item with its links."""
    return {
        "suite": digest.suite.slug,
        "title": digest.suite.title,
        "day": digest.today.isoformat(),
        "test": test,
        "summary": subject(digest) if digest.items else "Flakeboard: nothing due",
        "items": [
            {
                "kind": str(item.kind),
                "node": item.entry.node.nodeid,
                "owner": item.entry.owner,
                "expires": item.entry.expires.isoformat(),
                "links": dict(item.links),
            }
            for item in digest.items
        ],
    }


def sample(suite: Suite, today: date) -> dict:
    """What "send test" posts: the format's shape with one made-up item."""
    return {
        "suite": suite.slug, "title": suite.title, "day": today.isoformat(), "test": True,
        "summary": f"Flakeboard: a test delivery for {suite.slug}",
        "items": [{"kind": "expiring", "node": "tests/test_example.py::test_sample",
                   "owner": "@example", "expires": today.isoformat(), "links": {}}],
    }


def _escape(text: str) -> str:
    """Slack's mrkdwn reads &, < and > as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack(content: dict) -> dict:
    """The Slack-compatible message: a summary line, then a block per item."""
    headings = {str(kind): kind.label for kind in SECTIONS}
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": _escape(content["summary"])}}]
    for item in content["items"]:
        links = " · ".join(f"<{url}|{action}>" for action, url in item["links"].items())
        lines = [f"*{_escape(headings.get(item['kind'], item['kind']))}*: "
                 f"`{_escape(item['node'])}`",
                 f"owner {_escape(item['owner'])} · expires {item['expires']}"]
        if links:
            lines.append(links)
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(lines)}})
    return {"text": content["summary"], "blocks": blocks}


def body(webhook_format: str, content: dict) -> bytes:
    shaped = slack(content) if webhook_format == Webhook.Format.SLACK else content
    return json.dumps(shaped, separators=(",", ":"), ensure_ascii=False).encode()


def signature(secret: str, raw_body: bytes) -> str:
    """The X-Flakeboard-Signature value: HMAC-SHA256 of the exact body, with the secret."""
    return "sha256=" + hmac.new(secret.encode(), raw_body, hashlib.sha256).hexdigest()
