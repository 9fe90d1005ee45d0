"""The suite a management command names on its command line."""

from __future__ import annotations

from django.core.management.base import CommandError

from .models import Suite


def get_suite(slug: str) -> Suite:
    suite = Suite.objects.filter(slug=slug).first()
    if suite is None:
        raise CommandError(f"No suite “{slug}”. Create it with: manage.py create_suite {slug}")
    return suite
