"""Integer noise for floating-point-safe releases: discrete Laplace and discrete Gaussian.

Why integers
------------
Adding floating-point noise to a floating-point value is not differentially
private: the set of doubles a sampler can output next to ``value`` depends on
``value``, and the low bits of a release can tell neighbouring inputs apart
(Mironov 2012). The safe mechanisms of skdp release on a public power-of-two
grid ``g``,

    release = g * (round(value / g) + Y),

where ``Y`` is integer noise whose law is known exactly (or within a stated
total variation): the released double is a function of the integer
``round(value / g) + Y`` alone (see :mod:`skdp.mechanisms._grid`). This
module draws ``Y``.

Randomness
----------
Every function takes a :class:`numpy.random.Generator` ``rng`` and uses only

* ``rng.integers(0, high, size=m)``: exact, unbiased uniform integers on
  ``{0, ..., high - 1}`` (numpy's Lemire rejection method on the bit
  generator's output, in 16-, 32- or 64-bit words depending on ``high``
  and the dtype), and
nothing else (the discrete Gaussian's acceptance step reads the bits of a
uniform ``U`` as integers too, see below).

Same generator state, same output: the samplers are deterministic functions
of the generator's stream.

Algorithms (Canonne, Kamath & Steinke 2020, "CKS")
--------------------------------------------------
* :func:`bernoulli_exp_neg_fraction` -- CKS Algorithm 1 for
  ``gamma = num/den`` in [0, 1]: ``K = 1``; repeat ``A ~ Bernoulli(gamma/K)``
  (``rng.integers(0, den * K) < num``), ``K += 1`` while ``A = 1``; return
  ``[K odd]``. ``P(K > k) = gamma^k / k!``, so
  ``P(K odd) = sum_j (-gamma)^j / j! = exp(-gamma)``. Exact.
* :func:`bernoulli_exp_neg_one` -- the same with ``gamma = 1``, where
  ``P(K > k) = 1/k!``. Instead of one ``rng.integers(0, K) == 0`` per round,
  one uniform ``W`` on ``{0, ..., 7! - 1}`` decides up to 7 rounds at once:
  ``K = min{k : W >= 7!/k!}`` has ``P(K > k) = P(W < 7!/k!) = 1/k!``
  exactly for ``k <= 7`` (``k!`` divides ``7!``), i.e. the law of CKS's
  ``K``; when ``W = 0`` (probability ``1/5040``) the rounds ``K = 8, 9, ...``
  continue with ``rng.integers(0, K) == 0``. Exact, one 16-bit integer per
  draw (``7! = 5040``; numpy's 16-bit path packs two per 32-bit word).
* :func:`sample_discrete_laplace` -- CKS Algorithm 2 with scale ``t/1``:
  ``U`` uniform on ``{0, ..., t-1}``, kept with probability ``exp(-U/t)``
  (Algorithm 1); ``V`` the number of Bernoulli(``e^-1``) successes before the
  first failure (geometric, ``P(V = v) = (1 - e^-1) e^-v``);
  ``X = U + t V`` has ``P(X = x) ~ exp(-x/t)``; a fair sign ``B`` and
  ``Y = (1 - 2B) X``, rejecting ``B = 1, X = 0`` (restarting the draw).
  ``U`` and ``B`` come from one integer ``w`` uniform on ``{0, ..., 2t-1}``
  (``U = w >> 1``, ``B = w & 1``: independent and uniform). Exact: the
  discrete Laplace mechanism built on it is exactly epsilon-DP.
* :func:`sample_discrete_gaussian` -- CKS Algorithm 3: ``t = floor(sigma)+1``,
  propose ``Y`` from the exact discrete Laplace(t), accept with probability
  ``a(Y) = exp(-gamma(Y))``, ``gamma(y) = (|y| - sigma^2/t)^2 / (2 sigma^2)``.
  Since ``-|y|/t - (|y| - sigma^2/t)^2/(2 sigma^2) = -y^2/(2 sigma^2) -
  sigma^2/(2 t^2)``, the accepted ``Y`` has law ``N_Z(0, sigma^2)`` and a
  proposal is accepted with probability

      A(sigma) = tanh(1/(2t)) exp(-sigma^2/(2t^2)) sum_y exp(-y^2/(2 sigma^2)).

  The acceptance test compares a uniform ``U``, revealed 53 bits at a time,
  with ``a(Y)``: decided in float64 when that is provably right, in 60-digit
  decimal arithmetic otherwise (within total variation 1e-50, see below).

Vectorisation: every element runs its own copy of these loops. A round of a
loop is one numpy call over the elements still running (an "active" index
set that shrinks geometrically); once fewer than ``_SMALL`` elements run,
one call draws the randomness of ``_ROUNDS`` rounds for each (the draws of
rounds after a run has stopped are dropped: they are independent of
everything used), to save Python-level rounds. The rejection loops draw a
whole batch of candidates (oversampled by the known acceptance rate, about
1.6x for the Laplace and ``1.02/A`` for the Gaussian), keep the accepted ones
in order and repeat for the positions still missing. Keeping the first
accepted candidates in index order is fine: the candidates are i.i.d., and
which positions are kept depends only on the accept/reject indicators, so the
kept values are i.i.d. from the accepted law. Outputs are produced in blocks
of ``_BLOCK`` (``2^16``) so that the intermediate arrays stay in cache.

The discrete Gaussian sampler's total variation
-----------------------------------------------
Let ``u = 2^-53`` and ``a(y) = exp(-gamma(y))`` the exact acceptance
probability. The float64 value ``a_hat = exp(-gamma_hat)``
(:func:`_acceptance_probability`; ``s2 = fl(sigma^2)``, ``c = fl(s2/t)``,
``x = fl(|y| - c)``, ``gamma_hat = fl(fl(x x) / (2 s2))``) is within

    |a_hat(y) / a(y) - 1| <= (6.5 gamma(y) + 9.5) u <= 5.1e-13   (gamma <= 700)

of it: ``t <= 2^40 + 1`` and ``|y| <= 2^53`` convert exactly and each
operation has relative error at most ``u``; ``c = (sigma^2/t)(1 + d)``,
``|d| <= 2u + u^2``, and ``sigma^2/t < sigma`` (``t > sigma``), so
``|y| - c = x_true + e`` with ``|e| <= 2.0001 u sigma``; then
``gamma_hat = F (x_true + e)^2 / (2 sigma^2)`` with ``|F - 1| <= 5.0001 u``
and ``|x_true| / sigma = sqrt(2 gamma)``, so
``|gamma_hat - gamma| <= u (5.0001 gamma + 2.8286 sqrt(gamma) + 1e-15)``;
numpy's ``exp`` is assumed accurate within 4 ulp on normal results (a
relative error of at most ``8u``; the tests measure the whole computation
against 50-digit arithmetic). For ``gamma > 700`` (every ``|y| > 2^53``,
as ``sigma <= 2^40``) both ``a`` and ``a_hat`` are below ``1e-304``.

The decision (:func:`_accept_gaussian`) draws the first 53 bits of a uniform
``U`` as an integer ``k`` (``U`` lies in ``[k u, (k+1) u)``) and accepts if
``(k+1) u <= a_hat - r``, rejects if ``k u >= a_hat + r``, with
``r = 1e-12 a_hat + 2^-50``: as ``|a - a_hat| < r``, both decisions are the
exact ones. Otherwise (probability at most ``2r + u``, below ``1e-11``) it
draws 128 more bits of ``U`` and computes ``a`` from the exact rationals
``|y|``, ``t`` and ``sigma^2`` (a double is a rational) with :mod:`decimal`
to 60 digits (error below 1e-55), and accepts iff ``U + 2^-181 < a``: that
differs from the exact decision only when ``U`` lies within ``2^-181 + 1e-55``
of ``a``. The output law ``p b / B`` (``p`` the exact discrete Laplace pmf,
``b`` the implemented acceptance probability, ``B = sum p b``) is within
``sum p |a - b| / A <= 2e-55 / A`` of ``N_Z(0, sigma^2) = p a / A`` in total
variation, where ``A`` is the acceptance rate above; ``A >= 0.28`` for
every ``sigma`` (``A >= 0.54`` for ``sigma >= 1``): ``tanh(x) >= x (1 - x^2/3)``
and ``sum_y exp(-y^2/(2 sigma^2)) >= sqrt(2 pi) sigma`` (Poisson summation)
give, on ``[n, n+1)`` with ``t = n+1``, ``A >= tanh(1/(2t)) sqrt(2 pi) sigma
exp(-sigma^2/(2t^2)) >= 0.5415``, and for ``sigma < 1``,
``A >= tanh(1/2) e^{-1/2} >= 0.28``; the tests check ``A`` by direct
summation. Hence ``TV < 1e-54`` per draw; the module states
``DISCRETE_GAUSSIAN_SAMPLER_TV = 1e-50``, and the Gaussian mechanisms add
``(1 + e^epsilon)`` times it per released coordinate to delta.

The rounded Gaussian
--------------------
The Gaussian mechanisms are calibrated for the continuous Gaussian rounded to
the grid; :func:`rounded_gaussian_tv_bound` bounds the total variation
between ``round(N(0, sigma^2))`` and ``N_Z(0, sigma^2)`` (derivation in its
docstring; about ``0.0202 / sigma^2``).

References
----------
Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian for
differential privacy. Advances in Neural Information Processing Systems 33
(NeurIPS 2020). arXiv:2004.00010.

Mironov, I. (2012). On significance of the least significant bits for
differential privacy. Proceedings of the 2012 ACM Conference on Computer and
Communications Security (CCS), 650-661.
"""

