"""Spherical noise with a half-normal radius: R1SMG and product noise (UNVERIFIED).

Two published mechanisms add noise of the form::

    n = s * R * v,   R = |N(0, 1)| (or a signed N(0, 1)),   v uniform on S^(M-1),

to an ``M``-dimensional statistic (``M`` = number of released coordinates):

* **R1SMG** (Ji & Li, "Less is More: Revisiting the Gaussian Mechanism for
  Differential Privacy", USENIX Security 2024), ``s = sqrt(sigma_*)``;
* **product noise** (Liu, Ji, Fang, Wei & Li, "Privacy Loss of Noise
  Perturbation via Concentration Analysis of A Product Measure", SIGMOD 2026;
  Liu et al. 2026), ``s = sigma_M``.

Both are implemented here *faithfully to their papers* (calibration,
validity conditions, sampling), so that the papers' utility numbers can be
reproduced, and both are registered with ``verified = False``: **neither is
differentially private at its claimed (epsilon, delta)**. They warn with
:class:`~skdp.PrivacyGuaranteeWarning` on every calibration and are never
chosen by ``mechanism="auto"``.

Why the claims fail
-------------------
The two noises have the same law up to the scale ``s``: the direction is
uniform and secret, so ``n`` is spherically symmetric with radius
``||n|| = s |z|``. Its Lebesgue density on R^M is (polar coordinates,
``A_{M-1} = 2 pi^(M/2) / Gamma(M/2)`` the area of the unit sphere)

    p(u) = f_R(||u||) / (A_{M-1} ||u||^(M-1)),
    f_R(r) = sqrt(2/pi) / s * exp(-r^2 / (2 s^2)),                         (D)

which is unbounded at ``u = 0``. The true privacy loss at an output ``y``
with ``r1 = ||y - f(D)||`` and ``r2 = ||y - f(D')||`` is therefore

    L(y) = (r2^2 - r1^2) / (2 s^2) + (M - 1) ln(r2 / r1).

Both papers' proofs keep only the first term (our review of Ji & Li 2024, section 7.1:
Theorem 5 conditions on the secret direction; our review of Liu et al. 2026, section 1.6:
Proposition 3 drops the polar Jacobian ``||u||^(M-1)``). The second term is
of order one whenever ``r1 - r2`` is of order ``Delta_2``, so the true
delta at the claimed epsilon is of order 0.1-0.7, not 1e-5. The event
"the output is closer to f(D) than to f(D')" (a half-space orthogonal to
``f(D) - f(D')``) already certifies it; see :func:`spherical_ball_delta` for
a closed-form certificate and ``tests/test_spherical.py`` for the audits.

Measured (``tests/test_spherical.py``; worst-case pair ``f(D) = 0``,
``f(D') = Delta_2 e_1``):

=============  =====================  =============  ==========  =================
mechanism      setting                claimed delta  true delta  certified (95%)
=============  =====================  =============  ==========  =================
r1smg          M=50, eps=0.019 < 1/M  1e-5           0.40        >= 0.38 (audit)
product_noise  M=50, eps=1, k=32000   9.0e-6         0.53        >= 0.51 (audit)
=============  =====================  =============  ==========  =================

"true delta" is a Monte Carlo estimate (2e6 draws) of the exact hockey-stick
divergence ``E[max(0, 1 - exp(eps - L))]`` (our review of Ji & Li 2024, Appendix Z).
"""

import numpy as np
from scipy import integrate
from scipy.special import betainc, gammaln, ndtr

from ._base import Mechanism, register

__all__ = [
    "r1smg_log_psi",
    "r1smg_sigma_star",
    "product_noise_t",
    "product_noise_sigma",
    "product_noise_delta",
    "product_noise_calibration",
    "spherical_noise_log_density",
    "spherical_ball_delta",
    "R1SMG",
    "ProductNoise",
]


