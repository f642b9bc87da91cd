"""The ranker projection's reads: labelled recalls as training examples, the models and the
decisions about them, and the feedback counted (``RankerProjection`` folds them)."""

from __future__ import annotations

import json

import msgspec
import numpy as np

from ...eventlog.events import RankerTrained
from ..sqlite import SqliteProjection
from .examples import Example
from .features import FEATURES
from .model import Model

GLOBAL = ""  # the container key of the global model


class ModelRow(msgspec.Struct, frozen=True, kw_only=True):
    model: Model
    trained: RankerTrained
    seq: int
    at: int
    reproduced: bool


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    at: int
    kind: str  # trained, promoted, rolled_back
    container_tag: str | None
    digest: str
    other: str | None  # promoted: the one replaced; rolled back: the one restored
    body: dict[str, object]


class RankerQueries(SqliteProjection):
    def examples(
        self,
        container_tag: str | None,
        through_seq: int,
        *,
        after_seq: int = 0,
        ranker: str | None = None,
    ) -> list[Example]:
        """The labelled recalls of a container (None: of all), with the feedback counted up
        to ``through_seq``, in log order; only those after ``after_seq`` and, with ``ranker``,
        only those that model ranked."""
        where, args = "s.seq <= ? AND s.seq > ?", [through_seq, after_seq]
        if container_tag is not None:
            where += " AND s.container_tag = ?"
            args.append(container_tag)  # type: ignore[arg-type]
        if ranker is not None:
            where += " AND s.ranker = ?"
            args.append(ranker)  # type: ignore[arg-type]
        with self._lock:
            shown = self._conn.execute(
                "SELECT recall_id, seq, container_tag, features, base FROM shown s"
                f" WHERE {where} AND EXISTS (SELECT 1 FROM feedback f WHERE"
                " f.recall_id = s.recall_id AND f.counted = 1 AND f.seq <= ?) ORDER BY seq",
                (*args, through_seq),
            ).fetchall()
            said = self._conn.execute(
                "SELECT f.recall_id, f.agent_id, f.kind, f.items, f.grade FROM feedback f"
                f" JOIN shown s USING (recall_id) WHERE {where} AND f.counted = 1"
                " AND f.seq <= ? ORDER BY f.seq",
                (*args, through_seq),
            ).fetchall()
        by_recall: dict[str, Example] = {}
        out: list[Example] = []
        for recall_id, seq, container, features, base in shown:
            width = len(FEATURES)
            x = np.frombuffer(features, dtype=np.float64).reshape(-1, width)
            example = Example(
                recall_id=recall_id,
                container_tag=container,
                seq=seq,
                features=x.tolist(),
                base=json.loads(base),
                used={},
                examined={},
                grades={},
            )
            by_recall[recall_id] = example
            out.append(example)
        for recall_id, agent, kind, items, grade in said:
            example = by_recall[recall_id]
            if kind == "used":
                example.examined[agent] = None
                for i in json.loads(items):
                    example.used.setdefault(i, agent)
            else:
                for i in json.loads(items):
                    example.grades.setdefault(i, (grade, agent))
        return out

    def model_row(self, digest: str) -> ModelRow | None:
        with self._lock:
            row = self._conn.execute(
                "SELECT body, trained, seq, at, reproduced FROM models WHERE digest = ?",
                (digest,),
            ).fetchone()
        if row is None or row[0] == "null":
            return None
        return ModelRow(
            model=msgspec.json.decode(row[0], type=Model),
            trained=msgspec.json.decode(row[1], type=RankerTrained),
            seq=row[2],
            at=row[3],
            reproduced=bool(row[4]),
        )

    def serving_digests(self) -> dict[str | None, str]:
        with self._lock:
            rows = self._conn.execute("SELECT container_tag, digest FROM serving").fetchall()
        return {(key or None): digest for key, digest in rows}

    def decisions(self, container_tag: str | None, limit: int = 20) -> list[Decision]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT seq, at, kind, container_tag, digest, other, body FROM decisions"
                " WHERE container_tag = ? ORDER BY seq DESC LIMIT ?",
                (container_tag or GLOBAL, limit),
            ).fetchall()
        return [
            Decision(
                seq=seq,
                at=at,
                kind=kind,
                container_tag=tag or None,
                digest=digest,
                other=other,
                body=json.loads(body),
            )
            for seq, at, kind, tag, digest, other, body in rows
        ]

    def feedback_counts(self, container_tag: str | None) -> dict[str, int]:
        """Feedback events recorded and counted, and the labelled recalls, of a container."""
        where = "" if container_tag is None else " WHERE container_tag = ?"
        args = () if container_tag is None else (container_tag,)
        with self._lock:
            recorded, counted, recalls = self._conn.execute(
                "SELECT count(*), coalesce(sum(counted), 0), count(DISTINCT CASE WHEN counted"
                f" = 1 THEN recall_id END) FROM feedback{where}",
                args,
            ).fetchone()
            last = self._conn.execute(
                f"SELECT coalesce(max(seq), 0) FROM feedback{where}", args
            ).fetchone()[0]
        return {"recorded": recorded, "counted": counted, "recalls": recalls, "lastSeq": last}

    def containers(self) -> list[str]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT DISTINCT container_tag FROM feedback ORDER BY container_tag"
            ).fetchall()
        return [r[0] for r in rows]

    def counted_since(self, container_tag: str, seq: int) -> int:
        """Feedback events of a container counted after ``seq``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM feedback WHERE container_tag = ? AND counted = 1 AND seq > ?",
                (container_tag, seq),
            ).fetchone()
        return int(row[0])

    def promotion(self, container_tag: str) -> tuple[int, str | None] | None:
        """When the model serving a container was promoted, and what it replaced."""
        with self._lock:
            row = self._conn.execute(
                "SELECT seq, other FROM decisions WHERE container_tag = ? AND kind = 'promoted'"
                " ORDER BY seq DESC LIMIT 1",
                (container_tag,),
            ).fetchone()
        return None if row is None else (int(row[0]), row[1])

    def labelled_before(self, container_tag: str, seq: int, count: int) -> list[Example]:
        """The last ``count`` labelled recalls of a container before ``seq``."""
        with self._lock:
            row = self._conn.execute(
                "SELECT min(seq) FROM (SELECT s.seq FROM shown s WHERE s.container_tag = ?"
                " AND s.seq < ? AND EXISTS (SELECT 1 FROM feedback f WHERE f.recall_id ="
                " s.recall_id AND f.counted = 1) ORDER BY s.seq DESC LIMIT ?)",
                (container_tag, seq, count),
            ).fetchone()
        if row is None or row[0] is None:
            return []
        return self.examples(container_tag, seq - 1, after_seq=int(row[0]) - 1)

    def trained_through(self) -> dict[str | None, int]:
        """Per container (None: the global model), the feedback seq its last training saw."""
        with self._lock:
            rows = self._conn.execute("SELECT container_tag, trained FROM models").fetchall()
        out: dict[str | None, int] = {}
        for tag, trained in rows:
            through = msgspec.json.decode(trained, type=RankerTrained).through_seq
            key = tag or None
            out[key] = max(out.get(key, 0), through)
        return out