import math

import numpy as np

__all__ = [
    "DISCRETE_GAUSSIAN_SAMPLER_TV",
    "bernoulli_exp_neg_fraction",
    "bernoulli_exp_neg_one",
    "sample_discrete_laplace",
    "sample_discrete_gaussian",
    "rounded_gaussian_tv_bound",
    "discrete_gaussian_pmf",
    "discrete_laplace_pmf",
]

#: Per-draw bound on the total variation between :func:`sample_discrete_gaussian`
#: and ``N_Z(0, sigma^2)`` (module docstring: below ``2e-55 / 0.28``).
DISCRETE_GAUSSIAN_SAMPLER_TV = 1e-50

#: Bound on ``|a_hat / a - 1|`` for ``gamma <= 700`` (module docstring): ``(6.5 * 700 + 9.5) u``.
_FLOAT_ACCEPTANCE_RTOL = (6.5 * 700 + 9.5) * 2.0**-53

#: Outputs produced per vectorised batch: blocks this size keep the intermediate arrays
#: in cache (the loops are memory bound); any value gives the same law.
_BLOCK = 2**16

#: Below this many running elements, a loop runs ``_ROUNDS`` rounds per numpy call
#: (drawing the randomness of rounds that may not be needed, which is then dropped).
_SMALL = 2048
_ROUNDS = 8

