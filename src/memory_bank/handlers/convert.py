"""Store rows to the generated response models.

Only the fields a model declares are copied, so storage-only columns (org_id,
chain_id, idempotency_key, ...) can never leak into a response.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from memory_bank.generated import models
from memory_bank.store.tables import MemoryRow

M = TypeVar("M", bound=BaseModel)


def to_model(model: type[M], row: object, **beside: object) -> M:
    """``model`` from the row's attributes; ``beside`` supplies fields the row has no column for."""
    fields = {name: beside[name] if name in beside else getattr(row, name) for name in model.model_fields}
    return model.model_validate(fields)


def to_memory(row: MemoryRow) -> models.Memory:
    return to_model(models.Memory, row)


def to_search_hit(row: MemoryRow, score: float) -> models.SearchHit:
    return to_model(models.SearchHit, row, score=score)
