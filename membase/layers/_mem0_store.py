"""What the two Mem0 layers (mem0ai 1.0.5 and 2.x) do the same way: edit one memory, persist, close."""

from __future__ import annotations

import json
import logging
from typing import Any

from membase.utils.io import atomic_write_json

__all__ = ["FAILURES_FILENAME", "Mem0StoreMixin"]

logger = logging.getLogger(__name__)

FAILURES_FILENAME = "failures.json"


class Mem0StoreMixin:
    """Needs ``self.memory`` (a mem0 ``Memory``), ``self._qdrant``, ``self.failures`` and MemBaseLayer's helpers."""

    memory: Any
    _qdrant: Any
    failures: list[dict[str, str]]

    def delete(self, memory_id: str) -> bool:
        """Delete one mem0 memory; False when it does not exist."""
        if self.memory.get(memory_id) is None:
            return False
        self.memory.delete(memory_id)
        return True

    def update(self, memory_id: str, **kwargs: Any) -> bool:
        """Replace a memory's text (`data=` or `content=`); False when it does not exist."""
        data = kwargs.get("data", kwargs.get("content"))
        if data is None:
            raise ValueError(f"{type(self).__name__}.update needs data='<new text>'")
        if self.memory.get(memory_id) is None:
            return False
        self.memory.update(memory_id, data)
        return True

    # -- persistence ---------------------------------------------------------------------------
    def save_memory(self) -> None:
        """qdrant and the history DB persist by themselves; write the config and the failures."""
        self._write_config_file()  # type: ignore[attr-defined]
        atomic_write_json(self.save_path / FAILURES_FILENAME, self.failures)  # type: ignore[attr-defined]

    def load_memory(self, user_id: str | None = None) -> bool:
        """True when this folder holds this user's saved memory (the store is already open)."""
        if not self._check_config_file(user_id):  # type: ignore[attr-defined]
            return False
        failures = self.save_path / FAILURES_FILENAME  # type: ignore[attr-defined]
        if failures.is_file():
            self.failures = json.loads(failures.read_text(encoding="utf-8"))
        return True

    def cleanup(self) -> None:
        """Close the qdrant client and mem0's history database (safe to call twice)."""
        if self._qdrant is not None:
            try:
                self._qdrant.close()
            except Exception:  # closing twice or at interpreter exit
                logger.debug("qdrant close failed", exc_info=True)
            self._qdrant = None
        db = getattr(self.memory, "db", None)
        if db is not None and hasattr(db, "close"):
            try:
                db.close()
            except Exception:
                logger.debug("history db close failed", exc_info=True)