#: Largest ``high`` passed to ``rng.integers`` (``den * K`` in Algorithm 1).
_MAX_HIGH = 2**62

#: Largest discrete Laplace scale accepted (the discrete Gaussian uses up to 2^40 + 1).
_MAX_LAPLACE_T = 2**41

#: Range of discrete Gaussian sigmas accepted (below 2^-100, N_Z(0, sigma^2) is the point
#: mass at 0 within total variation 2 exp(-2^199); the float analysis assumes no underflow).
_MIN_SIGMA = 2.0**-100
_MAX_SIGMA = 2.0**40

# CKS Algorithm 1 with gamma = 1 in one draw: W uniform on {0, ..., F - 1}, F = 7! = 5040
# (numpy's buffered 16-bit path), K = min{k : W >= F/k!}.
# _FACT_THRESH_ASC lists the thresholds T_k = F/k! for k = 7, 6, ..., 1 (ascending).
_FACT_N = 7
_FACT_DTYPE = np.uint16
_FACT = math.factorial(_FACT_N)
_FACT_THRESH_ASC = np.array([_FACT // math.factorial(k) for k in range(_FACT_N, 0, -1)],
                            dtype=_FACT_DTYPE)
_T2 = _FACT // 2
_T3 = _FACT // 6


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------
def _shape(size):
    """``size`` (None, int or tuple of int) as a shape tuple."""
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
        shape = (int(size),)
    else:
        try:
            shape = tuple(int(s) for s in size)
        except TypeError:
            raise TypeError("size must be None, an int or a tuple of ints.") from None
    if any(s < 0 for s in shape):
        raise ValueError("size must not be negative.")
    return shape


def _finish(flat, size):
    """Reshape a flat int64 result to ``size`` (a numpy scalar for ``size=None``)."""
    out = flat.reshape(_shape(size))
    return out[()] if size is None else out


def _check_laplace_scale(t):
    if isinstance(t, (float, np.floating)) and float(t).is_integer():
        t = int(t)
    if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
        raise TypeError("the discrete Laplace scale t must be a positive integer.")
    t = int(t)
    if not 1 <= t <= _MAX_LAPLACE_T:
        raise ValueError(f"the discrete Laplace scale t must be in [1, 2^41]; got {t}.")
    return t


def _check_sigma(sigma):
    if isinstance(sigma, bool):
        raise TypeError("sigma must be a positive float.")
    sigma = float(sigma)
    if not (_MIN_SIGMA <= sigma <= _MAX_SIGMA):  # also rejects nan
        raise ValueError(f"sigma must be in [2^-100, 2^40]; got {sigma!r}.")
    return sigma


# ----------------------------------------------------------------------------
# Bernoulli(exp(-gamma)): CKS Algorithm 1
# ----------------------------------------------------------------------------
def _bern_exp_frac(num, den, rng):
    """Algorithm 1 on a flat int64 array ``num`` with ``0 <= num <= den``; no validation.

    ``den`` is a Python int (one scalar ``high`` per round: the fast path of
    ``rng.integers``) or an int64 array of the shape of ``num``.
    """
    n = num.size
    scalar = np.ndim(den) == 0
    if n == 0:
        return np.zeros(0, dtype=bool)
    # round K = 1 on every element: A ~ Bernoulli(num / den); A = 0 stops with K = 1 (odd)
    a = rng.integers(0, den, size=n) < num
    out = ~a
    active = np.flatnonzero(a)  # elements still running (index arrays: faster than masks)
    num_act = num.take(active)
    den_act = None if scalar else den.take(active)
    k = 2
    while active.size:
        dmax = den if scalar else int(den_act.max())
        if dmax * k > _MAX_HIGH:
            raise OverflowError("den * K exceeds 2^62 in bernoulli_exp_neg_fraction.")
        if active.size >= _SMALL:  # one round: K
            high = den * k if scalar else den_act * k
            out[active] = bool(k & 1)  # the result if this round stops (A = 0)
            go = np.flatnonzero(rng.integers(0, high, size=active.size) < num_act)  # A = 1
            j = 1
        else:  # the few long runs: rounds K, ..., K + j - 1 in one call (unused draws dropped)
            j = min(_ROUNDS, _MAX_HIGH // dmax - k + 1)  # never a high above 2^62
            ks = np.arange(k, k + j, dtype=np.int64)
            high = den * ks if scalar else den_act[:, None] * ks
            a = rng.integers(0, high, size=(active.size, j)) < num_act[:, None]
            first0 = np.argmin(a, axis=1)  # the round where A = 0 (if any)
            go_on = a.all(axis=1)
            stop = np.flatnonzero(~go_on)
            out[active.take(stop)] = ((k + first0.take(stop)) & 1).astype(bool)
            go = np.flatnonzero(go_on)
        active = active.take(go)
        num_act = num_act.take(go)
        if not scalar:
            den_act = den_act.take(go)
        k += j
    return out


def bernoulli_exp_neg_fraction(num, den, rng):
    """Exact Bernoulli(exp(-num/den)) draws, vectorised (CKS 2020, Algorithm 1).

    For each element: ``K = 1``; repeat ``A ~ Bernoulli(num / (den K))``
    (``rng.integers(0, den * K) < num``), ``K += 1``, until ``A = 0``; return
    ``K`` odd. ``P(K > k) = gamma^k / k!`` with ``gamma = num/den``, hence
    ``P(K odd) = exp(-gamma)`` exactly. The elements run in lock-step: round
    ``K`` is one ``rng.integers`` call over the elements still running.

    Parameters
    ----------
    num : int or array_like of int
        Numerators, ``0 <= num <= den``.
    den : int or array_like of int
        Positive denominators (broadcast against ``num``). A scalar ``den`` is
        the fast path.
    rng : numpy.random.Generator
        Source of randomness (only ``rng.integers`` is called).

    Returns
    -------
    ndarray of bool
        Shape of ``broadcast(num, den)``; ``True`` with probability
        ``exp(-num/den)``.

    Raises
    ------
    ValueError
        If ``den <= 0``, ``num < 0`` or ``num > den``.
    OverflowError
        If ``den * K`` would exceed ``2^62`` (``den > 2^62``, or a run reaching
        round ``K`` with ``den * K > 2^62``).

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020, Algorithm 1.
    """
    num_a = np.asarray(num)
    den_a = np.asarray(den)
    for name, arr in (("num", num_a), ("den", den_a)):
        if arr.dtype.kind not in "iub":
            raise TypeError(f"{name} must be integers.")
        if arr.dtype.kind == "u" and arr.size and int(arr.max()) > 2**63 - 1:
            raise OverflowError(f"{name} does not fit in int64.")
    num_a = num_a.astype(np.int64)
    den_a = den_a.astype(np.int64)
    if den_a.size and int(den_a.min()) <= 0:
        raise ValueError("den must be positive.")
    if num_a.size and int(num_a.min()) < 0:
        raise ValueError("num must be non-negative.")
    shape = np.broadcast_shapes(num_a.shape, den_a.shape)
    if den_a.size and int(den_a.max()) > _MAX_HIGH:
        raise OverflowError("den exceeds 2^62.")
    if np.any(num_a > den_a):
        raise ValueError("bernoulli_exp_neg_fraction needs num <= den (num/den in [0, 1]).")
    flat_num = np.broadcast_to(num_a, shape).ravel()
    if den_a.ndim == 0:
        den_arg = int(den_a)
    else:
        den_arg = np.broadcast_to(den_a, shape).ravel()
    return _bern_exp_frac(flat_num, den_arg, rng).reshape(shape)


def _bern_exp_neg_one(m, rng):
    """``m`` exact Bernoulli(exp(-1)) draws (flat); one integer per draw (module docstring)."""
    w = rng.integers(0, _FACT, size=m, dtype=_FACT_DTYPE)
    out = (w >= _T3) & (w < _T2)  # K = 2 (w >= T_2, even) or K = 3 (T_3 <= w < T_2, odd)
    low = np.flatnonzero(w < _T3)  # K >= 4: probability 1/6
    if low.size:
        # K - 1 = #{k in 1..N : w < F/k!}
        kk = 1 + (_FACT_N - np.searchsorted(_FACT_THRESH_ASC, w.take(low), side="right"))
        out[low] = (kk & 1).astype(bool)
        cont = low[kk > _FACT_N]  # w = 0: A_2 = ... = A_N = 1; go on from K = N + 1
        k = _FACT_N + 1
        while cont.size:
            out[cont] = bool(k & 1)  # the result if A = 0 in this round
            cont = cont[rng.integers(0, k, size=cont.size) == 0]  # A ~ Bernoulli(1/K)
            k += 1
    return out


def bernoulli_exp_neg_one(size, rng):
    """Exact Bernoulli(exp(-1)) draws, vectorised (CKS 2020, Algorithm 1 with gamma = 1).

    CKS's loop ``K = 1``; ``A ~ Bernoulli(1/K)``, ``K += 1`` while ``A = 1``;
    return ``K`` odd, has ``P(K > k) = 1/k!``. This implementation draws the
    same ``K`` from one uniform ``W`` on ``{0, ..., 7! - 1}``:
    ``K = min{k : W >= 7!/k!}``, so ``P(K > k) = 1/k!`` exactly for
    ``k <= 7``; if ``W = 0`` (probability ``1/5040``) the loop continues from
    ``K = 8`` with ``A = [rng.integers(0, K) == 0]``. Same law, one small
    integer per draw instead of ``e - 1`` on average (and no per-round
    bookkeeping).

    Parameters
    ----------
    size : int or tuple of int or None
        Output shape (``None``: one draw, returned as a numpy bool).
    rng : numpy.random.Generator
        Source of randomness (only ``rng.integers`` is called).

    Returns
    -------
    ndarray of bool
        ``True`` with probability ``exp(-1)``.

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020, Algorithm 1.
    """
    shape = _shape(size)
    out = _bern_exp_neg_one(math.prod(shape), rng).reshape(shape)
    return out[()] if size is None else out


def _geometric_exp_neg_one(m, rng):
    """Number of Bernoulli(exp(-1)) successes before the first failure, ``m`` draws (exact)."""
    v = _bern_exp_neg_one(m, rng).astype(np.int64)
    active = np.flatnonzero(v)
    while active.size:
        if active.size >= _SMALL:  # one more trial each
            active = active.take(np.flatnonzero(_bern_exp_neg_one(active.size, rng)))
            v[active] += 1  # indices are distinct
        else:  # the few long runs: _ROUNDS trials each in one call (trials after a failure unused)
            b = _bern_exp_neg_one(active.size * _ROUNDS, rng).reshape(active.size, _ROUNDS)
            go_on = b.all(axis=1)
            v[active] += np.where(go_on, _ROUNDS, np.argmin(b, axis=1))  # leading successes
            active = active.take(np.flatnonzero(go_on))
    return v


# ----------------------------------------------------------------------------
# discrete Laplace: CKS Algorithm 2
# ----------------------------------------------------------------------------
def _laplace_acceptance_rate(t):
    """P(a candidate of Algorithm 2 is kept) = P(D = 1) (1 + e^{-1/t}) / 2."""
    q = math.exp(-1.0 / t)
    p_d = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))
    return p_d * (1.0 + q) / 2.0


