"""The floating-point attack on Gaussian noise drawn with numpy (Mironov 2012, for the ziggurat).

numpy's ``Generator.standard_normal`` is a 256-layer ziggurat: in its fast
path (about 99% of draws) one 64-bit word ``r`` gives the layer
``i = r & 0xff``, a sign bit and a 52-bit integer ``j``, and the draw is
``+-fl(j * w_i)`` for a table of 256 doubles ``w_i``. A release
``fl(v + fl(sigma * z))`` of a coordinate whose true value is ``v = 0`` is
exactly ``fl(sigma * fl(j w_i))``: a point of a sparse set of doubles that an
attacker who knows ``sigma`` can test for. With ``v != 0`` the release almost
never lands on it when ``|release| / sigma`` is small (near zero the set's
doubles are about ``256 / x_i`` ulps apart). The event

    E = { |x| <= tau * sigma  and  x = fl(sigma * fl(j w_i)) for some layer i and integer j }

has probability about ``P(|Z| <= tau)`` on ``D`` and far less on ``D'``; a
Clopper-Pearson bound on the two frequencies certifies a delta.

A second event needs no table and catches noise of any construction (the
gamma-norm's Gamma radius times a normalised direction, the matrix-variate
product ``A N B``) added in floating point to a known nonzero value
``v' = shift``: near zero, ``fl(shift + n)`` is a multiple of
``ulp(shift) / 2`` (Sterbenz: the sum is exact when ``n`` is within a factor
two of ``-shift``), while ``fl(n)`` alone keeps its bits down to ``ulp(n)``.
The event

    C = { 0 < |x| <= |shift| / 2  and  x is not a multiple of ulp(shift) / 2 }

(:func:`cancellation_event`; ``|x| <= |shift| / 2`` puts ``n`` within a
factor two of ``-shift``) has probability 0 on ``D'`` and about
``P(|noise| <= |shift| / 2)`` on ``D``. A release on a power-of-two grid
``g >> ulp(shift)`` is a multiple of ``g`` on both sides: ``C`` never
happens. An independent (held-out) attack used this family and found the
gamma-norm and matrix-variate mechanisms that the ziggurat event misses.

The attack needs the table ``w_i``. It is not copied from numpy: the
attacker recovers it by observation (:func:`numpy_ziggurat_table`), drawing
normals from a generator whose raw 64-bit words it can replay, which is how
an attacker who knows the sampler but not its constants would do it.
"""

import numpy as np

from ._audit import AuditResult, clopper_pearson

__all__ = ["numpy_ziggurat_table", "ziggurat_lattice_member", "cancellation_event",
           "float_attack"]

_TABLE = None


def numpy_ziggurat_table(n_draws=40_000, seed=12345):
    """The 256 layer widths ``w_i`` of numpy's ``standard_normal``, learned by observation.

    Draws normals one at a time from ``Generator(PCG64(seed))`` while replaying
    the raw words of a copy of the bit generator; for every fast-path draw
    (one word consumed) ``|z| / j`` is the layer width, and the exact double
    ``w_i`` is the one with ``fl(j * w_i) == |z|`` for every observation.
    Cached after the first call.
    """
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    bg = np.random.PCG64(seed)
    gen = np.random.Generator(bg)
    replay = np.random.PCG64(seed)
    obs = {}
    mask52 = (1 << 52) - 1
    for _ in range(int(n_draws)):
        state = bg.state
        replay.state = state
        r = int(replay.random_raw())
        one_word = replay.state
        z = gen.standard_normal()
        if bg.state != one_word:  # slow path: more words consumed
            continue
        j = (r >> 9) & mask52
        if j:
            obs.setdefault(r & 0xFF, []).append((j, abs(z)))
    table = np.full(256, np.nan)
    for i, pairs in obs.items():
        js = np.array([p[0] for p in pairs], dtype=float)
        zs = np.array([p[1] for p in pairs])
        w = zs[0] / js[0]
        for cand in (w, *np.nextafter(w, [0.0, np.inf]),
                     *np.nextafter(np.nextafter(w, [0.0, np.inf]), [0.0, np.inf])):
            if np.all(js * cand == zs):
                table[i] = cand
                break
    _TABLE = table
    return table


