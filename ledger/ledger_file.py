"""Reading and importing a flake_ledger.json (the ``import_ledger`` command's service).

Here is checked only what the file can get wrong and the service cannot see: the JSON
shape, repeated node ids and each field's type and range. Everything about the domain (the
tier, the owner's and the evidence's format, the expiry bounds, one open entry per node) is
left to ``quarantine_create(imported=True)``, so the import and the form refuse the same
things.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from flakeboard import rules
from ledger import messages
from ledger.models import QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from ledger.selectors import share_figures

# date.fromisoformat also takes "20261213"; the ledger format (and export_ledger) writes
# YYYY-MM-DD, and a bare number there is more likely a mistake than a date.
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")

IMPORT_NOTE = "Imported from flake_ledger.json"

Errors = dict[str, list[str]]  # field name (or NON_FIELD_ERRORS) → messages


class LedgerFileError(ValueError):
    """The file as a whole is unusable: not JSON, or not a mapping of node ids to entries."""


class _Object(dict):
    """A JSON object that keeps its key/value pairs in file order, duplicates included:
    json.loads keeps only the last value of a repeated key, which would hide a row."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.pairs = pairs


def read_ledger(raw: bytes) -> list[tuple[str, object]]:
    """The (node id, entry) pairs of a flake_ledger.json, in file order, duplicates kept."""
    try:
        data = json.loads(raw.decode("utf-8"), object_pairs_hook=_Object)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise LedgerFileError(f"not valid JSON: {exc}") from None
    if not isinstance(data, _Object):
        raise LedgerFileError(
            f"the ledger must be a JSON object mapping node ids to entries (got {_kind(data)})"
        )
    return data.pairs


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: a JSON true is not a number
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    return {str: "a string", list: "a list"}.get(type(value), "an object")


