"""Step 9 of ranking, for two statements said within a day: whether the newer one answers the
question as the older does, and so is its new value (``ranking.newer_above_older_among_agreed``
moves it up). A pure function of the candidates' vectors, dates and texts, as recall gathers
them, so a recorded trace is ranked again exactly."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet

import numpy as np
import numpy.typing as npt

from ...projections.memories.rows import VersionRow
from ...projections.vectors.exact import unit
from .ranking import ANSWERS_ALIKE, is_statement
from .stages import answers_beyond_names, asks_of_older, names_only_older

Texts = Callable[[Sequence[int]], Mapping[int, VersionRow]]
Vectors = Callable[[list[int]], npt.NDArray[np.float32]]


def answers_alike(
    agreed: AbstractSet[int],
    head: AbstractSet[int],
    query: str,
    vector: npt.NDArray[np.float32],
    observed: Mapping[int, int],
    floor: float,
    vectors: Vectors,
    rows_of: Texts,
) -> Callable[[int, int], bool]:
    """Whether the newer of two candidates may be read as a new statement of the older
    one's thing, for this query. Both are single statements (``ranking.is_statement``)
    whose stored vectors are as close as a query must be to a memory served on meaning
    alone (``floor``: only one unrelated pair in ten is), and the query does not ask of the
    older one's thing (``asks_of_older``, as for links). Then the newer answers the question
    as the older does:

    - both ``agreed``, when it holds a word of the query other than a name
      (``answers_beyond_names``: a fact of the same person is not a new value of this one);
    - or, both in ``head`` (the first served), when the query finds it about as close in
      meaning as the older (``ANSWERS_ALIKE``), and of the candidates read the newer is the
      closest to the older of those said after it, and the older the closest to the newer of
      those said before it: a correction whose words the query does not use ("No, make it
      Saturday") is nearer what it corrects than anything said since, where a fact of another
      thing of one shape, said in a row with its siblings, has a closer sibling on one side;
      unless the query names a thing that only the older names (``names_only_older``).

    ``vectors`` gives the stored unit vectors of labels, ``rows_of`` their rows. Nothing is
    read until a pair is asked about: most searches have none."""
    labels = sorted(agreed | head)
    if len(labels) < 2:
        return lambda newer, older: False
    alike = ANSWERS_ALIKE * (1.0 - floor)

    @functools.cache
    def judged() -> Callable[[int, int], bool]:
        matrix = vectors(labels)
        cosines = matrix @ matrix.T
        asked = matrix @ unit(vector.reshape(1, -1))[0]
        at = {label: i for i, label in enumerate(labels)}
        # Of the candidates read (statements or not), each one's closest of those said after
        # it and of those said before it (-1: none).
        when = np.array([observed[r] for r in labels])
        after = np.where(when[None, :] > when[:, None], cosines, -3.0)
        before = np.where(when[None, :] < when[:, None], cosines, -3.0)
        closest_after = np.where(after.max(axis=1) > -3.0, after.argmax(axis=1), -1)
        closest_before = np.where(before.max(axis=1) > -3.0, before.argmax(axis=1), -1)

        # The vectors settle most pairs; the texts are read only for a pair they let through.
        @functools.cache
        def worded() -> tuple[
            AbstractSet[int],
            Callable[[int, int], bool],
            Callable[[int], bool],
            Callable[[int, int], bool],
        ]:
            rows = rows_of(labels)
            texts = {
                r: row.content or "" for r, row in rows.items() if is_statement(row.content or "")
            }
            return (
                texts.keys(),
                asks_of_older(query, texts),
                answers_beyond_names(query, texts),
                names_only_older(query, texts),
            )

        def close(newer: int, older: int) -> bool:
            i, j = at[newer], at[older]
            if cosines[i, j] < floor:
                return False
            both_agreed = newer in agreed and older in agreed
            as_closely = bool(
                newer in head
                and older in head
                and closest_after[j] == i
                and closest_before[i] == j
                and asked[i] >= floor
                and asked[i] >= asked[j] - alike
            )
            if not (both_agreed or as_closely):
                return False
            statements, apart, answers, named = worded()
            return (
                newer in statements
                and older in statements
                and ((both_agreed and answers(newer)) or (as_closely and not named(newer, older)))
                and not apart(newer, older)
            )

        return close

    return lambda newer, older: judged()(newer, older)
