"""What CI uploaded: flake reports with their measurements, verdict batches with their
per-node verdicts, the per-day reason-code rollups the charts read, and each suite's impact
map: a module per idea (uploads, reports, verdicts, rollups, impact), all importable from
here."""

from __future__ import annotations

from .impact import ImpactMap, ImpactPath
from .reports import (
    CAUSE_ROLE_TEXT,
    CLASSIFICATION_CHOICES,
    CLASSIFICATION_TEXT,
    Measurement,
    Report,
)
from .rollups import ReasonRollup
from .uploads import (
    ENTRY_STATE_CHOICES,
    REASON_CHOICES,
    STATUS_CHOICES,
    VERDICT_CHOICES,
    JudgedAgainst,
    Upload,
    UploadRow,
    row_indexes,
    upload_keys,
)
from .verdicts import NodeVerdict, VerdictBatch

__all__ = [
    "CAUSE_ROLE_TEXT",
    "CLASSIFICATION_CHOICES",
    "CLASSIFICATION_TEXT",
    "ENTRY_STATE_CHOICES",
    "REASON_CHOICES",
    "STATUS_CHOICES",
    "VERDICT_CHOICES",
    "ImpactMap",
    "ImpactPath",
    "JudgedAgainst",
    "Measurement",
    "NodeVerdict",
    "ReasonRollup",
    "Report",
    "Upload",
    "UploadRow",
    "VerdictBatch",
    "row_indexes",
    "upload_keys",
]