def _whole(errors: Errors, name: str, value: object, low: int, high: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        shown = "missing" if value is None else _kind(value)
        errors[name].append(f"must be a whole number (got {shown})")
        return None
    if not low <= value <= high:
        errors[name].append(f"must be between {low} and {high} (got {value})")
        return None
    return value


def _text(errors: Errors, name: str, value: object) -> str:
    # Missing or null becomes "": the service then says what is required, as the form does.
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[name].append(f"must be a string (got {_kind(value)})")
        return ""
    return value


def parse_row(nodeid: str, row: object) -> tuple[dict, Errors]:
    """quarantine_create's keyword arguments for one entry, and the errors of its fields.

    Every field is checked, so one pass names all that is wrong with a row.
    """
    errors: Errors = defaultdict(list)
    if problem := rules.nodeid_problem(nodeid):
        errors["node"].append(messages.nodeid_message(problem, nodeid))
    if not isinstance(row, dict):
        errors[NON_FIELD_ERRORS].append(f"the entry must be a JSON object (got {_kind(row)})")
        return {}, dict(errors)
    seen: set[str] = set()
    # Read from a file, an object keeps its repeated keys (a plain dict cannot hold them).
    for key, _ in getattr(row, "pairs", row.items()):
        if key in seen:
            errors[key].append("appears more than once in the entry")
        seen.add(key)

    klass = row.get("class", "flake")
    if not isinstance(klass, str):
        errors["class"].append(f"must be a string (got {_kind(klass)})")
    elif klass != "flake":
        errors["class"].append(f'must be "flake" (got {klass!r})')

    n = _whole(errors, "n", row.get("n"), 1, rules.COUNT_MAX)
    fails = _whole(errors, "fails", row.get("fails"), 0, rules.COUNT_MAX if n is None else n)
    seed_base = row.get("seed_base")
    if seed_base is not None:
        seed_base = _whole(errors, "seed_base", seed_base, rules.SEED_MIN, rules.SEED_MAX)

    reported = row.get("upper95")
    # The range test also refuses NaN and infinities, and never turns a huge int into a float.
    if reported is not None and (
        isinstance(reported, bool) or not isinstance(reported, int | float)
        or not 0 <= reported <= 1
    ):
        errors["upper95"].append(f"must be null or a number from 0 to 1 (got {_kind(reported)})")
        reported = None

    expires = row.get("expires")
    if expires is None:
        errors["expires"].append("is required: a date written YYYY-MM-DD")
    elif not isinstance(expires, str):
        errors["expires"].append(f"must be a string YYYY-MM-DD (got {_kind(expires)})")
    else:
        try:
            if not _ISO_DATE.fullmatch(expires):
                raise ValueError
            expires = date.fromisoformat(expires)
        except ValueError:
            errors["expires"].append(f"must be a date written YYYY-MM-DD (got {expires!r})")

    kwargs = {
        "nodeid": nodeid,
        "owner": _text(errors, "owner", row.get("owner")),
        "evidence": _text(errors, "evidence", row.get("evidence")),
        "expires": expires,
        "n": n,
        "fails": fails,
        "reported_upper95": None if reported is None else float(reported),
        "seed_base": seed_base,
    }
    return kwargs, dict(errors)


@dataclass
class ImportOutcome:
    rows: int = 0
    created: list[QuarantineEntry] = field(default_factory=list)
    refused: list[tuple[str, Errors]] = field(default_factory=list)  # in file order
    warnings: list[str] = field(default_factory=list)
    stored: bool = False


def import_ledger(
    *, suite: Suite, pairs: list[tuple[str, object]], actor: str, today: date,
    keep_valid: bool = False,
) -> ImportOutcome:
    """Run every entry through quarantine_create inside one transaction, then keep it all,
    or (with ``keep_valid``) the entries that passed, or nothing if any was refused."""
    outcome = ImportOutcome(rows=len(pairs))
    positions = defaultdict(list)
    for index, (nodeid, _) in enumerate(pairs):
        positions[nodeid].append(index)
    with transaction.atomic():
        for index, (nodeid, row) in enumerate(pairs):
            if len(positions[nodeid]) > 1:
                # Which of the copies is meant cannot be told: none is stored, and the node
                # is named once, at its first appearance.
                if positions[nodeid][0] == index:
                    shown = ", ".join(str(i + 1) for i in positions[nodeid])
                    outcome.refused.append((nodeid, {"node": [
                        f"appears {len(positions[nodeid])} times in the file (as entries "
                        f"{shown}); none of them is imported"]}))
                continue
            kwargs, errors = parse_row(nodeid, row)
            if not errors:
                try:
                    # A savepoint per row: a refused row leaves nothing behind, the others stay.
                    with transaction.atomic():
                        entry = quarantine_create(
                            suite=suite, actor=actor, today=today, imported=True,
                            note=IMPORT_NOTE, **kwargs,
                        )
                except ValidationError as exc:
                    errors = exc.message_dict if hasattr(exc, "error_dict") else {
                        NON_FIELD_ERRORS: exc.messages}
            if errors:
                outcome.refused.append((nodeid, errors))
            else:
                outcome.created.append(entry)
        outcome.stored = keep_valid or not outcome.refused
        if not outcome.stored:
            # All or nothing: the rows that passed are rolled back with the rest.
            transaction.set_rollback(True)
            return outcome
        outcome.warnings = _warnings(suite, outcome.created, today)
    return outcome


def _warnings(suite: Suite, created: list[QuarantineEntry], today: date) -> list[str]:
    warnings = []
    for entry in created:
        nodeid = entry.node.nodeid
        if entry.expires < today:
            warnings.append(
                f"{nodeid}: expired on {entry.expires.isoformat()}; kept as expired, "
                "so the gate fails it until it is renewed or cleared."
            )
        if entry.upper95_mismatch:
            warnings.append(
                f"{nodeid}: reported upper95 {entry.reported_upper95} differs from the "
                f"server's {entry.upper95:.4f} (flagged upper95_mismatch)."
            )
    # An import is a migration: the share cap does not refuse rows, it only warns.
    figures = share_figures(suite, today)
    if figures.over_cap:
        warnings.append(
            f"The quarantined share is {figures.share:.1%} ({figures.quarantined} of "
            f"{figures.size}), over the cap of {suite.max_quarantined_share:.1%}: "
            "reports will fail with quarantine_cap_exceeded."
        )
    return warnings


def describe(errors: Errors) -> str:
    """A row's refusals on one line, each after the name of its field."""
    return "; ".join(
        message if name == NON_FIELD_ERRORS else f"{name}: {message}"
        for name, messages in errors.items()
        for message in messages
    )