# ---------------------------------------------------------------------------
# shared sampler and law
# ---------------------------------------------------------------------------
def _uniform_direction(n_dims, rng):
    """Uniform point on S^(n_dims - 1) (Chikuse 2003, Thm 2.2.1 with r = 1)."""
    while True:
        x = rng.standard_normal(n_dims)
        norm = np.linalg.norm(x)
        if norm > 0:  # probability-zero event, guarded anyway
            return x / norm


def _uniform_directions(n, n_dims, rng):
    """``n`` independent uniform points on S^(n_dims - 1), as rows."""
    x = rng.standard_normal((n, n_dims))
    norms = np.linalg.norm(x, axis=1)
    while np.any(norms == 0):  # probability-zero event, guarded anyway
        bad = norms == 0
        x[bad] = rng.standard_normal((int(bad.sum()), n_dims))
        norms = np.linalg.norm(x, axis=1)
    return x / norms[:, None]


def _expand_rows(query, rows):
    """Apply ``query.expand`` to each row of ``rows`` (n, n_released) -> (n, size)."""
    if not query.symmetric:
        return rows
    d = query.shape[0]
    iu = np.triu_indices(d)
    out = np.zeros((rows.shape[0], d, d))
    out[:, iu[0], iu[1]] = rows
    out[:, iu[1], iu[0]] = rows
    return out.reshape(rows.shape[0], -1)


def _released_rows(query, noise):
    """Inverse of :func:`_expand_rows`: the released coordinates of flattened noise."""
    noise = np.asarray(noise, dtype=float).reshape(np.shape(noise)[0], -1)
    if not query.symmetric:
        return noise
    d = query.shape[0]
    iu = np.triu_indices(d)
    return noise.reshape(-1, d, d)[:, iu[0], iu[1]]


def spherical_noise_log_density(u, scale):
    """Log Lebesgue density (D) of ``scale * |z| * v`` on R^M.

    ``z ~ N(0, 1)`` and ``v`` uniform on the unit sphere of R^M, independent
    (the same law results for a signed ``z``). This is the output law of both
    R1SMG (``scale = sqrt(sigma_*)``) and product noise (``scale = sigma_M``).

    Parameters
    ----------
    u : array-like of shape (n_points, M) or (M,)
        Noise values (output minus the true statistic).
    scale : float
        ``s`` in ``n = s |z| v``.

    Returns
    -------
    log_density : ndarray of shape (n_points,) or float
        ``log f_R(||u||) - log A_{M-1} - (M-1) log ||u||`` with
        ``f_R(r) = sqrt(2/pi)/s exp(-r^2/(2 s^2))``; ``+inf`` at ``u = 0``.
    """
    u = np.asarray(u, dtype=float)
    single = u.ndim == 1
    u = np.atleast_2d(u)
    m = u.shape[1]
    r = np.linalg.norm(u, axis=1)
    log_area = np.log(2.0) + 0.5 * m * np.log(np.pi) - gammaln(0.5 * m)
    with np.errstate(divide="ignore"):
        log_r = np.log(r)
    out = (0.5 * np.log(2.0 / np.pi) - np.log(scale) - r**2 / (2.0 * scale**2)
           - log_area - (m - 1) * log_r)
    return float(out[0]) if single else out


