"""The OpenAPI document, including the bodies the views read themselves.

Uploads are read as raw bytes (their digest makes them idempotent, and the board's own
validation names the row and field of each problem), so ninja never sees their schema.
``json_body`` describes such a body for the document, and ``DocumentedAPI`` adds the
models it refers to under ``components``.

The document follows from the code alone (its routes and models), so ``DocumentedAPI``
builds it once for each path prefix in a process, not on every request (a third of a
second each): each caller gets its own copy.
"""

from __future__ import annotations

import copy
from typing import Any

from ninja import NinjaAPI
from pydantic import TypeAdapter

REF_TEMPLATE = "#/components/schemas/{model}"
_components: dict[str, dict] = {}


def json_body(body_type: Any, *, description: str, responses: dict | None = None) -> dict:
    """``openapi_extra`` for an operation whose JSON request body is ``body_type``; and
    ``responses``, extra documentation (such as headers) merged into its answers."""
    schema = TypeAdapter(body_type).json_schema(ref_template=REF_TEMPLATE, mode="validation")
    _components.update(schema.pop("$defs", {}))
    return {
        "requestBody": {
            "required": True,
            "description": description,
            "content": {"application/json": {"schema": schema}},
        },
        "responses": responses or {},
    }


class DocumentedAPI(NinjaAPI):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._documents: dict[str, dict] = {}  # by path prefix

    def get_openapi_schema(self, *, path_prefix=None, path_params=None):
        if path_prefix is None:
            path_prefix = self.get_root_path(path_params or {})
        if path_prefix not in self._documents:
            schema = super().get_openapi_schema(path_prefix=path_prefix)
            known = schema["components"]["schemas"]
            for name, component in _components.items():
                known.setdefault(name, component)
            self._documents[path_prefix] = schema
        return copy.deepcopy(self._documents[path_prefix])
