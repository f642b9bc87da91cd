"""Reads of the memories projection by author, and the digest of what it serves.

``digest`` is over the visible state only: of every live chain (neither forgotten nor
erased) its id, container and current content, context, metadata, static flag and observed
time as the API shows them; the links between live chains; and each container's profile.
Seqs, version numbers and ids, validity windows and provenance are left out, so that a state
reached again by new events (a rollback gives a chain its earlier version back as a new one,
and forgets the chains an agent made) has the digest it had before.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection

from ...clock import iso
from ..sqlite import SqliteProjection


class MemoryAudit(SqliteProjection):
    """Mixed into the memories projection's reads: queries over its tables, under its lock."""

    def rows_by_agents(self, agents: Collection[str], container_tag: str | None) -> set[int]:
        """Row ids of every version the agents wrote (in the container, if one is named)."""
        if not agents:
            return set()
        marks = ",".join("?" * len(agents))
        sql = f"SELECT row_id FROM versions WHERE agent_id IN ({marks})"
        args: list[object] = [*sorted(agents)]
        if container_tag is not None:
            sql += " AND container_tag = ?"
            args.append(container_tag)
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return {int(r[0]) for r in rows}

    def digest(self, container_tag: str | None = None) -> str:
        """sha256 of the visible state (see the module's docstring), hex."""
        where, args = (
            ("", ()) if container_tag is None else (" AND c.container_tag = ?", (container_tag,))
        )
        h = hashlib.sha256()
        with self._lock:
            chains = self._conn.execute(
                "SELECT c.memory_id, c.container_tag, v.content, v.context, v.metadata,"
                " v.is_static, v.observed_at_text, v.observed_at FROM chains c"
                " JOIN versions v ON v.memory_id = c.memory_id AND v.valid_to IS NULL"
                f" WHERE c.forgotten = 0 AND c.erased = 0{where} ORDER BY c.memory_id",
                args,
            ).fetchall()
            live = {r[0] for r in chains}
            links = self._conn.execute(
                "SELECT DISTINCT memory_id, target_memory_id FROM links"
                " ORDER BY memory_id, target_memory_id"
            ).fetchall()
            profiles = self._conn.execute(
                "SELECT container_tag, profile FROM profiles"
                + ("" if container_tag is None else " WHERE container_tag = ?")
                + " ORDER BY container_tag",
                args,
            ).fetchall()
        for memory_id, tag, content, context, metadata, static, observed_text, observed in chains:
            shown = observed_text or iso(observed)
            meta = None if metadata is None else json.loads(metadata)
            _line(h, ["chain", memory_id, tag, content, context, meta, bool(static), shown])
        for newer, older in links:
            if newer in live and older in live:
                _line(h, ["link", newer, older])
        for tag, profile in profiles:
            facts = None if profile is None else json.loads(profile)
            if facts and (facts.get("static") or facts.get("dynamic")):  # empty: none set
                _line(h, ["profile", tag, facts])
        return h.hexdigest()


def _line(h: hashlib._Hash, item: list[object]) -> None:
    h.update(json.dumps(item, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    h.update(b"\n")
