"""The learned stage's compiled loops give the very bits of their definitions: the features of
a candidate as the array formulas defined them before they were compiled, the compiled
functions against the plain Python ones they are made from, and the model's scores against
numpy's product up to its order of addition."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mnemolog.projections.ranker import kernels

NS_PER_DAY = 86_400 * 1_000_000_000


def log1p(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """The C library's ``log1p`` over an array, as the features are defined with it (numpy's
    own, on a CPU with AVX-512, is one unit in the last place off for some values: log1p(2))."""
    return np.array([math.log1p(float(v)) for v in values], dtype=np.float64)


def array_features(
    fused: npt.NDArray[np.float64],
    at: npt.NDArray[np.int64],
    now_ns: int,
    sums: npt.NDArray[np.float64],
    trust: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]:
    """The features as numpy array operations computed them (and logged traces hold)."""
    n = len(fused)
    best_fused = float(fused.max()) if n else 0.0
    ages = np.maximum(0.0, (now_ns - at) / NS_PER_DAY)
    seen, expected, used, closest, graded, grades = sums.T
    rows = np.empty((n, 8), dtype=np.float64)
    rows[:, 0] = fused / (best_fused or 1.0)
    rows[:, 1] = log1p(np.arange(n, dtype=np.float64))
    rows[:, 2] = log1p(seen)
    rows[:, 3] = (used + 0.25) / (expected + 1.0)
    rows[:, 4] = closest
    rows[:, 5] = (grades + 1.5) / (graded + 1.0)
    rows[:, 6] = log1p(ages)
    rows[:, 7] = trust
    return rows


finite = st.floats(0.0, 1e6, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(0, 50))
def test_compiled_features_are_the_array_formulas_bit_for_bit(data: st.DataObject, n: int) -> None:
    now_ns = data.draw(st.integers(0, 2**62))
    fused = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 2.0)))
    at = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 2**62)))
    sums = data.draw(hnp.arrays(np.float64, (n, 6), elements=finite))
    trust = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.0, 1.0)))
    compiled = kernels.compiled()[2](fused, at, now_ns, sums, trust)
    expected = array_features(fused, at, now_ns, sums, trust)
    assert compiled.tobytes() == expected.tobytes()
    assert kernels.feature_rows(fused, at, now_ns, sums, trust).tobytes() == expected.tobytes()


@settings(max_examples=100, deadline=None)
@given(st.data(), st.integers(1, 12), st.integers(0, 60))
def test_compiled_sums_are_the_plain_loops(data: st.DataObject, candidates: int, n: int) -> None:
    columns = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, 79)))
    whose = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, candidates - 1)))
    likeness = data.draw(hnp.arrays(np.float64, n, elements=st.floats(0.5, 1.0)))
    ints = np.vstack(
        [
            data.draw(hnp.arrays(np.int64, 80, elements=st.integers(0, 3))),  # agent
            data.draw(hnp.arrays(np.int64, 80, elements=st.integers(1, 20))),  # position
            np.zeros(80, dtype=np.int64),  # version
        ]
    )
    floats = data.draw(hnp.arrays(np.float64, (3, 80), elements=st.floats(0.0, 3.0)))
    present = np.flatnonzero(data.draw(hnp.arrays(np.bool_, 4))).astype(np.int64)
    counts = data.draw(hnp.arrays(np.float64, len(present), elements=st.sampled_from([0.0, 1.0])))
    propensity = data.draw(hnp.arrays(np.float64, 21, elements=st.floats(0.1, 1.0)))
    args = (n, columns, whose, likeness, ints, floats, present, counts, 4, propensity, candidates)
    compiled = kernels.compiled()[1](*args)
    assert compiled.tobytes() == kernels.add_up(*args).tobytes()


@settings(max_examples=200, deadline=None)
@given(st.data(), st.integers(0, 30))
def test_compiled_scores_are_the_plain_loop_and_the_array_product(
    data: st.DataObject, n: int
) -> None:
    x = data.draw(hnp.arrays(np.float64, (n, 8), elements=st.floats(-1e3, 1e3)))
    mean = data.draw(hnp.arrays(np.float64, 8, elements=st.floats(-1e3, 1e3)))
    scale = data.draw(hnp.arrays(np.float64, 8, elements=st.floats(1e-3, 1e3)))
    weights = data.draw(hnp.arrays(np.float64, 8, elements=st.floats(-10.0, 10.0)))
    compiled = kernels.compiled()[3](x, mean, scale, weights, 1)
    assert compiled.tobytes() == kernels.scores(x, mean, scale, weights, 1).tobytes()
    # The same as the product numpy computes, to the rounding of a different order of addition.
    product = ((x - mean) / scale) @ weights - x[:, 1]
    np.testing.assert_allclose(compiled, product, rtol=1e-9, atol=1e-6)