def _laplace_flat(t, n, rng, block=None):
    """``n`` exact discrete Laplace(t) draws (flat int64); ``t`` a validated int.

    ``block`` caps the outputs per batch (default ``_BLOCK``).
    """
    block = _BLOCK if block is None else block
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out
    rate = _laplace_acceptance_rate(t)
    v_max = (2**62 - t) // t  # X = U + t V <= 2^62 keeps -X and every sum below in int64
    filled = 0
    while filled < n:
        need = min(n - filled, block)
        m = int(need / rate * 1.02) + 32
        w = rng.integers(0, 2 * t, size=m)  # U = w >> 1 uniform on {0..t-1}, B = w & 1
        u = w >> 1
        keep = np.flatnonzero(_bern_exp_frac(u, t, rng))  # D ~ Bernoulli(exp(-U/t))
        x = u.take(keep)
        neg = (w.take(keep) & 1).astype(bool)
        v = _geometric_exp_neg_one(x.size, rng)
        if v.size and int(v.max()) > v_max:
            raise OverflowError("discrete Laplace draw exceeds 2^62.")
        x += t * v  # X = U + t V
        bad = np.flatnonzero(x == 0)
        bad = bad.take(np.flatnonzero(neg.take(bad)))  # B = 1, X = 0: rejected (draw restarts)
        np.negative(x, out=x, where=neg)  # Y = (1 - 2B) X
        y = np.delete(x, bad) if bad.size else x
        take = min(y.size, need)
        out[filled:filled + take] = y[:take]
        filled += take
    return out


