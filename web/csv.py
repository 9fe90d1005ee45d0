"""The board's CSV downloads: one writer, and the one place a cell is made safe to open.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula; some
skip the whitespace before one (spaces, a tab, a carriage return), and some locales read the
full-width signs (U+FF1D, U+FF0B, U+FF0D, U+FF20) as the same. Node ids, owners and notes
are user text, so every text cell that starts with a tab or a carriage return, or whose
first character after any whitespace is one of those signs in either width, gets a leading
``'``, which shows as text (OWASP's advice for CSV injection). Numbers and dates are
written as they are: a negative number is data. Every CSV the board writes goes through
``csv_response``.
"""

from __future__ import annotations

import csv
import unicodedata
from collections.abc import Iterable, Sequence

from django.http import StreamingHttpResponse

FORMULA_SIGNS = ("=", "+", "-", "@")  # and their full-width forms, which NFKC folds to them
CONTROL_STARTS = ("\t", "\r")
# Rows read from the database at a time, so a download of any length holds one chunk.
CSV_CHUNK = 500


def runs_as_formula(text: str) -> bool:
    """Whether a spreadsheet may run ``text``: a tab or carriage return first, or a formula
    sign (in either width) first once the whitespace before it is skipped."""
    if text.startswith(CONTROL_STARTS):
        return True
    first = text.lstrip()[:1]
    return bool(first) and unicodedata.normalize("NFKC", first).startswith(FORMULA_SIGNS)


def neutralised(cell):
    """A text cell that a spreadsheet would run, prefixed with ``'``; any other cell as it is."""
    if isinstance(cell, str) and runs_as_formula(cell):
        return "'" + cell
    return cell


class _Echo:
    """A file whose write answers the line, for csv.writer to stream through."""

    def write(self, line: str) -> str:
        return line


def csv_response(filename: str, header: Sequence[str], rows: Iterable[Sequence]):
    """A CSV download of ``rows`` under ``header``, written as it is read (``rows`` may be a
    lazy iterator over thousands), every cell neutralised."""
    writer = csv.writer(_Echo())

    def lines():
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow([neutralised(cell) for cell in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
