from django.core.management.base import CommandError

from ledger.models import Suite


def get_suite(slug: str) -> Suite:
    suite = Suite.objects.filter(slug=slug).first()
    if suite is None:
        raise CommandError(f"No suite “{slug}”. Create it with: manage.py create_suite {slug}")
    return suite


def one_line(error) -> str:
    """A ValidationError as one readable line."""
    if hasattr(error, "message_dict"):
        return "; ".join(f"{k}: {' '.join(v)}" for k, v in error.message_dict.items())
    return " ".join(getattr(error, "messages", [str(error)]))
