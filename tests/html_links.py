"""Links read off a rendered page, as a browser would follow them: a test that builds a
page's URLs itself would not notice the page linking somewhere else."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urlsplit

from django.test import Client


class _NodeLinks(HTMLParser):
    """The node links of a results table (``<td class="node"><a href=…>id</a>``) and the
    page's rel="next" link."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self.next: str | None = None
        self._in_node_cell = False
        self._href: str | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "td" and "node" in (attrs.get("class") or "").split():
            self._in_node_cell = True
        elif tag == "a" and self._in_node_cell and self._href is None:
            self._href, self._text = attrs["href"], []
        elif tag == "a" and attrs.get("rel") == "next":
            self.next = attrs["href"]

    def handle_data(self, data):
        if self._href is not None:
            self._text.append(data)

    def handle_endtag(self, tag):
        if tag == "a" and self._href is not None:
            self.links.append(("".join(self._text), self._href))
            self._href = None
        elif tag == "td":
            self._in_node_cell = False


def node_links(client: Client, url: str) -> dict[str, str]:
    """Node id → the href its row links to, over every page of a report or batch page."""
    found: dict[str, str] = {}
    path = urlsplit(url).path
    while url:
        response = client.get(url)
        assert response.status_code == 200, url
        parser = _NodeLinks()
        parser.feed(response.content.decode())
        for shown, href in parser.links:
            assert shown not in found, f"{shown!r} listed twice"
            found[shown] = href
        url = path + parser.next if parser.next and parser.next.startswith("?") else parser.next
    return found