def sample_discrete_laplace(t, size, rng):
    """Exact discrete Laplace draws: ``P(y) = tanh(1/(2t)) exp(-|y|/t)`` on the integers.

    CKS 2020, Algorithm 2 with the rational scale ``t/1``: ``U`` uniform on
    ``{0, ..., t-1}`` kept with probability ``exp(-U/t)``
    (:func:`bernoulli_exp_neg_fraction`), else the draw restarts; ``V`` the
    number of Bernoulli(``e^-1``) successes before the first failure;
    ``X = U + t V``; a fair sign ``B``; the draw restarts if ``B = 1`` and
    ``X = 0``; else ``Y = (1 - 2B) X``. Integer arithmetic only: exact.

    Vectorised: candidates for all missing positions are drawn at once (about
    1.6 times as many as needed, the inverse of the acceptance rate), the
    accepted ones fill the positions in order, and the rest are redrawn.

    Parameters
    ----------
    t : int
        Scale, a positive integer (``1 <= t <= 2^41``); an integral float is
        accepted. The variance is ``2 e^{-1/t} / (1 - e^{-1/t})^2`` (about
        ``2 t^2``).
    size : int or tuple of int or None
        Output shape (``None``: one draw, returned as a numpy int64).
    rng : numpy.random.Generator
        Source of randomness (only ``rng.integers`` is called).

    Returns
    -------
    ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    TypeError, ValueError
        If ``t`` is not an integer in ``[1, 2^41]``.

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020, Algorithm 2.
    """
    t = _check_laplace_scale(t)
    shape = _shape(size)
    return _finish(_laplace_flat(t, math.prod(shape), rng), size)


