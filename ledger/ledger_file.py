"""Reading and importing a flake_ledger.json (the ``import_ledger`` command's service).

Each entry is read by the wire's import row (``ledger.wire.LedgerRow``): what the file can
get wrong and the service cannot see, each field's type and range, with the same field
types (and codes) as an upload. Here is checked only what a model cannot see: the file's
shape, a key repeated within an entry, a node id repeated in the file. Everything about
the domain (the tier, the owner's and the evidence's format, the expiry bounds, one open
entry per node) is left to ``quarantine_create(imported=True)``, so the import and the form
refuse the same things.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction

from ledger.locks import lock_suite
from ledger.models import QuarantineEntry, Suite
from ledger.quarantine import quarantine_create
from ledger.refusals import kind_of
from ledger.selectors import share_figures
from ledger.wire import read_row

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
            f"the ledger must be a JSON object mapping node ids to entries (got {kind_of(data)})"
        )
    return data.pairs


def parse_row(nodeid: str, row: object) -> tuple[dict, Errors]:
    """quarantine_create's keyword arguments for one entry, and the errors of its fields.

    Every field is checked, so one pass names all that is wrong with a row.
    """
    entry, problems = read_row(nodeid, row)
    errors: Errors = defaultdict(list)
    for problem in problems:
        errors[problem.field or NON_FIELD_ERRORS].append(problem.message)
    seen: set[str] = set()
    # Read from a file, an object keeps its repeated keys (a plain dict cannot hold them).
    for key, _ in getattr(row, "pairs", row.items() if isinstance(row, dict) else ()):
        if key in seen:
            errors[key].append("appears more than once in the entry")
        seen.add(key)
    if errors:
        return {}, dict(errors)
    kwargs = {
        "nodeid": entry.node,
        "owner": entry.owner,
        "evidence": entry.evidence,
        "expires": entry.expires,
        "n": entry.n,
        "fails": entry.fails,
        "reported_upper95": entry.upper95,
        "seed_base": entry.seed_base,
    }
    return kwargs, {}


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
        lock_suite(suite.pk)
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
            f"{figures.size_words}), over the cap of {suite.max_quarantined_share:.1%}: "
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