def spherical_ball_delta(scale, n_dims, l2_sensitivity, epsilon, radius=None):
    """Exact hockey-stick value of a ball event for spherical half-normal noise.

    For neighbouring statistics at distance exactly ``Delta = l2_sensitivity``
    (the worst case the sensitivity allows) and the ball
    ``B = {y : ||y - f(D)|| <= rho}`` (``rho = Delta/2`` by default), returns

        P_D(B) - e^epsilon P_D'(B),

    a **lower bound on the true delta** at ``epsilon`` of the mechanism
    ``f + scale |z| v`` (any event gives one). Here (our review of Ji & Li 2024, section
    7.1, ball test)

    * ``P_D(B) = P(scale |z| <= rho) = 2 Phi(rho / scale) - 1`` (closed form);
    * ``P_D'(B) = int f_R(r) P(cos theta >= c(r)) dr`` over
      ``r in [Delta - rho, Delta + rho]``, with
      ``c(r) = (r^2 + Delta^2 - rho^2) / (2 r Delta)`` and
      ``(1 + cos theta)/2 ~ Beta((M-1)/2, (M-1)/2)`` the cosine of the angle
      between a uniform direction and a fixed one (Cai, Fan & Jiang 2013);
      evaluated by adaptive quadrature.

    For large ``M`` the second term vanishes and the bound is about
    ``Delta / sqrt(2 pi scale^2)``, i.e. ``0.28 sqrt(epsilon psi)`` at the
    R1SMG calibration: the claimed delta can be made arbitrarily small, the
    true one cannot.

    Parameters
    ----------
    scale : float
        Noise scale ``s`` (``sqrt(sigma_*)`` for R1SMG, ``sigma_M`` for
        product noise).
    n_dims : int
        Dimension ``M`` (>= 2).
    l2_sensitivity : float
        Distance ``Delta`` between the two neighbouring statistics.
    epsilon : float
        Privacy-loss level at which delta is evaluated.
    radius : float, optional
        Ball radius ``rho`` in ``(0, Delta)``; default ``Delta / 2``.

    Returns
    -------
    float
        ``P_D(B) - e^epsilon P_D'(B)`` (may be negative for a poor ball).
    """
    scale, delta_2 = float(scale), float(l2_sensitivity)
    rho = 0.5 * delta_2 if radius is None else float(radius)
    m = int(n_dims)
    if m < 2 or not (0 < rho < delta_2) or scale <= 0:
        raise ValueError(
            "spherical_ball_delta needs n_dims >= 2, scale > 0 and 0 < radius < Delta."
        )
    p0 = 2.0 * ndtr(rho / scale) - 1.0
    a = 0.5 * (m - 1)

    def integrand(r):
        c = (r * r + delta_2 * delta_2 - rho * rho) / (2.0 * r * delta_2)
        x = min(max(0.5 * (1.0 + c), 0.0), 1.0)
        tail = 1.0 - betainc(a, a, x)  # P(cos theta >= c)
        return np.sqrt(2.0 / np.pi) / scale * np.exp(-r * r / (2.0 * scale**2)) * tail

    # absolute error at most 1e-12 P_D(B): negligible in the difference
    p1, _ = integrate.quad(integrand, delta_2 - rho, delta_2 + rho, epsabs=1e-12 * p0,
                           epsrel=1e-9, limit=200)
    return float(p0 - np.exp(epsilon) * p1)


# ---------------------------------------------------------------------------
# R1SMG (Ji & Li 2024)
# ---------------------------------------------------------------------------
def r1smg_log_psi(n_dims, delta):
    """``log psi`` of Ji & Li (2024), Theorem 5, in log space.

    ``psi = (delta Gamma((M-1)/2) / (sqrt(pi) Gamma(M/2)))^(2/(M-2))``, i.e.
    ``cos^2(theta_0)`` where ``theta_0`` makes the Cai-Fan-Jiang bound (12)
    equal to delta. ``gammaln`` avoids the overflow of ``Gamma(M/2)`` for
    ``M >= 344``. Closed forms: ``psi = (2 delta / pi)^2`` at ``M = 3`` and
    ``delta / 2`` at ``M = 4``.
    """
    m, delta = int(n_dims), float(delta)
    if m <= 2:
        raise ValueError(f"R1SMG needs M > 2 (Theorem 5), got M = {m}.")
    if not 0 < delta < 1:
        raise ValueError(f"R1SMG needs 0 < delta < 1, got {delta}.")
    return (2.0 / (m - 2)) * (np.log(delta) + gammaln(0.5 * (m - 1)) - gammaln(0.5 * m)
                              - 0.5 * np.log(np.pi))


