"""The board's CSV downloads: one writer, and the one place a cell is made safe to open.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab
or carriage return before one) as a formula. Node ids, owners and notes are user text, so
every text cell that starts so gets a leading ``'``, which shows as text (OWASP's advice
for CSV injection). Numbers and dates are written as they are: a negative number is data.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence

from django.http import StreamingHttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Rows read from the database at a time, so a download of any length holds one chunk.
CSV_CHUNK = 500


def neutralised(cell):
    """A text cell that a spreadsheet would run, prefixed with ``'``; any other cell as it is."""
    if isinstance(cell, str) and cell.startswith(FORMULA_STARTS):
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