# ----------------------------------------------------------------------------
# discrete Gaussian: CKS Algorithm 3
# ----------------------------------------------------------------------------
def _gauss_theta(sigma):
    """``S(sigma) = sum_{y in Z} exp(-y^2 / (2 sigma^2))`` to double precision.

    Direct (``math.fsum`` over ``|y| <= 40 sigma + 10``; the omitted terms are
    below ``e^-800``) for ``sigma <= 100``; beyond, the Poisson-summation
    identity ``S = sqrt(2 pi) sigma (1 + 2 sum_{m>=1} exp(-2 pi^2 sigma^2 m^2))``
    (whose correction terms are then below ``e^-197000``).
    """
    if sigma <= 100.0:
        half = int(math.ceil(40.0 * sigma)) + 10
        ys = np.arange(1, half + 1, dtype=float)
        return 1.0 + 2.0 * math.fsum(np.exp(-(ys * ys) / (2.0 * sigma * sigma)))
    return math.sqrt(2.0 * math.pi) * sigma


def _gaussian_acceptance_rate(sigma, t):
    """``A = tanh(1/(2t)) exp(-sigma^2/(2 t^2)) S(sigma)``: P(a Laplace proposal is accepted)."""
    return math.tanh(0.5 / t) * math.exp(-sigma * sigma / (2.0 * t * t)) * _gauss_theta(sigma)


def _acceptance_probability(y, sigma, t):
    """The float64 acceptance probability ``a_hat(y) = exp(-gamma_hat(y))`` of Algorithm 3.

    ``gamma_hat = fl(fl(fl(|y| - fl(fl(sigma^2)/t))^2) / (2 fl(sigma^2)))``;
    the error analysis of the module docstring is about exactly these
    operations (the tests compare them with 50-digit arithmetic).
    """
    s2 = sigma * sigma
    c = s2 / float(t)
    x = np.asarray(y, dtype=np.int64).astype(np.float64)  # exact for |y| <= 2^53
    np.abs(x, out=x)
    x -= c
    np.multiply(x, x, out=x)
    x /= -2.0 * s2  # exact negation: fl(a / -b) = -fl(a / b)
    np.exp(x, out=x)
    return x


def _accept_gaussian(y, sigma, t, rng):
    """Decide the acceptance of each proposal ``y`` (module docstring: TV below 1e-54)."""
    a_hat = _acceptance_probability(y, sigma, t)
    r = 1e-12 * a_hat + 2.0**-50
    k = rng.integers(0, 2**53, size=y.size)
    lo = k * 2.0**-53  # exact: U lies in [lo, lo + 2^-53)
    accept = lo + 2.0**-53 <= a_hat - r
    unsure = np.flatnonzero(~accept & (lo < a_hat + r))
    for i in unsure:  # rare: about 2e-12 of the proposals
        accept[i] = _accept_exact(int(y[i]), sigma, t, int(k[i]), rng)
    return accept