def r1smg_sigma_star(n_dims, epsilon, delta, l2_sensitivity=1.0):
    """``sigma_* = 2 Delta_2^2 / (epsilon psi)`` (Ji & Li 2024, Theorem 5, with equality).

    ``sigma_*`` is the only non-zero eigenvalue of the rank-1 covariance
    given the secret direction, and equals ``E ||n||^2`` (Theorem 7).
    Does not check Remark 1's cap ``epsilon < 1/M`` (the mechanism does).
    """
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    log_s = (np.log(2.0) + 2.0 * np.log(float(l2_sensitivity)) - np.log(epsilon)
             - r1smg_log_psi(n_dims, delta))
    return float(np.exp(log_s))


class R1SMG(Mechanism):
    """Rank-1 singular multivariate Gaussian mechanism (Ji & Li 2024). NOT DP.

    Calibration (Theorem 5, as the paper applies it, with equality): for a
    statistic with ``M > 2`` released coordinates and replace-one l2
    sensitivity ``Delta_2``,

        psi     = (delta Gamma((M-1)/2) / (sqrt(pi) Gamma(M/2)))^(2/(M-2)),
        sigma_* = 2 Delta_2^2 / (epsilon psi).

    Derivation in the paper: Lemma 2 (Cai, Fan & Jiang 2013) bounds by delta
    the probability that two uniform directions make an angle farther than
    ``theta_0`` from pi/2, with ``cos theta_0 = sqrt(psi)``; a law-of-sines
    argument then bounds the privacy loss computed from the two *conditional*
    rank-1 densities by ``(2 Delta_2 / cos theta_0)^2 / (2 sigma_*)``, which
    is set equal to epsilon.

    Conditions enforced (``ValueError`` otherwise): ``M > 2`` (Lemma 2),
    ``0 < delta < 1``, and **epsilon < 1/M** (Remark 1: "we let the privacy
    budget of the R1SMG mechanism be upper bounded by 1/M of that of the
    classic Gaussian mechanism, i.e., 1/M"; the introduction states
    ``0 < epsilon < 1/M``). Theorem 5 itself omits the cap; following the
    our review of Ji & Li 2024 (section 7.3, "enforce 0 < epsilon < 1/M if you claim
    per-paper R1SMG") it is enforced here, so that every setting accepted is
    one the paper itself would accept.

    Sampling (Definition 8, eq. 11, Theorem 6): ``x ~ N(0, I_M)``,
    ``v = x / ||x||``, ``z ~ N(0, 1)``, noise ``sqrt(sigma_*) z v``, with
    ``v`` and ``z`` fresh for every draw and never exposed. For a symmetric
    query the ``M = d(d+1)/2`` upper-triangle coordinates are noised and
    mirrored (:meth:`Query.expand`). ``E ||n||^2 = sigma_*`` over the
    released coordinates and ``||n||^2 / sigma_* ~ chi^2_1``.

    Why it is not verified: the released noise mixes over the secret
    direction and has the density (D) of the module docstring, singular at
    0; the proof's likelihood ratio of two conditional densities on
    different lines is not the likelihood ratio of the output. At the
    paper's own calibration the true delta is 0.2-0.4 (our review of Ji & Li 2024,
    section 7.1 and Appendix Z), and the ball event gives
    ``delta_true >= 0.28 sqrt(epsilon psi)`` for *every* epsilon
    (:func:`spherical_ball_delta`).

    References
    ----------
    T. Ji and P. Li. Less is More: Revisiting the Gaussian Mechanism for
    Differential Privacy. USENIX Security 2024 (arXiv:2306.02256v3).

    Examples
    --------
    >>> import warnings
    >>> from skdp.mechanisms import Query, calibrate
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     spec = calibrate(Query(shape=(89, 89), l2_sensitivity=2 ** 0.5), 1e-5, 1e-7,
    ...                      mechanism="r1smg")
    >>> round(spec.params["sigma_star"], 1)  # Uber case study (our review of Ji & Li 2024, 5.1)
    402110.1
    """

    name = "r1smg"
    verified = False
    pure = False
    failure = (
        "Theorem 5 of Ji & Li (2024) conditions on the secret random direction; the released "
        "noise is spherically symmetric with a density singular at 0, and at the paper's "
        "calibration the true delta is about 0.2-0.4 (Monte Carlo, our review of Ji & Li 2024, "
        "section 7.1; at M=50, epsilon=0.019 < 1/M, claimed delta=1e-5: true delta 0.40, certified "
        ">= 0.38 by skdp.audit at 95% confidence), not the claimed delta."
    )

    def _check_applicable(self, query, epsilon, delta):
        if query.l2_bound is None:
            return "it needs an l2 sensitivity (or a sensitivity profile)"
        m = query.n_released
        if m <= 2:
            return f"Theorem 5 needs M > 2 released coordinates, got M = {m}"
        if not epsilon < 1.0 / m:
            return (f"Remark 1 of the paper requires epsilon < 1/M = {1.0 / m:.6g} "
                    f"(M = {m}), got epsilon = {epsilon}")
        return None

    def _calibrate(self, query, epsilon, delta):
        m = query.n_released
        l2 = query.l2_bound
        log_psi = r1smg_log_psi(m, delta)
        sigma_star = r1smg_sigma_star(m, epsilon, delta, l2)
        # E n_i^2 = sigma_*/M for every released coordinate (spherical symmetry)
        mse = sigma_star / m * float(np.sum(query.squared_error_weights()))
        params = {
            "sigma_star": sigma_star,
            "psi": float(np.exp(log_psi)),
            "n_dims": m,
            "l2_sensitivity": l2,
        }
        return params, mse

    def _sample(self, spec, rng):
        m = spec.params["n_dims"]
        v = _uniform_direction(m, rng)
        z = rng.standard_normal()
        return spec.query.expand(np.sqrt(spec.params["sigma_star"]) * z * v)

    def _sample_batch(self, spec, rng, n):
        """``n`` independent draws (same law as :meth:`_sample`), shape (n, size)."""
        v = _uniform_directions(n, spec.params["n_dims"], rng)
        z = rng.standard_normal(n)
        return _expand_rows(spec.query, np.sqrt(spec.params["sigma_star"]) * z[:, None] * v)

    def _log_density(self, spec, noise):
        """True log density (D) of the released noise coordinates (used by audits)."""
        return spherical_noise_log_density(_released_rows(spec.query, noise),
                                           np.sqrt(spec.params["sigma_star"]))