def ziggurat_lattice_member(x, sigma, table=None, tau=1e-3, divisor=1.0):
    """Whether each release ``x`` is ``fl(fl(sigma * fl(j w_i)) / divisor)`` for some ``i`` and ``j``.

    Only releases with ``|x| <= tau * sigma / divisor`` can be members (the
    event of the module docstring). ``divisor`` covers releases that are
    scaled after the noise is drawn, such as the random-projection sketch
    ``fl(fl(z F_00) / sqrt(r))`` of a column that is zero in the data (its
    Cholesky column is ``F_00 e_1``, so the release is one scaled normal).
    """
    if table is None:
        table = numpy_ziggurat_table()
    w = table[np.isfinite(table)]
    x = np.asarray(x, dtype=float).ravel()
    ax = np.abs(x)
    divisor = float(divisor)
    small = (ax <= tau * sigma / divisor) & (ax > 0)
    out = np.zeros(x.size, dtype=bool)
    if not np.any(small):
        return out
    xs = ax[small]
    j0 = np.rint(xs[:, None] * divisor / sigma / w[None, :])  # (m, 256)
    hit = np.zeros(xs.size, dtype=bool)
    for dj in (-1.0, 0.0, 1.0):
        j = j0 + dj
        ok = (j >= 1) & (j < 2.0**52)
        cand = (j * w[None, :]) * sigma
        if divisor != 1.0:
            cand = cand / divisor
        hit |= np.any(ok & (cand == xs[:, None]), axis=1)
    out[small] = hit
    return out


def cancellation_event(x, shift):
    """Whether each release ``x`` is in the event ``C`` of the module docstring.

    ``0 < |x| <= |shift| / 2`` and ``x`` is not an integer multiple of
    ``ulp(|shift|) / 2`` (``fmod`` is exact), where ``shift`` is the nonzero
    true value of the coordinate on the neighbouring data set.
    """
    x = np.asarray(x, dtype=float).ravel()
    ax = np.abs(x)
    shift = abs(float(shift))
    quantum = float(np.spacing(shift)) / 2.0
    small = (ax <= shift / 2.0) & (ax > 0)
    return small & (np.fmod(ax, quantum) != 0.0)


def float_attack(release, release_prime, sigma, *, epsilon, delta, n_runs, tau=1e-3, alpha=0.05,
                 random_state=0, divisor=1.0, shift=None):
    """Certify a delta from the ziggurat-lattice event on two release functions.

    Parameters
    ----------
    release, release_prime : callable
        ``release(rng) -> array`` of released coordinates whose true value is
        0 on ``D`` (``release``) and nonzero on ``D'`` (``release_prime``),
        e.g. one fit of an estimator. Called ``n_runs`` times each.
    sigma : float
        The public noise scale of those coordinates.
    epsilon, delta : float
        The claim.
    n_runs : int
        Releases per side.
    tau : float, default=1e-3
        Only releases within ``tau * sigma`` of zero are tested.
    alpha : float, default=0.05
        Confidence of the Clopper-Pearson bounds (split over the two sides).
    divisor : float, default=1.0
        Releases are ``fl(fl(sigma z) / divisor)`` (see :func:`ziggurat_lattice_member`).
    shift : float or None, default=None
        The true (nonzero) value of the tested coordinates on ``D'``. When
        given, the cancellation event (:func:`cancellation_event`) is tested
        too, and ``alpha`` is split over the two events (Bonferroni).

    Returns
    -------
    AuditResult
        ``passed = False`` certifies a violation at confidence ``1 - alpha``.
        ``p_hat`` and ``p_prime_hat`` are the frequencies per release of the
        event with the largest bound (any released coordinate in it).
    """
    table = numpy_ziggurat_table()
    rng = np.random.default_rng(random_state)
    events = {"ziggurat": f"ziggurat lattice, |x| <= {tau} sigma"}
    if shift is not None:
        events["cancellation"] = f"cancellation: 0 < |x| <= {abs(shift) / 2:.3g}, not a multiple of ulp(shift) / 2"
    counts = {name: [0, 0] for name in events}
    for side, fn in enumerate((release, release_prime)):
        for _ in range(int(n_runs)):
            x = np.asarray(fn(rng), dtype=float).ravel()
            counts["ziggurat"][side] += bool(np.any(
                ziggurat_lattice_member(x, sigma, table, tau, divisor)))
            if shift is not None:
                counts["cancellation"][side] += bool(np.any(cancellation_event(x, shift)))
    n = int(n_runs)
    a = alpha / len(events)
    best = None
    for name, (c0, c1) in counts.items():
        lo0 = float(clopper_pearson(c0, n, a / 2.0, "lower"))
        hi1 = float(clopper_pearson(c1, n, a / 2.0, "upper"))
        bound = max(0.0, lo0 - np.exp(epsilon) * hi1)
        if best is None or bound > best[0]:
            best = (bound, name, c0, c1)
    bound, name, c0, c1 = best
    return AuditResult(epsilon=float(epsilon), delta=float(delta), delta_lower_bound=float(bound),
                       passed=bool(bound <= delta), event=events[name],
                       n_samples=n, p_hat=c0 / n, p_prime_hat=c1 / n,
                       delta_hat=c0 / n - np.exp(epsilon) * c1 / n, alpha=alpha,
                       n_events=len(events))