def _accept_exact(y, sigma, t, k53, rng):
    """``U < a(y)`` with 128 more bits of ``U`` and ``a`` to 60 digits (exact rationals in)."""
    from decimal import Decimal, localcontext
    from fractions import Fraction

    s2 = Fraction(sigma) ** 2  # exact: sigma is a double
    x = abs(y) - s2 / t
    gamma = x * x / (2 * s2)
    more = (int(rng.integers(0, 2**62)) << 66) | (int(rng.integers(0, 2**62)) << 4) | int(rng.integers(0, 16))
    with localcontext() as ctx:
        ctx.prec = 60
        a = (-(Decimal(gamma.numerator) / Decimal(gamma.denominator))).exp()
        U = (Decimal(k53) * Decimal(2) ** 128 + Decimal(more)) / Decimal(2) ** 181
        return bool(U + Decimal(2) ** -181 < a)


def sample_discrete_gaussian(sigma, size, rng):
    """Discrete Gaussian draws ``N_Z(0, sigma^2)``: ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on Z.

    CKS 2020, Algorithm 3: ``t = floor(sigma) + 1``; propose ``Y`` from the
    exact discrete Laplace(t) (:func:`sample_discrete_laplace`); accept with
    probability ``exp(-(|Y| - sigma^2/t)^2 / (2 sigma^2))``, else propose
    again. The acceptance is decided in floating point where that is
    provably the exact decision and in 60-digit arithmetic otherwise: the
    output law is within total variation ``DISCRETE_GAUSSIAN_SAMPLER_TV``
    (``1e-50``, module docstring) of ``N_Z(0, sigma^2)`` per draw, for every
    ``2^-100 <= sigma <= 2^40``.

    A proposal is accepted with probability ``A >= 0.54`` for ``sigma >= 1``
    (``A`` tends to ``sqrt(pi / (2e)) = 0.76``); about ``1/A`` proposals are
    drawn per output, all in one vectorised batch.

    Parameters
    ----------
    sigma : float
        Scale, ``2^-100 <= sigma <= 2^40``. ``N_Z(0, sigma^2)`` has variance at most
        ``sigma^2`` (within ``1e-300`` relative of it for ``sigma >= 2``).
    size : int or tuple of int or None
        Output shape (``None``: one draw, returned as a numpy int64).
    rng : numpy.random.Generator
        Source of randomness (``rng.integers`` for the Laplace proposals,
        the bits of the acceptance uniforms).

    Returns
    -------
    ndarray of int64
        Draws of shape ``size``.

    Raises
    ------
    ValueError
        If ``sigma`` is not in ``[2^-100, 2^40]``.

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020, Algorithm 3.
    """
    sigma = _check_sigma(sigma)
    shape = _shape(size)
    n = math.prod(shape)
    t = math.floor(sigma) + 1
    rate = _gaussian_acceptance_rate(sigma, t)
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = min(n - filled, _BLOCK)
        m = int(need / rate * 1.02) + 32
        y = _laplace_flat(t, m, rng, block=m)
        y = y.take(np.flatnonzero(_accept_gaussian(y, sigma, t, rng)))
        take = min(y.size, need)
        out[filled:filled + take] = y[:take]
        filled += take
    return _finish(out, size)