# ---------------------------------------------------------------------------
# product noise (Liu et al. 2026)
# ---------------------------------------------------------------------------
def _log_t2(n_dims, log_k):
    m = float(n_dims)
    return (np.log(2.0) + (4.0 / m) * log_k + (1.0 + 4.0 / m) * np.log(m / 4.0 + 1.5)
            - (1.0 + 2.0 / m))


def product_noise_t(n_dims, k=1000.0):
    """``t = sqrt(2 k^(4/M) (M/4 + 3/2)^(1+4/M) / e^(1+2/M))`` (Liu et al., Theorem 8)."""
    _check_m_k(n_dims, k)
    return float(np.exp(0.5 * _log_t2(n_dims, np.log(float(k)))))


def product_noise_sigma(n_dims, epsilon, k=1000.0, l2_sensitivity=1.0):
    """``sigma_M = Delta_2 t / epsilon`` (Liu et al., Theorem 8, with equality)."""
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    return float(l2_sensitivity) * product_noise_t(n_dims, k) / epsilon


def _check_m_k(n_dims, k):
    if int(n_dims) != n_dims or n_dims < 4:
        raise ValueError(
            f"product noise needs an integer M >= 4 (eq. 13 takes q = M/2 < M - 3/2), got {n_dims}."
        )
    if not float(k) > 1:
        raise ValueError(f"product noise needs k > 1 (Theorem 8), got k = {k}.")


