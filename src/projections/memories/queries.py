"""The reads of the memories projection: every query over its tables, under its lock."""

from __future__ import annotations

import json
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Literal, get_args

import msgspec
import numpy as np
import numpy.typing as npt

from ...eventlog.events import ContainerErased, EmbedderPinned, ImportOrigin
from ...texts import content_hash
from ..journaled import JournaledSet
from ..vectors.exact import StoredVectors, stored_matrix
from .audit import MemoryAudit
from .rows import (
    FROM_VERSIONS,
    VERSION_COLUMNS,
    ChainView,
    HistoryRow,
    ImportRow,
    LinkRow,
    SplitRow,
    VersionRow,
    decode_version,
)

_decode_receipt = msgspec.json.Decoder(ContainerErased).decode

_EMPTY: frozenset[int] = frozenset()
_NO_AGENTS: frozenset[str] = frozenset()
# What a person browses by (``browse``).
Browse = Literal["live", "superseded", "forgotten", "flagged", "quarantined"]
BROWSE: tuple[Browse, ...] = get_args(Browse)


# Stored vectors decoded at a time when the vector index fills its matrix at boot.
VECTOR_CHUNK = 16_384


class MemoryQueries(MemoryAudit):
    """The read side of ``MemoryProjection``: its queries, safe from any thread.

    Every read takes the projection's lock (``live_rows`` of a held set excepted). The live
    sets are the fold's (see ``MemoryProjection.__init__``), read here and, for a container
    not held yet, read from the tables.
    """

    _live: dict[str, JournaledSet]
    _live_row: dict[str, tuple[str, int]]  # memory_id -> (container, row_id)
    _any_links: bool  # whether any ``memory.linked`` was folded: most stores have none

    _LIVE_SQL = (
        "SELECT v.memory_id, v.container_tag, v.row_id FROM versions v"
        " JOIN chains c ON c.memory_id = v.memory_id"
        " WHERE v.valid_to IS NULL AND c.forgotten = 0 AND c.erased = 0"
    )

    def _container_live(self, container_tag: str) -> AbstractSet[int]:
        """The container's live set, read from the tables if not held; caller holds the lock."""
        live = self._live.get(container_tag)
        if live is not None:
            return live
        rows = self._conn.execute(self._LIVE_SQL + " AND v.container_tag = ?", (container_tag,))
        found: list[int] = []
        for memory_id, _, row_id in rows:
            found.append(row_id)
            self._live_row[memory_id] = (container_tag, row_id)
        # Made whole: rows read are no changes for the journal to keep.
        live = JournaledSet(found)
        if not live:
            return _EMPTY  # not kept: any container name may be asked for
        self._live[container_tag] = live
        return live

    def live_rows(self, container_tag: str) -> AbstractSet[int]:
        """Row ids of the latest versions of the container's live chains.

        A live view, not a copy (recall and writes ask for it on every call, and a container
        may hold many thousands): it changes as batches commit, and callers must not mutate it.
        """
        live = self._live.get(container_tag)  # held: no lock, a batch being applied may hold it
        if live is not None:
            return live
        with self._lock:
            return self._container_live(container_tag)

    def _meta(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    # --- queries -------------------------------------------------------------------------------

    def profile(
        self, container_tag: str, hidden_agents: AbstractSet[str] = _NO_AGENTS
    ) -> tuple[dict[str, object], int] | None:
        """A container's profile (decoded JSON) and when it was set, if it has one; with
        ``hidden_agents``, the last one none of them set (a quarantined writer's is not
        served: the one before it is)."""
        with self._lock:
            if hidden_agents:
                marks = ",".join("?" * len(hidden_agents))
                row = self._conn.execute(
                    "SELECT profile, updated_at FROM profile_history WHERE container_tag = ?"
                    f" AND agent_id NOT IN ({marks}) ORDER BY seq DESC LIMIT 1",
                    (container_tag, *sorted(hidden_agents)),
                ).fetchone()
            else:
                row = self._conn.execute(
                    "SELECT profile, updated_at FROM profiles WHERE container_tag = ?",
                    (container_tag,),
                ).fetchone()
        if row is None or row[0] is None:
            return None
        profile: dict[str, object] = json.loads(row[0])
        return profile, int(row[1])

    def pinned_embedder(self) -> EmbedderPinned | None:
        """The embedder the data dir's vectors are made by: the first pin, or the target of
        the latest re-embedding."""
        raw = self._meta("embedder")
        return None if raw is None else msgspec.json.decode(raw, type=EmbedderPinned)

    def reembedding(self) -> str | None:
        """The digest of the embedder a re-embedding under way moves to, if one is."""
        return self._meta("reembedding")

    def chain(self, memory_id: str) -> ChainView | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT memory_id, container_tag, created_at, latest_version, forgotten,"
                " forgotten_at, forgotten_reason, erased FROM chains WHERE memory_id = ?",
                (memory_id,),
            ).fetchone()
            if row is None:
                return None
            versions = self._versions(
                f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS} WHERE v.memory_id = ?"
                " ORDER BY v.version",
                (memory_id,),
            )
        return ChainView(
            memory_id=row[0],
            container_tag=row[1],
            created_at=row[2],
            latest_version=row[3],
            forgotten=bool(row[4]),
            forgotten_at=row[5],
            forgotten_reason=row[6],
            erased=bool(row[7]),
            versions=versions,
        )

    def latest(self, memory_id: str) -> VersionRow | None:
        rows = self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS}"
            " WHERE v.memory_id = ? AND v.valid_to IS NULL",
            (memory_id,),
        )
        return rows[0] if rows else None

    def live_duplicates(self, container_tag: str, digests: Sequence[str]) -> dict[str, VersionRow]:
        """For each content hash, the latest version of a live chain in the container with
        that content (the oldest such chain, if several): one query for a whole batch."""
        wanted = sorted(set(digests))
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        found: dict[str, VersionRow] = {}
        rows = self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS} WHERE v.container_tag = ?"
            f" AND v.content_hash IN ({marks}) AND v.valid_to IS NULL AND c.forgotten = 0"
            " AND c.erased = 0 ORDER BY v.row_id",
            (container_tag, *wanted),
        )
        for row in rows:
            found.setdefault(content_hash(row.content or ""), row)
        return found

    def latest_of(self, memory_ids: Sequence[str]) -> dict[str, VersionRow]:
        """Each chain's latest version, by memory id (those that exist): one query."""
        rows = self._rows_where("v.memory_id", sorted(set(memory_ids)), " AND v.valid_to IS NULL")
        return {r.memory_id: r for r in rows}

    def by_numbers(self, numbered: Sequence[tuple[str, int]]) -> dict[tuple[str, int], VersionRow]:
        """Versions by (memory id, version number), those that exist: one query."""
        wanted = sorted(set(numbered))
        if not wanted:
            return {}
        pairs = ",".join("(?, ?)" for _ in wanted)
        rows = self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS}"
            f" WHERE (v.memory_id, v.version) IN (VALUES {pairs})",
            tuple(value for pair in wanted for value in pair),
        )
        return {(r.memory_id, r.version): r for r in rows}

    def by_version_ids(self, version_ids: Sequence[str]) -> dict[str, VersionRow]:
        return {r.version_id: r for r in self._rows_where("v.version_id", version_ids)}

    def stamps(self, row_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """``row_id -> (version_id, observed_at)`` of the versions that exist: what ranking
        needs of every candidate, without reading whole rows."""
        if not row_ids:
            return {}
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            found = self._conn.execute(
                f"SELECT row_id, version_id, observed_at FROM versions WHERE row_id IN ({marks})",
                tuple(row_ids),
            ).fetchall()
        return {int(r): (str(v), int(o)) for r, v, o in found}

    def by_row_ids(self, row_ids: Sequence[int]) -> dict[int, VersionRow]:
        return {r.row_id: r for r in self._rows_where("v.row_id", row_ids)}

    def _rows_where(
        self, column: str, values: Sequence[object], also: str = ""
    ) -> list[VersionRow]:
        if not values:
            return []
        marks = ",".join("?" * len(values))
        return self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS} WHERE {column} IN ({marks}){also}",
            tuple(values),
        )

    def list_latest(
        self,
        *,
        container_tag: str | None = None,
        include_forgotten: bool = False,
        limit: int = 50,
        offset: int = 0,
        hidden_agents: AbstractSet[str] = _NO_AGENTS,
    ) -> tuple[list[VersionRow], int]:
        """The latest version of each chain, newest first, and the total count; a chain whose
        latest version one of ``hidden_agents`` wrote is left out."""
        where = ["v.valid_to IS NULL", "c.erased = 0"]
        args: list[object] = []
        if hidden_agents:
            where.append(f"v.agent_id NOT IN ({','.join('?' * len(hidden_agents))})")
            args += sorted(hidden_agents)
        if container_tag is not None:
            where.append("v.container_tag = ?")
            args.append(container_tag)
        if not include_forgotten:
            where.append("c.forgotten = 0")
        clause = " AND ".join(where)
        with self._lock:
            total = self._conn.execute(
                f"SELECT count(*) {FROM_VERSIONS} WHERE {clause}", args
            ).fetchone()[0]
        rows = self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS} WHERE {clause}"
            " ORDER BY v.row_id DESC LIMIT ? OFFSET ?",
            (*args, limit, offset),
        )
        return rows, int(total)

    def browse(
        self,
        *,
        status: Browse,
        container_tag: str | None = None,
        agent_id: str | None = None,
        text: str | None = None,
        hidden_agents: AbstractSet[str] = _NO_AGENTS,
        flagged: AbstractSet[str] = frozenset(),
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[VersionRow], dict[str, int]]:
        """A page of versions of one status, newest first, and how many versions each status
        holds under the same filters (one pass over them): ``live`` the latest of each chain
        in service, ``superseded`` the versions a later one replaced, ``forgotten`` the latest
        of forgotten chains, ``flagged`` the latest versions the detector flagged,
        ``quarantined`` the latest versions of the agents in ``hidden_agents`` (every other
        status leaves them out). ``text``: words every version listed holds in its content, in
        any order, each as a substring, case-insensitive."""
        where = ["c.erased = 0"]
        args: list[object] = []
        if container_tag is not None:
            where.append("v.container_tag = ?")
            args.append(container_tag)
        if agent_id is not None:
            where.append("v.agent_id = ?")
            args.append(agent_id)
        for word in (text or "").split():
            escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("v.content LIKE ? ESCAPE '\\'")
            args.append(f"%{escaped}%")
        conditions, condition_args = _statuses(hidden_agents, flagged)
        columns = ", ".join(f"coalesce(sum({conditions[s]}), 0)" for s in BROWSE)
        clause = " AND ".join(where)
        with self._lock:
            row = self._conn.execute(
                f"SELECT {columns} {FROM_VERSIONS} WHERE {clause}",
                [*(a for s in BROWSE for a in condition_args[s]), *args],
            ).fetchone()
        counts: dict[str, int] = {s: int(n) for s, n in zip(BROWSE, row, strict=True)}
        rows = self._versions(
            f"SELECT {VERSION_COLUMNS} {FROM_VERSIONS} WHERE {clause} AND {conditions[status]}"
            " ORDER BY v.row_id DESC LIMIT ? OFFSET ?",
            (*args, *condition_args[status], limit, offset),
        )
        return rows, counts

    def agent_ids(self, container_tag: str | None = None) -> list[str]:
        """The agents that wrote a version (of one container, or of any)."""
        sql = "SELECT DISTINCT agent_id FROM versions"
        args: tuple[object, ...] = ()
        if container_tag is not None:
            sql += " WHERE container_tag = ?"
            args = (container_tag,)
        with self._lock:
            return sorted(row[0] for row in self._conn.execute(sql, args))

    def container_tags(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute("SELECT DISTINCT container_tag FROM chains").fetchall()
        return sorted(row[0] for row in rows)

    def visible_rows(
        self,
        *,
        container_tag: str | None,
        as_of: int | None,
        include_forgotten: bool,
        fact_as_of: int | None = None,
    ) -> frozenset[int]:
        """Versions a search may serve: the latest, or those valid at ``as_of`` (log time,
        validFrom inclusive, validTo exclusive). Forgetting applies at query time, so a chain
        forgotten since ``as_of`` stays hidden unless forgotten chains are asked for.

        With ``fact_as_of`` (fact time), of each chain the version observed last at or before
        it (the latest version among equals) among those recorded by ``as_of`` (or now): what
        was true then. A chain with no version observed by then has none."""
        where = ["c.erased = 0"]
        args: list[object] = []
        if fact_as_of is not None:
            where.append("v.observed_at <= ? AND v.content IS NOT NULL")
            args.append(fact_as_of)
            if as_of is not None:
                where.append("v.valid_from <= ?")
                args.append(as_of)
        elif as_of is None:
            where.append("v.valid_to IS NULL")
        else:
            where.append("v.valid_from <= ? AND (v.valid_to IS NULL OR v.valid_to > ?)")
            args += [as_of, as_of]
        if container_tag is not None:
            where.append("v.container_tag = ?")
            args.append(container_tag)
        if not include_forgotten:
            where.append("c.forgotten = 0")
        sql = f"SELECT v.row_id {FROM_VERSIONS} WHERE {' AND '.join(where)}"
        if fact_as_of is not None:
            sql = (
                "SELECT row_id FROM (SELECT v.row_id, ROW_NUMBER() OVER (PARTITION BY"
                " v.memory_id ORDER BY v.observed_at DESC, v.version DESC) AS n"
                f" {FROM_VERSIONS} WHERE {' AND '.join(where)}) WHERE n = 1"
            )
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return frozenset(int(r[0]) for r in rows)

    def vectors_of(self, row_ids: Sequence[int]) -> list[tuple[int, bytes]]:
        if not row_ids:
            return []
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT row_id, vector FROM vectors WHERE row_id IN ({marks})", tuple(row_ids)
            ).fetchall()
        return [(int(r), bytes(v)) for r, v in rows]

    def vectors_through(self, seq: int) -> StoredVectors | None:
        """Every stored vector of a version made at or before ``seq``, by ascending row id,
        as one matrix; None if they are not all of one width."""
        with self._lock:
            (count,) = self._conn.execute(
                "SELECT count(*) FROM vectors WHERE row_id <= ?", (seq,)
            ).fetchone()
            rows = self._conn.execute(
                "SELECT row_id, vector FROM vectors WHERE row_id <= ? ORDER BY row_id", (seq,)
            )
            # Decoded a chunk at a time into one matrix: the rows as Python objects, their
            # joined bytes and the decoded copy at once were 2.6 GiB at 1M memories.
            labels = np.empty(int(count), dtype=np.int64)
            data: npt.NDArray[np.float32] | None = None
            at = 0
            while chunk := rows.fetchmany(VECTOR_CHUNK):
                part = stored_matrix(chunk)
                if part is None or at + len(chunk) > count:
                    return None
                if data is None:
                    data = np.empty((int(count), part.data.shape[1]), dtype=np.float32)
                elif part.data.shape[1] != data.shape[1]:
                    return None
                labels[at : at + len(chunk)] = part.labels
                data[at : at + len(chunk)] = part.data
                at += len(chunk)
        if data is None or at != count:
            return stored_matrix([]) if at == count == 0 else None
        return StoredVectors(labels, data)

    def rows_of_container(self, container_tag: str) -> list[int]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT row_id FROM versions WHERE container_tag = ?", (container_tag,)
            ).fetchall()
        return [int(r[0]) for r in rows]

    def version_count(self, container_tag: str) -> int:
        """The versions of the container's chains not erased."""
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM versions v JOIN chains c ON c.memory_id = v.memory_id"
                " WHERE c.container_tag = ? AND c.erased = 0",
                (container_tag,),
            ).fetchone()
        return int(row[0])

    def last_erasure(self, container_tag: str) -> tuple[int, int, ContainerErased] | None:
        """The seq, time and receipt of the container's last erasure, if it was erased."""
        with self._lock:
            row = self._conn.execute(
                "SELECT seq, at, receipt FROM erasures WHERE container_tag = ?", (container_tag,)
            ).fetchone()
        if row is None:
            return None
        return int(row[0]), int(row[1]), _decode_receipt(row[2])

    # --- portability ---------------------------------------------------------------------

    def chain_ids(self, container_tag: str | None = None) -> list[str]:
        """Ids of the chains not erased, by container, then in the order they were made."""
        where: str = "WHERE erased = 0"
        args: tuple[str, ...] = ()
        if container_tag is not None:
            where, args = ("WHERE erased = 0 AND container_tag = ?", (container_tag,))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT memory_id FROM chains {where} ORDER BY container_tag, created_seq", args
            ).fetchall()
        return [str(r[0]) for r in rows]

    def profiles(self, container_tag: str | None = None) -> list[tuple[str, dict[str, object]]]:
        """Every container's profile (decoded JSON), by container."""
        where: str = "WHERE profile IS NOT NULL"
        args: tuple[str, ...] = ()
        if container_tag is not None:
            where, args = ("WHERE profile IS NOT NULL AND container_tag = ?", (container_tag,))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT container_tag, profile FROM profiles {where} ORDER BY container_tag", args
            ).fetchall()
        return [(str(tag), json.loads(profile)) for tag, profile in rows]

    def imports_of(self, kind: str, new_id: str) -> list[ImportRow]:
        """Where an imported chain's versions (or an imported document) came from."""
        return self._imports("kind = ? AND id = ?", (kind, new_id))

    def imported_from(self, kind: str, source_id: str) -> list[ImportRow]:
        """The imports made from a source chain (or document), oldest first."""
        return self._imports("kind = ? AND source_id = ?", (kind, source_id))

    def _imports(self, where: str, args: tuple[object, ...]) -> list[ImportRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT row_id, id, source_id, source_version_id, origin_agent_id,"
                f" origin_protocol, origin_kind, origin_at FROM imports WHERE {where}"
                " ORDER BY row_id",
                args,
            ).fetchall()
        return [
            ImportRow(
                row_id=r[0],
                id=r[1],
                source_id=r[2],
                source_version_id=r[3],
                origin=ImportOrigin(agent_id=r[4], protocol=r[5], kind=r[6], created_at=r[7]),
            )
            for r in rows
        ]

    def split_from(self, memory_id: str) -> SplitRow | None:
        """The version a chain was split from, if it was."""
        found = self._splits("memory_id = ?", memory_id)
        return found[0] if found else None

    def split_into(self, memory_id: str) -> list[SplitRow]:
        """The chains split from a chain's versions, oldest first."""
        return self._splits("source_memory_id = ?", memory_id)

    def _splits(self, where: str, memory_id: str) -> list[SplitRow]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, memory_id, source_memory_id, source_version_id FROM splits"
                f" WHERE {where} ORDER BY seq",
                (memory_id,),
            ).fetchall()
        return [
            SplitRow(seq=r[0], memory_id=r[1], source_memory_id=r[2], source_version_id=r[3])
            for r in rows
        ]

    def links_among(self, row_ids: Sequence[int]) -> list[tuple[int, int]]:
        """(newer, older) pairs of the given versions whose chains are linked: the newer
        chain may update the older one."""
        if not self._any_links or len(row_ids) < 2:
            return []
        marks = ",".join("?" * len(row_ids))
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT n.row_id, o.row_id FROM links l"
                " JOIN versions n ON n.memory_id = l.memory_id"
                " JOIN versions o ON o.memory_id = l.target_memory_id"
                f" WHERE n.row_id IN ({marks}) AND o.row_id IN ({marks})"
                " ORDER BY n.row_id, o.row_id",
                (*row_ids, *row_ids),
            ).fetchall()
        return [(newer, older) for newer, older in rows]

    def history(self, memory_id: str) -> list[HistoryRow]:
        """Every event the projection folded for a chain, in log order: the events that made
        its versions, the writes deduplicated into it, its links both ways, the chains split
        out of it, its forgets, restores and flags, and its erasure."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT row_id, valid_from, kind, agent_id, protocol, version, NULL, NULL"
                " FROM versions WHERE memory_id = ?1"
                " UNION ALL SELECT seq, at, 'memory.deduplicated', agent_id, protocol, NULL,"
                " NULL, NULL FROM dedups WHERE memory_id = ?1"
                " UNION ALL SELECT l.seq, l.at, 'memory.linked', v.agent_id, v.protocol, NULL,"
                " l.target_memory_id, l.reason FROM links l"
                " LEFT JOIN versions v ON v.version_id = l.version_id WHERE l.memory_id = ?1"
                " UNION ALL SELECT l.seq, l.at, 'memory.linked', v.agent_id, v.protocol, NULL,"
                " l.memory_id, l.reason FROM links l"
                " LEFT JOIN versions v ON v.version_id = l.version_id"
                " WHERE l.target_memory_id = ?1"
                " UNION ALL SELECT s.seq, v.valid_from, 'memory.split', v.agent_id, v.protocol,"
                " NULL, s.memory_id, NULL FROM splits s"
                " LEFT JOIN versions v ON v.row_id = s.seq WHERE s.source_memory_id = ?1"
                " UNION ALL SELECT seq, at, kind, agent_id, protocol, NULL, NULL, detail"
                " FROM chain_events WHERE memory_id = ?1"
                " ORDER BY 1",
                (memory_id,),
            ).fetchall()
        return [
            HistoryRow(
                seq=r[0],
                at=r[1] or 0,
                kind=r[2],
                agent_id=r[3],
                protocol=r[4],
                version=r[5],
                other_memory_id=r[6],
                detail=r[7],
            )
            for r in rows
        ]

    def links_of(self, memory_id: str) -> list[LinkRow]:
        """The links from and to a chain, oldest first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT * FROM links WHERE memory_id = ? OR target_memory_id = ? ORDER BY seq",
                (memory_id, memory_id),
            ).fetchall()
        return [
            LinkRow(
                seq=r[0],
                memory_id=r[1],
                version_id=r[2],
                target_memory_id=r[3],
                target_version_id=r[4],
                similarity=r[5],
                reason=r[6],
                at=r[7],
            )
            for r in rows
        ]

    def dump(self) -> dict[str, list[tuple[object, ...]]]:
        """Every table's rows, ordered: for comparing two projections."""
        with self._lock:
            return {
                table: self._conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
                for table, order in (
                    ("chains", "1"),
                    ("versions", "1"),
                    ("vectors", "1"),
                    ("dedups", "1"),
                    ("profiles", "1"),
                    ("imports", "1"),
                    ("links", "1"),
                    ("splits", "1"),
                    ("keyed_writes", "seq"),
                )
            }

    def _versions(self, sql: str, args: Sequence[object]) -> list[VersionRow]:
        with self._lock:
            rows = self._conn.execute(sql, args).fetchall()
        return [decode_version(r) for r in rows]