# ----------------------------------------------------------------------------
# the rounded Gaussian and the exact pmfs
# ----------------------------------------------------------------------------
def rounded_gaussian_tv_bound(sigma):
    """Upper bound on the total variation between ``N_Z(0, sigma^2)`` and ``round(N(0, sigma^2))``.

    Let ``phi`` be the ``N(0, sigma^2)`` density. The rounded Gaussian has
    ``P_R(y) = int_{y-1/2}^{y+1/2} phi``, and by the midpoint rule
    ``|P_R(y) - phi(y)| <= (1/24) max_{I_y} |phi''|`` on
    ``I_y = [y - 1/2, y + 1/2]``. The discrete Gaussian is
    ``P_Z(y) = phi(y) / Z`` with ``Z = sum_y phi(y) = 1 + 2 sum_{m>=1}
    exp(-2 pi^2 sigma^2 m^2)`` (Poisson summation). Hence

        TV = 1/2 sum_y |P_R(y) - phi(y)/Z|
           <= 1/2 [ sum_y |P_R(y) - phi(y)| + sum_y phi(y) |1 - 1/Z| ]
           <= 1/2 [ (1/24) sum_y max_{I_y} |phi''| + (Z - 1) ].

    On an interval of length one ``max |f| <= int |f| + int |f'|`` (for
    every ``x`` in it, ``max |f| <= |f(x)| + int |f'|``; average over ``x``),
    so ``sum_y max_{I_y} |phi''| <= int |phi''| + int |phi'''|`` over the
    real line. With ``phi'' = (x^2 - sigma^2) phi / sigma^4`` (zeros at
    ``+-sigma``) and ``phi''' = -x (x^2 - 3 sigma^2) phi / sigma^6`` (zeros
    at ``0, +-sqrt(3) sigma``), exactly

        int |phi''|  = 4 |phi'(sigma)| = 4 / (sqrt(2 pi e) sigma^2),
        int |phi'''| = 2 (|phi''(0)| + 2 phi''(sqrt(3) sigma))
                     = 2 (1 + 4 e^{-3/2}) / (sqrt(2 pi) sigma^3),

    and ``Z - 1 <= 2 r / (1 - r)`` with ``r = exp(-2 pi^2 sigma^2)``. The
    bound is

        tv(sigma) = 1/2 [ (int |phi''| + int |phi'''|) / 24 + 2 r / (1 - r) ],

    about ``0.0202 / sigma^2`` for large sigma (the leading term is also the
    leading term of the exact distance: the bound is within a factor 3.2 of it
    at ``sigma = 1`` and tight as sigma grows; see the tests). A relative
    ``1e-12`` is added for the rounding of this computation.

    Parameters
    ----------
    sigma : float
        Scale in grid units, ``sigma >= 1``.

    Returns
    -------
    float
        The bound.

    Raises
    ------
    ValueError
        If ``sigma < 1`` (or not finite).

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020 (Poisson summation for the
    normalising constant).
    """
    sigma = float(sigma)
    if not (sigma >= 1.0 and math.isfinite(sigma)):
        raise ValueError("rounded_gaussian_tv_bound needs a finite sigma >= 1.")
    i2 = 4.0 / (math.sqrt(2.0 * math.pi * math.e) * sigma**2)
    i3 = 2.0 * (1.0 + 4.0 * math.exp(-1.5)) / (math.sqrt(2.0 * math.pi) * sigma**3)
    r = math.exp(-2.0 * math.pi**2 * sigma**2)
    z1 = 2.0 * r / (1.0 - r)
    return 0.5 * ((i2 + i3) / 24.0 + z1) * (1.0 + 1e-12)


def discrete_gaussian_pmf(y, sigma):
    """The pmf of ``N_Z(0, sigma^2)``: ``exp(-y^2 / (2 sigma^2)) / S(sigma)``.

    ``S(sigma) = sum_y exp(-y^2 / (2 sigma^2))`` is summed with ``math.fsum``
    over ``|y| <= 40 sigma + 10`` (the rest is below ``e^-800``) for
    ``sigma <= 100``, and taken from the Poisson-summation identity
    ``S = sqrt(2 pi) sigma (1 + 2 sum_{m>=1} exp(-2 pi^2 sigma^2 m^2))``
    beyond (the correction is then below ``e^-197000``).

    Parameters
    ----------
    y : int or array_like of int
        Points.
    sigma : float
        Scale, ``sigma > 0``.

    Returns
    -------
    ndarray of float
        ``P(Y = y)``.

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020.
    """
    sigma = float(sigma)
    if not (sigma > 0.0 and math.isfinite(sigma)):
        raise ValueError("sigma must be positive and finite.")
    y = np.asarray(y, dtype=float)
    return np.exp(-(y * y) / (2.0 * sigma * sigma)) / _gauss_theta(sigma)


def discrete_laplace_pmf(y, t):
    """The pmf of the discrete Laplace: ``tanh(1/(2t)) exp(-|y|/t)``.

    ``tanh(1/(2t)) = (1 - e^{-1/t}) / (1 + e^{-1/t})`` is the closed-form
    normalisation (computed with ``tanh``, accurate for large ``t``).

    Parameters
    ----------
    y : int or array_like of int
        Points.
    t : float
        Scale, ``t > 0`` (the samplers use integer ``t``).

    Returns
    -------
    ndarray of float
        ``P(Y = y)``.

    References
    ----------
    Canonne, C. L., Kamath, G. and Steinke, T. (2020). The discrete Gaussian
    for differential privacy. NeurIPS 2020.
    """
    t = float(t)
    if not (t > 0.0 and math.isfinite(t)):
        raise ValueError("t must be positive and finite.")
    y = np.asarray(y, dtype=float)
    return math.tanh(0.5 / t) * np.exp(-np.abs(y) / t)