def _log_hyp1f1(a, b, z, chunk=512, max_terms=10_000_000):
    """``log 1F1(a; b; z)`` for ``a, b > 0``, ``z >= 0`` by its series, in log space.

    Terms ``T_j = (a)_j / (b)_j z^j / j!`` are all positive; ``log T_j`` is a
    cumulative sum of ``log(a+i) - log(b+i) + log z - log(i+1)`` (no Gamma
    differences, so no cancellation for huge ``a``). Summation stops once the
    term ratio is <= 1/2 (the tail is then below the last term) and the last
    term is below ``e^-40`` times the partial sum.
    """
    if z == 0:
        return 0.0
    log_z = np.log(z)
    total = 0.0  # log of the partial sum, T_0 = 1
    last = 0.0
    start = 0
    while start < max_terms:
        i = np.arange(start, start + chunk, dtype=float)
        steps = np.log(a + i) - np.log(b + i) + log_z - np.log(i + 1.0)
        logs = last + np.cumsum(steps)
        total = np.logaddexp(total, np.logaddexp.reduce(logs))
        last = logs[-1]
        ratio_last = steps[-1]
        start += chunk
        if ratio_last <= np.log(0.5) and last < total - 40.0:
            return float(total)
    raise ValueError("1F1 series did not converge (epsilon too large for product noise).")


def _log_delta13(n_dims, epsilon, log_k):
    """log of eq. (13) of Liu et al. at ``sigma_M = Delta t / epsilon`` (``lambda = epsilon/t``)."""
    m = float(n_dims)
    lam = epsilon * np.exp(-0.5 * _log_t2(m, log_k))
    z = 0.5 * lam * lam
    log_f1 = _log_hyp1f1(m / 4.0 + 0.5, 0.5, z)
    log_f2 = _log_hyp1f1(m / 4.0 + 1.0, 1.5, z)
    log_f = np.logaddexp(log_f1, np.log(np.sqrt(2.0) * lam) + log_f2)
    return float(-z - log_k - 0.5 * np.log(np.pi) + log_f + 0.5 * np.log(m - 1.0)
                 - 0.5 * np.log(m / 2.0 - 1.5) - 0.5 * np.log(m / 2.0 + 0.75))


def product_noise_delta(n_dims, epsilon, k=1000.0):
    """The delta that Liu et al.'s Theorem 8 *claims* for product noise: eq. (13).

    With ``lambda = Delta_2 / sigma_M = epsilon / t`` (at the minimal
    ``sigma_M`` of Theorem 8 the sensitivity cancels),

        delta = e^(-lambda^2/2) / (k sqrt(pi))
                * (1F1(M/4 + 1/2; 1/2; lambda^2/2)
                   + sqrt(2) lambda 1F1(M/4 + 1; 3/2; lambda^2/2))
                * sqrt(M - 1) / (sqrt(M/2 - 3/2) sqrt(M/2 + 3/4)).

    This is eq. (12) at ``q = M/2``; it needs ``M >= 4``. Computed in log
    space (:func:`_log_hyp1f1`). The value can exceed 1 (vacuous) for large
    epsilon at fixed ``k``. It is the *claimed* delta: the true delta of the
    mechanism is far larger (module docstring).
    """
    _check_m_k(n_dims, k)
    epsilon = float(epsilon)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    return float(np.exp(_log_delta13(n_dims, epsilon, np.log(float(k)))))