def _statuses(
    hidden_agents: AbstractSet[str], flagged: AbstractSet[str]
) -> tuple[dict[str, str], dict[str, list[object]]]:
    """Each status of ``browse`` as an SQL condition over a version row, and its arguments."""
    hidden = sorted(hidden_agents)
    in_hidden = f"v.agent_id IN ({','.join('?' * len(hidden))})" if hidden else "0"
    ids = sorted(flagged)
    in_flagged = f"v.version_id IN ({','.join('?' * len(ids))})" if ids else "0"
    current = "v.valid_to IS NULL"
    kept = f"NOT ({in_hidden})"
    conditions = {
        "live": f"({current} AND c.forgotten = 0 AND {kept})",
        "superseded": f"(v.valid_to IS NOT NULL AND {kept})",
        "forgotten": f"({current} AND c.forgotten = 1 AND {kept})",
        "flagged": f"({current} AND c.forgotten = 0 AND {kept} AND {in_flagged})",
        "quarantined": f"({current} AND c.forgotten = 0 AND {in_hidden})",
    }
    args: dict[str, list[object]] = {
        "live": [*hidden],
        "superseded": [*hidden],
        "forgotten": [*hidden],
        "flagged": [*hidden, *ids],
        "quarantined": [*hidden],
    }
    return conditions, args
