"""The list endpoints' one envelope: a page of items, the total and a link to the next page.

``{"total": n, "page": p, "per_page": k, "next": url | null, "items": [...]}``. ``next`` is
the same request with the following page's number, so a client follows it until it is
null; a page past the end is empty, never an error. Each page costs two queries, the count
and the page's rows, whatever the list's length.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from ninja import Query, Schema
from pydantic import Field

from .errors import ApiError

MAX_PER_PAGE = 100
PER_PAGE = 25

PageNumber = Annotated[int, Query(ge=1, description="The page, from 1.")]
PerPage = Annotated[int, Query(ge=1, le=MAX_PER_PAGE,
                               description=f"Items per page, at most {MAX_PER_PAGE}.")]


class PagedOut(Schema):
    total: int = Field(ge=0, description="Items in the whole list, with its filters.")
    page: int = Field(ge=1)
    per_page: int = Field(ge=1, le=MAX_PER_PAGE)
    next: str | None = Field(description="The next page's address; null on the last page.")


def paged(request, items, *, page: int, per_page: int, item: Callable) -> dict:
    """The envelope of ``items`` (an ordered queryset) at ``page``, each row made by ``item``.
    A page number given twice is refused: which one was meant cannot be told."""
    twice = [name for name in ("page", "per_page") if len(request.GET.getlist(name)) > 1]
    if twice:
        raise ApiError(422, "invalid_request", f"{', '.join(twice)} is given more than once.",
                       [{"field": name, "code": "repeated", "message": "is given more than once"}
                        for name in twice])
    total = items.count()
    start = (page - 1) * per_page
    rows = [item(row) for row in items[start : start + per_page]] if start < total else []
    following = None
    if start + per_page < total:
        query = request.GET.copy()
        query["page"] = str(page + 1)
        following = request.build_absolute_uri(f"{request.path}?{query.urlencode()}")
    return {"total": total, "page": page, "per_page": per_page, "next": following, "items": rows}