def product_noise_calibration(n_dims, epsilon, delta, l2_sensitivity=1.0, k=1000.0, alpha=2.0,
                              max_iter=100_000):
    """Algorithm 1 of Liu et al.: grow ``k`` until eq. (13) gives ``delta <= delta*``.

    Starting from ``k``, computes ``sigma_M`` and delta by Theorem 8 and, while
    ``delta > delta*``, sets ``k <- alpha k`` (``k`` is carried in log space).

    Parameters
    ----------
    n_dims : int
        Dimension ``M >= 4``.
    epsilon, delta : float
        Target ``(epsilon*, delta*)``.
    l2_sensitivity : float, default=1.0
    k : float, default=1000.0
        Initial tuning constant (> 1). The paper leaves it free; 1000 is the
        value of the authors' code (``generate_noise_and_delta(..., k=1000)``)
        and of all their convex experiments.
    alpha : float, default=2.0
        Step factor (> 1). The paper requires only ``alpha > 1`` and gives no
        value; 2 is our choice (the result is within a factor ``alpha`` of the
        smallest admissible ``k``, which changes ``sigma_M`` by
        ``alpha^(2/M)``).

    Returns
    -------
    sigma : float
        ``sigma_M = Delta_2 t(M, k) / epsilon``.
    k : float
        Final tuning constant (``inf`` if it overflows float; see ``log_k``).
    log_k : float
    claimed_delta : float
        Eq. (13) at the final ``k`` (<= ``delta``).
    """
    _check_m_k(n_dims, k)
    epsilon, delta = float(epsilon), float(delta)
    if not epsilon > 0 or not 0 < delta < 1:
        raise ValueError("product noise needs epsilon > 0 and 0 < delta < 1.")
    if not float(alpha) > 1:
        raise ValueError(f"Algorithm 1 needs a step factor alpha > 1, got {alpha}.")
    k0, alpha = float(k), float(alpha)
    log_target = np.log(delta)
    for j in range(max_iter):  # k = k0 alpha^j
        log_k = np.log(k0) + j * np.log(alpha)
        log_d = _log_delta13(n_dims, epsilon, log_k)
        if log_d <= log_target:
            break
    else:
        raise ValueError("Algorithm 1 did not reach the target delta; increase alpha.")
    sigma = float(float(l2_sensitivity) * np.exp(0.5 * _log_t2(n_dims, log_k)) / epsilon)
    with np.errstate(over="ignore"):
        k_final = float(k0 * alpha**j) if log_k < 700 else float("inf")
    return sigma, k_final, float(log_k), float(np.exp(log_d))


