"""The OpenAPI document, including the bodies the views read themselves.

Uploads are read as raw bytes (their digest makes them idempotent, and the board's own
validation names the row and field of each problem), so ninja never sees their schema.
``json_body`` describes such a body for the document, and ``DocumentedAPI`` adds the
models it refers to under ``components``.
"""

from __future__ import annotations

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
    def get_openapi_schema(self, **kwargs):
        schema = super().get_openapi_schema(**kwargs)
        known = schema["components"]["schemas"]
        for name, component in _components.items():
            known.setdefault(name, component)
        return schema
