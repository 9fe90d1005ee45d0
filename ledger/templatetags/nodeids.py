"""Node ids as the pages print them: long ids break after ``::`` and ``/`` on a narrow
screen, never in the middle of a name."""

import re

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

register = template.Library()

# Escaping never writes ":" or "/", so the breaks go into the escaped text.
BREAK_AFTER = re.compile(r"(::|/)")


@register.filter
def wrap_nodeid(nodeid) -> str:
    """The id escaped, with a <wbr> after each ``::`` and ``/``."""
    return mark_safe(BREAK_AFTER.sub(r"\1<wbr>", str(conditional_escape(nodeid))))