class ProductNoise(Mechanism):
    """Product noise ``sigma_M R h`` of Liu et al. (SIGMOD 2026). NOT DP.

    Noise (eq. 2): ``n = sigma_M R h`` with ``R = |N(0, 1)|`` (chi with one
    degree of freedom) and ``h = g / ||g||``, ``g ~ N(0, I_M)``, drawn fresh
    for every release; ``E ||n||^2 = sigma_M^2``.

    Calibration (Theorem 8, with equality; Algorithm 1): for ``M >= 4``
    released coordinates and replace-one l2 sensitivity ``Delta_2``,

        sigma_M = Delta_2 t / epsilon,
        t^2     = 2 k^(4/M) (M/4 + 3/2)^(1 + 4/M) / e^(1 + 2/M),

    and the delta is an *output*, eq. (13) (:func:`product_noise_delta`), a
    function of ``(M, epsilon, k)`` only. Algorithm 1 multiplies ``k`` by
    ``alpha`` until eq. (13) is at most the requested delta
    (:func:`product_noise_calibration`; defaults ``k = 1000`` from the
    authors' code, ``alpha = 2`` ours, the paper gives none). Derivation in the
    paper: Proposition 3 bounds the privacy loss by ``W U Delta/sigma_M``
    with ``W = R + Delta/sigma_M`` and ``U = 1/sin(theta)``; a moment
    (Markov) bound on ``W U`` at order ``q = M/2`` gives eq. (13).

    ``M >= 4`` is required (``q = M/2 < M - 3/2``; eq. 13 divides by
    ``sqrt(M/2 - 3/2)``); Theorem 8's "M > 2" is not enough. Any
    ``epsilon > 0`` is accepted, as in the paper.

    Why it is not verified: Proposition 3 compares radial densities in polar
    coordinates about two different centres and drops the Jacobian
    ``||u||^(M-1)``; the true density (D) of the module docstring is
    singular at 0. Direct simulation at Theorem 8's ``sigma_M`` finds a true
    delta of 0.2 (epsilon = 0.1) to 0.74 (epsilon = 1) for M from 100 to
    47236 (our review of Liu et al. 2026, section 1.6).

    Parameters
    ----------
    k : float, default=1000.0
        Initial tuning constant of Algorithm 1 (> 1).
    alpha : float, default=2.0
        Step factor of Algorithm 1 (> 1).

    References
    ----------
    S. Liu, T. Ji, Z. Fang, L. Wei and P. Li. Privacy Loss of Noise
    Perturbation via Concentration Analysis of A Product Measure. SIGMOD 2026
    (arXiv:2512.06253). Code: github.com/issleepgroup/Product_Noise-ERM.

    Examples
    --------
    >>> from skdp.mechanisms.spherical import product_noise_delta
    >>> f"{product_noise_delta(10**6, 0.1, k=1000):.4e}"  # Figure 9 of the paper
    '1.1441e-06'
    """

    name = "product_noise"
    verified = False
    pure = False
    failure = (
        "Proposition 3 of Liu et al. (2026) drops the polar-coordinate Jacobian, so the "
        "released noise has a density singular at 0; at Theorem 8's calibration the true delta "
        "is about 0.2 (epsilon=0.1) to 0.74 (epsilon=1) (Monte Carlo, our review of Liu et al. "
        "2026, section 1.6; at M=50, epsilon=1, claimed delta 9e-6 from Algorithm 1: true delta 0.53, "
        "certified >= 0.51 by skdp.audit at 95% confidence), not the claimed delta."
    )

    def __init__(self, k=1000.0, alpha=2.0):
        self.k = k
        self.alpha = alpha

    def _check_applicable(self, query, epsilon, delta):
        if query.l2_bound is None:
            return "it needs an l2 sensitivity (or a sensitivity profile)"
        if query.n_released < 4:
            return f"eq. (13) needs M >= 4 released coordinates, got M = {query.n_released}"
        return None

    def _calibrate(self, query, epsilon, delta):
        m = query.n_released
        l2 = query.l2_bound
        sigma, k, log_k, claimed = product_noise_calibration(
            m, epsilon, delta, l2, k=self.k, alpha=self.alpha
        )
        mse = sigma**2 / m * float(np.sum(query.squared_error_weights()))
        params = {
            "sigma": sigma,
            "k": k,
            "log_k": log_k,
            "alpha": float(self.alpha),
            "claimed_delta": claimed,
            "n_dims": m,
            "l2_sensitivity": l2,
        }
        return params, mse

    def _sample(self, spec, rng):
        m = spec.params["n_dims"]
        h = _uniform_direction(m, rng)
        r = abs(rng.standard_normal())
        return spec.query.expand(spec.params["sigma"] * r * h)

    def _sample_batch(self, spec, rng, n):
        """``n`` independent draws (same law as :meth:`_sample`), shape (n, size)."""
        h = _uniform_directions(n, spec.params["n_dims"], rng)
        r = np.abs(rng.standard_normal(n))
        return _expand_rows(spec.query, spec.params["sigma"] * r[:, None] * h)

    def _log_density(self, spec, noise):
        """True log density (D) of the released noise coordinates (used by audits)."""
        return spherical_noise_log_density(_released_rows(spec.query, noise),
                                           spec.params["sigma"])


register(R1SMG())
register(ProductNoise())
