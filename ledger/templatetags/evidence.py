"""Evidence as the pages print it: a link when it is an http(s) URL, else as written
(``ledger/_evidence.html``, the one place that decides, by the rule)."""

from django import template

from flakeboard import rules

register = template.Library()


@register.filter
def evidence_is_link(evidence) -> bool:
    return rules.evidence_is_link(evidence)
