"""Query: what an estimator asks the mechanism core to privatize.

A Query is plain data: the shape of the statistic and how much one record can
move it under the replace-one neighbouring relation (n public), given public
bounds. It never holds the statistic's value.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Query"]


def _opt_sensitivity(value, name):
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}.") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}.")
    return value


@dataclass(frozen=True, eq=False)
class Query:
    """Description of a statistic to be released with differential privacy.

    Sensitivities are suprema over replace-one neighbouring datasets
    ``D ~ D'`` (one record replaced, n public) of the change
    ``f(D) - f(D')``. Give at least one of ``l2_sensitivity``,
    ``l1_sensitivity`` or ``sensitivity_profile``.

    Parameters
    ----------
    shape : tuple of int
        Shape of the statistic (a scalar is ``()``; a vector ``(d,)``; a
        matrix ``(m, n)``).
    l2_sensitivity : float, optional
        Bound on ``||f(D) - f(D')||_2`` (Frobenius norm for a matrix). For a
        ``symmetric`` query it bounds the l2 norm of the change of the upper
        triangle including the diagonal (which the Frobenius sensitivity
        always does, so passing the Frobenius sensitivity is safe).
    l1_sensitivity : float, optional
        Bound on ``||f(D) - f(D')||_1`` (upper triangle when ``symmetric``).
    sensitivity_profile : array-like, optional
        Per-coordinate bounds ``lambda_i >= sup |f(D)_i - f(D')_i|`` with the
        query's shape (Muthukrishnan & Kalyani 2023, Definition 4). Implies the l2 bound
        ``||lambda||_2`` and the l1 bound ``||lambda||_1``.
    sup_norm : float, optional
        Matrix bound ``gamma = sup_D ||f(D)||_F`` used by the matrix-variate
        Gaussian mechanism (Chanyaswad et al. 2018, Theorems 2 and 3).
    symmetric : bool, default=False
        The statistic is a symmetric square matrix. Vector mechanisms then
        add noise to the upper triangle (diagonal included) and mirror it.

    Notes
    -----
    Derived bounds (``l2_bound``, ``l1_bound``) take the smallest value that
    the given information implies: ``Delta_2 <= ||lambda||_2``,
    ``Delta_1 <= ||lambda||_1`` and ``Delta_1 <= sqrt(K) Delta_2`` for ``K``
    released coordinates.
    """

    shape: tuple
    l2_sensitivity: float = None
    l1_sensitivity: float = None
    sensitivity_profile: np.ndarray = field(default=None, repr=False)
    sup_norm: float = None
    symmetric: bool = False

    def __post_init__(self):
        shape = self.shape
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        try:
            shape = tuple(int(s) for s in shape)
        except TypeError:
            raise ValueError(f"shape must be a tuple of ints, got {self.shape!r}.") from None
        if any(s <= 0 for s in shape):
            raise ValueError(f"shape must have positive entries, got {shape}.")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "l2_sensitivity", _opt_sensitivity(self.l2_sensitivity, "l2_sensitivity"))
        object.__setattr__(self, "l1_sensitivity", _opt_sensitivity(self.l1_sensitivity, "l1_sensitivity"))
        object.__setattr__(self, "sup_norm", _opt_sensitivity(self.sup_norm, "sup_norm"))
        object.__setattr__(self, "symmetric", bool(self.symmetric))
        if self.symmetric and (len(shape) != 2 or shape[0] != shape[1]):
            raise ValueError(f"a symmetric query must have a square 2-D shape, got {shape}.")
        prof = self.sensitivity_profile
        if prof is not None:
            prof = np.array(prof, dtype=float)
            if prof.shape != shape:
                raise ValueError(
                    f"sensitivity_profile has shape {prof.shape}, but the query shape is {shape}."
                )
            if not np.all(np.isfinite(prof)) or np.any(prof < 0):
                raise ValueError("sensitivity_profile must be finite and >= 0.")
            if not np.any(prof > 0):
                raise ValueError("sensitivity_profile must have a positive entry.")
            if self.symmetric and not _allclose_transpose(prof):
                raise ValueError("sensitivity_profile of a symmetric query must be symmetric.")
            prof.setflags(write=False)
            object.__setattr__(self, "sensitivity_profile", prof)
        if self.l2_sensitivity is None and self.l1_sensitivity is None and prof is None:
            raise ValueError(
                "a Query needs a sensitivity: give l2_sensitivity, l1_sensitivity "
                "or sensitivity_profile."
            )

    # ------------------------------------------------------------------
    @property
    def size(self):
        """Number of entries of the statistic."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def n_released(self):
        """Number of independent noisy coordinates (upper triangle if symmetric)."""
        if self.symmetric:
            d = self.shape[0]
            return d * (d + 1) // 2
        return self.size

    def without_profile(self):
        """The same query described by its bounds only (``l2_bound``, ``l1_bound``, ``sup_norm``).

        A per-entry profile of a ``d x d`` statistic holds ``d^2`` floats; a
        fitted estimator keeps the bounds of the query it released, which is
        all its noise spec needs once the noise is drawn (``self`` when there
        is no profile).
        """
        if self.sensitivity_profile is None:
            return self
        return Query(self.shape, l2_sensitivity=self.l2_bound, l1_sensitivity=self.l1_bound,
                     sup_norm=self.sup_norm, symmetric=self.symmetric)

    def released_profile(self):
        """The sensitivity profile of the released coordinates (flat), or None."""
        if self.sensitivity_profile is None:
            return None
        if self.symmetric:
            return _upper_triangle(self.sensitivity_profile)
        return self.sensitivity_profile.ravel()

    @property
    def l2_bound(self):
        """Smallest l2 sensitivity implied by what the query states, or None."""
        cands = []
        if self.l2_sensitivity is not None:
            cands.append(self.l2_sensitivity)
        prof = self.released_profile()
        if prof is not None:
            cands.append(float(np.linalg.norm(prof)))
        if self.l1_sensitivity is not None:
            cands.append(self.l1_sensitivity)  # ||v||_2 <= ||v||_1
        return min(cands) if cands else None

    @property
    def l1_bound(self):
        """Smallest l1 sensitivity implied by what the query states."""
        cands = []
        if self.l1_sensitivity is not None:
            cands.append(self.l1_sensitivity)
        prof = self.released_profile()
        if prof is not None:
            cands.append(float(np.sum(prof)))
        if self.l2_sensitivity is not None:
            cands.append(float(np.sqrt(self.n_released)) * self.l2_sensitivity)
        return min(cands)

    def expand(self, released_noise):
        """Map a flat vector of noise on the released coordinates to the query shape."""
        released_noise = np.asarray(released_noise, dtype=float)
        if self.symmetric:
            d = self.shape[0]
            out = np.empty((d, d))
            # row i of the upper triangle (row-major, as np.triu_indices orders it), mirrored
            for i, start in enumerate(_triangle_row_starts(d)):
                row = released_noise[start:start + d - i]
                out[i, i:] = row
                out[i:, i] = row
            return out
        return released_noise.reshape(self.shape)

    def squared_error_weights(self):
        """How many entries of the full statistic each released coordinate fills.

        1 for every coordinate, except the off-diagonal entries of a symmetric
        query, which fill two entries.
        """
        if self.symmetric:
            d = self.shape[0]
            w = np.full(d * (d + 1) // 2, 2.0)
            w[_triangle_row_starts(d)] = 1.0  # each row of the triangle starts on the diagonal
            return w
        return np.ones(self.size)


# Upper-triangle helpers without np.triu_indices (two int64 index arrays of d(d+1)/2 entries:
# for the d x d statistics of wide data they were the largest temporaries of a calibration).
def _triangle_row_starts(d):
    """Offsets of the rows of the upper triangle (diagonal included) in its row-major flattening."""
    i = np.arange(d, dtype=np.int64)
    return i * d - i * (i - 1) // 2


def _upper_triangle(A):
    """``A[np.triu_indices(d)]``, row by row."""
    d = A.shape[0]
    out = np.empty(d * (d + 1) // 2, dtype=A.dtype)
    for i, start in enumerate(_triangle_row_starts(d)):
        out[start:start + d - i] = A[i, i:]
    return out


def _allclose_transpose(A, block=512):
    """``np.allclose(A, A.T)``, one block of rows at a time (no ``d x d`` temporaries)."""
    d = A.shape[0]
    # exact equality first (the usual case, a few times cheaper than allclose's temporaries)
    return all(np.array_equal(A[i:i + block], A[:, i:i + block].T)
               or np.allclose(A[i:i + block], A[:, i:i + block].T) for i in range(0, d, block))
