"""Noise scales of the three ERM routes against independent closed forms and accountants."""

import warnings

import numpy as np
import pytest
from scipy import optimize, stats
from scipy.special import expit

from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import PrivateHuberSVM, PrivateLogisticRegression
from skdp.linear_model._erm import HuberLoss, LogisticLoss, amp_noise_delta
from skdp.mechanisms import available_mechanisms
from skdp.mechanisms._grid import GRID_UTILITY_LOSS

#: calibrations on the grid move by at most the documented loss (skdp.mechanisms._grid)
GRID_RTOL = 2 * GRID_UTILITY_LOSS
S_DEFAULT = 0.5  # the documented default intercept_scaling (module docstring of _erm)

needs_gamma_norm = pytest.mark.skipif(
    "gamma_norm" not in available_mechanisms(), reason="gamma_norm mechanism not registered"
)


def _bw_delta(mu, eps):
    """Balle & Wang (2018) Thm 8, written out independently of skdp."""
    return stats.norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)


def _mu0(eps, delta):
    return optimize.brentq(lambda m: _bw_delta(m, eps) - delta, 1e-6, 100, xtol=1e-14)


def _data(n=300, d=4, k=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1, keepdims=True))
    y = rng.integers(0, k, size=n)
    return X, y


# ----------------------------------------------------------------------
# losses
# ----------------------------------------------------------------------
@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.1), HuberLoss(0.5)])
def test_loss_derivatives_and_constants(loss):
    z = np.linspace(-6, 6, 20001)
    val, der = loss.value_deriv(z)
    num = np.gradient(val, z)
    assert np.max(np.abs(num[1:-1] - der[1:-1])) < 1e-3
    assert np.max(np.abs(der)) <= 1.0  # Lipschitz constant 1 in z
    d2 = np.gradient(der, z)
    assert np.min(d2) > -1e-6 and np.max(d2) <= loss.curvature * (1 + 1e-3)
    assert np.max(d2) >= 0.95 * loss.curvature  # the bound c is attained


def test_logistic_loss_matches_reference():
    z = np.linspace(-40, 40, 101)
    val, der = LogisticLoss().value_deriv(z)
    np.testing.assert_allclose(val, np.logaddexp(0, -z), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(der, -expit(-z), rtol=1e-12)


def test_huber_loss_formula():
    h = 0.1
    z = np.array([-1.0, 0.85, 0.9, 0.95, 1.05, 1.1, 2.0])
    val, _ = HuberLoss(h).value_deriv(z)
    m = 1 - z
    ref = np.where(m > h, m, np.where(m < -h, 0.0, m**2 / (4 * h) + m / 2 + h / 4))
    np.testing.assert_allclose(val, ref)


# ----------------------------------------------------------------------
# output perturbation
# ----------------------------------------------------------------------
@pytest.mark.parametrize("k", [2, 3])
def test_output_perturbation_sigma_closed_form(k):
    X, y = _data(k=k)
    n = len(X)
    C, B, eps, delta, tol = 0.05, 1.0, 0.7, 1e-5, 1e-6
    clf = PrivateLogisticRegression(epsilon=eps, delta=delta, perturbation="output",
                                    mechanism="analytic_gaussian", data_norm=B, C=C, tol=tol,
                                    random_state=0).fit(X, y)
    K = 1 if k == 2 else k
    R = np.hypot(B, S_DEFAULT * B)  # intercept column = intercept_scaling * data_norm
    lam = 1 / (n * C)
    gamma = tol * R / n
    sens = 2 * np.sqrt(K) * R * C + 2 * gamma / lam
    assert clf.noise_spec_.query.shape == (K, X.shape[1] + 1)
    # on the grid: calibrated for the rounded sensitivity, within the documented loss
    np.testing.assert_allclose(clf.noise_spec_.params["sigma"], sens / _mu0(eps, delta), rtol=GRID_RTOL)
    assert clf.noise_spec_.params["sigma"] >= sens / _mu0(eps, delta)
    assert clf.coef_.shape == (K, X.shape[1]) and clf.intercept_.shape == (K,)


@needs_gamma_norm
def test_output_perturbation_pure_scale():
    X, y = _data()
    n, C, eps = len(X), 0.1, 0.5
    clf = PrivateHuberSVM(epsilon=eps, delta=0.0, perturbation="output", data_norm=2.0, C=C,
                          fit_intercept=False, random_state=0).fit(X, y)
    R, lam = 2.0, 1 / (n * C)
    sens = 2 * R * C + 2 * (1e-6 * R / n) / lam
    # pure output perturbation under "auto": Laplace on the grid (gamma_norm is not
    # floating-point safe); l1 sensitivity sqrt(K p) times the l2 one
    k = clf.noise_spec_.query.n_released
    assert clf.noise_spec_.mechanism == "laplace"
    np.testing.assert_allclose(clf.noise_spec_.params["scale"], np.sqrt(k) * sens / eps, rtol=GRID_RTOL)


def test_output_sensitivity_bound_on_neighbours():
    """||W(D) - W(D')|| <= 2 R C for many random replace-one pairs (no noise involved)."""
    from skdp.linear_model._solver import minimize

    rng = np.random.default_rng(1)
    n, d, C = 30, 3, 0.5
    lam = 1 / (n * C)
    worst = 0.0
    for loss in (LogisticLoss(), HuberLoss(0.1)):
        for _ in range(40):
            U = rng.normal(size=(n, d))
            U /= np.linalg.norm(U, axis=1, keepdims=True)
            Y = rng.choice([-1.0, 1.0], size=(n, 1))
            U2, Y2 = U.copy(), Y.copy()
            U2[0] = -U[0]
            Y2[0] = -Y[0] if rng.random() < 0.5 else Y[0]
            W1 = minimize(U, Y, loss, lam, np.zeros((1, d)), 1e-12, 1000, 1.0)
            W2 = minimize(U2, Y2, loss, lam, np.zeros((1, d)), 1e-12, 1000, 1.0)
            worst = max(worst, np.linalg.norm(W1 - W2) / (2 * C))
    assert 0.3 < worst <= 1.0


def test_output_perturbation_audit():
    """Audit the released weights on a tight worst-case pair (Huber, linear regime)."""
    audit = pytest.importorskip("skdp.audit")
    n, C, eps, delta = 20, 0.01, 1.0, 0.05
    ang = np.linspace(0, 2 * np.pi, n, endpoint=False)
    X = np.column_stack([np.cos(ang), np.sin(ang)])
    y = np.arange(n) % 2
    y2 = y.copy()
    y2[0] = 1 - y[0]  # replace record 0 by (x_0, other label)
    kw = dict(epsilon=eps, delta=delta, perturbation="output", mechanism="analytic_gaussian",
              data_norm=1.0, C=C, fit_intercept=False)
    clf = PrivateHuberSVM(random_state=3, **kw).fit(X, y)
    # Huber with all margins < 1 - h: W* = C sum_i y_i x_i exactly (closed form).
    s = np.where(y == 1, 1.0, -1.0)
    s2 = np.where(y2 == 1, 1.0, -1.0)
    W1, W2 = (C * s @ X)[None, :], (C * s2 @ X)[None, :]
    assert np.isclose(np.linalg.norm(W1 - W2), 2 * C)  # the bound 2 R C is attained
    noise = clf.noise_spec_.sample(np.random.default_rng(3))
    np.testing.assert_allclose(clf.coef_ - noise, W1, atol=1e-9)  # released = W* + noise
    res = audit.audit_spec(clf.noise_spec_, W1, W2, n_samples=100_000, random_state=0)
    assert res.passed, res
    # power: the same noise on a pair 2.5x further apart must be caught
    res_bad = audit.audit_spec(clf.noise_spec_, W1, W1 + 2.5 * (W2 - W1), n_samples=100_000,
                               random_state=0)
    assert not res_bad.passed


# ----------------------------------------------------------------------
# objective perturbation
# ----------------------------------------------------------------------
def _rayleigh_amp_delta(a, eps):
    """Closed form of E[(1 - e^{eps - a rho - a^2/2})_+], rho ~ Rayleigh (chi_2)."""
    t = max(0.0, (eps - a * a / 2) / a)
    tail = np.exp(-t * t / 2)
    # int_t^inf e^{-a r} r e^{-r^2/2} dr = e^{a^2/2} [e^{-(t+a)^2/2} - a sqrt(2 pi) Phi(-(t+a))]
    inner = np.exp(a * a / 2) * (np.exp(-(t + a) ** 2 / 2) - a * np.sqrt(2 * np.pi) * stats.norm.sf(t + a))
    return tail - np.exp(eps - a * a / 2) * inner


@pytest.mark.parametrize("a,eps", [(0.3, 1.0), (0.1, 0.5), (1.0, 2.0), (0.05, 0.2)])
def test_amp_delta_closed_form_chi2(a, eps):
    np.testing.assert_allclose(amp_noise_delta(a, eps, 2), _rayleigh_amp_delta(a, eps), rtol=1e-6)


def test_amp_delta_monte_carlo_chi6():
    rng = np.random.default_rng(0)
    rho = np.sqrt(rng.chisquare(6, size=2_000_000))
    a, eps = 0.8, 1.0
    mc = np.mean(np.maximum(0, 1 - np.exp(eps - a * rho - a * a / 2)))
    np.testing.assert_allclose(amp_noise_delta(a, eps, 6), mc, rtol=2e-2)


def _strategy1(e):
    return max(min(0.88671 + 0.0186607 / e**0.372906, 0.99), 1 - 1 / e + 0.001)


@pytest.mark.parametrize("est", ["logistic", "huber"])
def test_amp_constants(est):
    X, y = _data(n=400)
    n, C, eps, delta, B = len(X), 1.0, 1.0, 1e-5, 1.0
    Cls = PrivateLogisticRegression if est == "logistic" else PrivateHuberSVM
    clf = Cls(epsilon=eps, delta=delta, perturbation="objective", data_norm=B, C=C,
              random_state=0).fit(X, y)
    info = clf.privacy_info_
    R = np.hypot(B, S_DEFAULT * B)
    c = 0.25 if est == "logistic" else 1 / (2 * 0.1)
    beta = c * R**2
    eps1, eps2 = 0.99 * eps, 0.01 * eps
    target_j = (1 - _strategy1(eps1)) * eps1
    lam = max(1 / (n * C), beta / (n * (np.exp(target_j) - 1)))
    eps_j = np.log(1 + beta / (n * lam))
    eps3 = eps1 - eps_j
    np.testing.assert_allclose(info["regularization"], lam, rtol=1e-12)
    np.testing.assert_allclose(info["eps_noise"], eps3, rtol=1e-12)
    from skdp.linear_model._erm import amp_multiclass_delta

    a = (2 * R / n) / info["sigma"]
    # the stage-1 sigma meets delta_1 = 0.99 delta with the block bound (K = 1: never above
    # the chi_2 one, whose Rayleigh closed form would need more noise), and is tight
    assert amp_multiclass_delta(a / 2, eps3, 1) <= 0.99 * delta
    assert amp_multiclass_delta(a / 2 * 1.001, eps3, 1) > 0.99 * delta
    assert _rayleigh_amp_delta(a, eps3) > 0.99 * delta  # the chi_2 bound alone would not do
    assert _rayleigh_amp_delta(a / 1.15, eps3) <= 0.99 * delta  # ... and is within 15%
    spec1, spec2 = clf.noise_spec_
    # b is drawn with the grid spec's scale: at least the AMP scale, within the grid loss
    np.testing.assert_allclose(spec1.params["sigma"], info["sigma"], rtol=GRID_RTOL)
    assert spec1.params["sigma"] >= info["sigma"]
    gamma = 1e-6 * R / n
    # b lies on a power-of-two grid g (exact discrete Gaussian); its rounding shift
    # g sqrt(k) / 2 (at most 1e-3 gamma) joins the solver tolerance (module docstring of _erm)
    g, shift = info["noise_grid"], info["noise_grid_shift"]
    k = spec1.query.n_released
    assert g == 2.0 ** np.round(np.log2(g)) and shift == pytest.approx(g * np.sqrt(k) / 2, rel=1e-15)
    assert 0 < shift <= 1e-3 * gamma and shift > 0.25e-3 * gamma
    np.testing.assert_allclose(spec2.params["sigma"],
                               (2 * (gamma + shift) / lam) / _mu0(eps2, 0.01 * delta), rtol=GRID_RTOL)


def test_chaudhuri_pure_objective_scale(monkeypatch):
    import math

    import skdp.linear_model._erm as erm

    drawn = []
    real = erm._draw_pure_objective_noise

    def spy(t, grid, shape, rng):
        drawn.append((t, grid, shape))
        return real(t, grid, shape, rng)

    monkeypatch.setattr(erm, "_draw_pure_objective_noise", spy)
    X, y = _data(n=500, k=3)
    n, C, eps, B = len(X), 0.2, 2.0, 1.5
    clf = PrivateLogisticRegression(epsilon=eps, delta=0.0, perturbation="objective",
                                    data_norm=B, C=C, fit_intercept=False, classes=[0, 1, 2],
                                    random_state=0).fit(X, y)
    K, p = 3, X.shape[1]
    k, u = K * p, 2.0**-53
    R = B * (1 + (p + 10) * u / (1 - (p + 10) * u))  # the computed rows' bound
    beta = 0.25 * R**2
    eps1 = 0.99 * eps
    lam = max(1 / (n * C), beta / (n * (np.exp((1 - _strategy1(eps1)) * eps1 / K) - 1)))
    eps3 = eps1 - K * np.log(1 + beta / (n * lam))
    gamma = 1e-6 * B / n
    spec1, spec2 = clf.noise_spec_
    info = clf.privacy_info_
    # b = g Y, Y exact discrete Laplace(t) on a power-of-two grid g whose rounding shift
    # g sqrt(k) / 2 is at most 1e-3 gamma; t = ceil((sqrt(k) Delta / g + k) / eps_3)
    g, shift = info["noise_grid"], info["noise_grid_shift"]
    assert g == 2.0 ** np.round(np.log2(g)) and shift == g * np.sqrt(k) / 2
    assert 0.25e-3 * gamma < shift <= 1e-3 * gamma
    l1 = np.sqrt(k) * 2 * np.sqrt(K) * R / n
    t = spec1.params["t"]
    assert t == math.ceil((l1 / g + k) / eps3)
    assert spec1.mechanism == "laplace" and spec1.delta == 0
    assert drawn == [(t, g, (K, p))]  # one draw, from the exact sampler
    # the pmf ratio bound of the piecewise-constant density (module docstring) is eps_3, tight
    assert eps3 * (1 - 1e-6) < (l1 / g + k) / t <= eps3
    # the released solver-error noise: Laplace on the grid (l1 = sqrt(K p) l2), for the
    # solver tolerance plus the rounding shift of b
    assert spec2.mechanism == "laplace"
    np.testing.assert_allclose(spec2.params["scale"],
                               np.sqrt(k) * 2 * (gamma + shift) / lam / (0.01 * eps),
                               rtol=GRID_RTOL)


def test_pure_objective_noise_ratio_by_numeric_maximisation():
    # the density of b_c = g (Y + U) is P(round(b / g)) / g^k: its log-ratio between b and
    # b + v with ||v||_2 <= Delta is (||round((b + v)/g)||_1 - ||round(b/g)||_1) / t; search it
    import math

    from skdp.linear_model._erm import _pure_objective_noise

    rng = np.random.default_rng(0)
    K, p, eps3 = 1, 3, 0.7
    k = K * p
    sens1 = 1e-3
    spec, g = _pure_objective_noise(K, p, sens1, eps3, gamma=1e-9)
    t = spec.params["t"]
    worst = -np.inf
    direction = np.ones(k) / np.sqrt(k)  # the l1-longest unit direction
    for _ in range(2000):
        z = rng.integers(-50, 50, size=k)
        b = g * (z + 0.5 - 1e-9 * rng.random(k))  # just below a cell boundary (rounds to z)
        for v in (sens1 * direction, sens1 * rng.normal(size=k) / np.sqrt(k)):
            v = v if np.linalg.norm(v) <= sens1 else v * sens1 / np.linalg.norm(v)
            z0, z1 = np.round(b / g), np.round((b + v) / g)
            for a_, b_ in ((z0, z1), (z1, z0)):
                worst = max(worst, (np.abs(a_).sum() - np.abs(b_).sum()) / t)
    assert worst <= eps3
    assert worst > 0.99 * eps3  # the bound is attained up to the rounding of t
    assert math.ceil((np.sqrt(k) * sens1 / g + k) / eps3) == t


def test_amp_jacobian_bound_numerically():
    """det H_D / det H_D' <= 1 + c R^2/(n lambda) at random points (determinant lemma)."""
    rng = np.random.default_rng(2)
    n, d, lam = 15, 3, 0.05
    loss = LogisticLoss()
    worst = 0.0
    for _ in range(300):
        U = rng.normal(size=(n, d))
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        U2 = U.copy()
        U2[0] = rng.normal(size=d)
        U2[0] /= np.linalg.norm(U2[0])
        w = rng.normal(size=d) * 3
        H1 = (U.T * loss.second(U @ w)) @ U / n + lam * np.eye(d)
        H2 = (U2.T * loss.second(U2 @ w)) @ U2 / n + lam * np.eye(d)
        worst = max(worst, np.linalg.slogdet(H1)[1] - np.linalg.slogdet(H2)[1])
    assert worst <= np.log1p(0.25 / (n * lam)) + 1e-12


# ----------------------------------------------------------------------
# gradient perturbation
# ----------------------------------------------------------------------
def test_dp_gd_full_batch_sigma():
    X, y = _data(n=200)
    T, eps, delta, B = 50, 1.0, 1e-5, 1.0
    clf = PrivateLogisticRegression(epsilon=eps, delta=delta, perturbation="gradient",
                                    max_iter=T, data_norm=B, C=0.5, random_state=0).fit(X, y)
    clip = np.hypot(B, S_DEFAULT * B)
    # T Gaussian steps with sensitivity 2 clip: mu = sqrt(T) 2 clip / sigma must equal mu0(eps, delta)
    np.testing.assert_allclose(clf.noise_spec_.params["sigma"],
                               np.sqrt(T) * 2 * clip / _mu0(eps, delta), rtol=GRID_RTOL)


def _replace_pld_epsilon(dpa, z, q, T, delta):
    """dp_accounting's replace-one PLD at its own default discretisation."""
    acc = dpa.pld.PLDAccountant(dpa.NeighboringRelation.REPLACE_ONE)
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), T))
    return acc.get_epsilon(delta)


def test_dp_sgd_noise_multiplier_against_accountant():
    dpa = pytest.importorskip("dp_accounting")
    X, y = _data(n=1000)
    T, bs, eps, delta = 40, 100, 2.0, 1e-5
    clf = PrivateLogisticRegression(epsilon=eps, delta=delta, perturbation="gradient", max_iter=T,
                                    batch_size=bs, data_norm=1.0, C=0.5, random_state=0).fit(X, y)
    assert clf.privacy_info_["accounting"] == "pld_poisson_replace_one"
    z = clf.privacy_info_["noise_multiplier"]
    clip = np.hypot(1.0, S_DEFAULT)
    # per-step rounded per-record radius clip + g sqrt(k) (skdp.mechanisms._grid)
    np.testing.assert_allclose(clf.noise_spec_.params["sigma"], z * clip, rtol=GRID_RTOL)
    assert clf.noise_spec_.params["sigma"] >= z * clip
    # the coins' exact rate (integer comparisons with 2^53 outcomes) is what is accounted
    q = clf.privacy_info_["sampling_rate"]
    import math

    assert q == math.ceil(bs / 1000 * 2.0**53) / 2.0**53 and 0 <= q - bs / 1000 < 2.0**-52
    # replace-one directly: sensitivity = the per-record radius (the pair N(-C) / N(+C))
    assert _replace_pld_epsilon(dpa, z, q, T, delta) <= eps
    assert _replace_pld_epsilon(dpa, z * 0.99, q, T, delta) > eps
    # and tighter than the former group-privacy conversion of the add/remove RDP bound
    acc = dpa.rdp.RdpAccountant()
    acc.compose(dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(bs / 1000, dpa.GaussianDpEvent(z)), T))
    assert acc.get_epsilon(delta / (1 + np.exp(eps / 2))) > eps / 2


def test_poisson_coins_flip_at_the_accounted_rate():
    # one uniform integer in [0, 2^53) per record, kept below k = q 2^53: rate exactly q
    from scipy import stats as st

    from skdp.linear_model._erm import _coin_rate, _poisson_coins

    rng = np.random.default_rng(5)
    for q0 in (0.3, 1 / 3, 1e-3):
        q = _coin_rate(q0)
        assert q >= q0 and q - q0 < 2.0**-52 and (q * 2.0**53).is_integer()
        n = 2_000_000
        kept = _poisson_coins(n, q, rng).size
        assert st.binomtest(kept, n, q).pvalue > 1e-4


def test_accountant_noise_multiplier_is_tight_and_safe():
    dpa = pytest.importorskip("dp_accounting")
    from skdp._accounting import poisson_gaussian_epsilon, poisson_gaussian_noise_multiplier

    for eps, delta, q, T in [(1.0, 1e-5, 0.01, 300), (0.3, 1e-6, 0.05, 50), (4.0, 1e-5, 0.2, 20)]:
        z = poisson_gaussian_noise_multiplier(eps, delta, q, T)
        assert _replace_pld_epsilon(dpa, z, q, T, delta) <= eps
        assert _replace_pld_epsilon(dpa, z * 0.99, q, T, delta) > eps
        np.testing.assert_allclose(poisson_gaussian_epsilon(z, q, T, delta),
                                   _replace_pld_epsilon(dpa, z, q, T, delta), rtol=1e-12)


def _mixture_hockey_stick(z, q, eps):
    """Exact delta(eps) of (1-q)N(0,z^2) + qN(-1,z^2) vs (1-q)N(0,z^2) + qN(1,z^2).

    Written out independently: the log-likelihood ratio is monotone in x, so
    delta = P(x < x*) - e^eps Q(x < x*) at the root x* of the ratio.
    """
    def logratio(x):
        a = np.logaddexp(np.log1p(-q) - x * x / (2 * z * z), np.log(q) - (x + 1) ** 2 / (2 * z * z))
        b = np.logaddexp(np.log1p(-q) - x * x / (2 * z * z), np.log(q) - (x - 1) ** 2 / (2 * z * z))
        return a - b

    xs = optimize.brentq(lambda x: logratio(x) - eps, -50 * z - 50, 50 * z + 50, xtol=1e-14)
    cdf = stats.norm.cdf
    P = (1 - q) * cdf(xs / z) + q * cdf((xs + 1) / z)
    Q = (1 - q) * cdf(xs / z) + q * cdf((xs - 1) / z)
    return P - np.exp(eps) * Q


def test_one_step_noise_multiplier_against_exact_replace_one_pair():
    pytest.importorskip("dp_accounting")
    from skdp._accounting import poisson_gaussian_noise_multiplier

    for eps, delta, q in [(1.0, 1e-5, 0.01), (0.5, 1e-5, 0.3), (2.0, 1e-6, 1.0)]:
        z = poisson_gaussian_noise_multiplier(eps, delta, q, 1)
        if q == 1.0:  # a plain Gaussian with l2 sensitivity 2 (Balle & Wang)
            assert _bw_delta(2.0 / z, eps) <= delta
            assert _bw_delta(2.0 / (0.99 * z), eps) > delta
            continue
        assert _mixture_hockey_stick(z, q, eps) <= delta
        assert _mixture_hockey_stick(0.99 * z, q, eps) > delta


def _planar_hockey_stick(a, b, q, eps, z):
    """delta(eps) of (1-q)N(0, z^2 I) + qN(a, z^2 I) vs the same with b (2-D quadrature)."""
    x = np.linspace(-9 * z - 1.5, 9 * z + 1.5, 1601)
    X1, X2 = np.meshgrid(x, x, indexing="ij")
    pdf = lambda c: np.exp(-((X1 - c[0]) ** 2 + (X2 - c[1]) ** 2) / (2 * z * z)) / (2 * np.pi * z * z)
    P = (1 - q) * pdf((0, 0)) + q * pdf(a)
    Q = (1 - q) * pdf((0, 0)) + q * pdf(b)
    dx = x[1] - x[0]
    return float(np.maximum(P - np.exp(eps) * Q, 0).sum() * dx * dx)


@pytest.mark.parametrize("z, q, eps", [(0.6, 0.1, 1.0), (1.0, 0.3, 0.5)])
def test_antipodal_pair_is_worst_over_the_domain(z, q, eps):
    """The replace-one pair the accountant uses dominates every planar configuration.

    Maximise delta(eps) over gradients a, b in the unit ball (equal and unequal
    norms, every angle): never above the antipodal pair's exact value; a pair
    with radius 0.9 (under-noised by 10%) is exceeded (power of the check).
    """
    exact = _mixture_hockey_stick(z, q, eps)
    np.testing.assert_allclose(_planar_hockey_stick((1, 0), (-1, 0), q, eps, z), exact, rtol=1e-3)
    worst = 0.0
    for ang in np.linspace(0.0, np.pi, 7):
        for rb in (0.5, 1.0):
            worst = max(worst, _planar_hockey_stick((1, 0), (rb * np.cos(ang), rb * np.sin(ang)),
                                                    q, eps, z))
    assert worst <= exact * (1 + 1e-3)
    assert worst > _mixture_hockey_stick(z / 0.9, q, eps)


def test_subsampling_needs_gaussian():
    X, y = _data(n=200)
    with pytest.raises(ValueError, match="Poisson"):
        PrivateLogisticRegression(perturbation="gradient", delta=1e-5, mechanism="gaussian",
                                  batch_size=20, data_norm=1.0, max_iter=5).fit(X, y)


def test_product_noise_passes_through_and_warns():
    if "product_noise" not in available_mechanisms():
        pytest.skip("product_noise not registered")
    from skdp.exceptions import PrivacyGuaranteeWarning

    X, y = _data(n=200)
    for pert in ("output", "objective", "gradient"):
        with pytest.warns(PrivacyGuaranteeWarning):
            clf = PrivateLogisticRegression(perturbation=pert, mechanism="product_noise",
                                            data_norm=1.0, C=0.1, max_iter=10,
                                            random_state=0).fit(X, y)
        specs = clf.noise_spec_ if isinstance(clf.noise_spec_, tuple) else (clf.noise_spec_,)
        assert all(s.mechanism == "product_noise" and not s.verified for s in specs)


@pytest.mark.parametrize("mechanism", ["product_noise", "gamma_norm"])
@pytest.mark.parametrize("pert", ["output", "objective", "gradient"])
def test_unverified_mechanism_warns_once_per_fit(mechanism, pert):
    """One warning per fit, also where a route calibrates the mechanism for two releases
    (objective perturbation: its linear term and the solver-error release)."""
    from skdp.exceptions import PrivacyGuaranteeWarning

    if mechanism not in available_mechanisms():
        pytest.skip(f"{mechanism} not registered")
    X, y = _data(n=200)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        PrivateLogisticRegression(perturbation=pert, mechanism=mechanism, data_norm=1.0,
                                  classes=[0, 1], delta=1e-5, C=0.1, max_iter=10,
                                  random_state=0).fit(X, y)
    hits = [w for w in rec if issubclass(w.category, PrivacyGuaranteeWarning)
            and "NOT verified" in str(w.message)]
    assert len(hits) == 1


def test_infers_data_norm_with_warning_and_clips():
    X, y = _data(n=200)
    X = X * 3
    with pytest.warns(PrivacyLeakWarning):
        clf = PrivateLogisticRegression(C=0.1, random_state=0).fit(X, y)
    np.testing.assert_allclose(clf.data_norm_, np.linalg.norm(X, axis=1).max())
    assert clf.data_norm is None
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        clf = PrivateLogisticRegression(C=0.1, data_norm=1.0, classes=[0, 1], random_state=0).fit(X, y)
    assert clf.data_norm_ == 1.0


# ----------------------------------------------------------------------
# C="auto": a public rule (skdp.linear_model._erm, "Choosing C")
# ----------------------------------------------------------------------
def test_explicit_C_is_used_as_given():
    X, y = _data(n=300)
    for pert in ("output", "objective", "gradient"):
        clf = PrivateLogisticRegression(perturbation=pert, C=0.037, data_norm=1.0, classes=[0, 1],
                                        max_iter=20, random_state=0).fit(X, y)
        assert clf.C == 0.037 and clf.C_ == pytest.approx(0.037, rel=1e-12)
        if pert != "objective":
            assert clf.privacy_info_["regularization"] == pytest.approx(1 / (300 * 0.037), rel=1e-12)
    # objective perturbation raises the regularisation of a large C to what its Jacobian term
    # needs: C_ reports the value used, and larger C give the same model
    fits = [PrivateLogisticRegression(C=C, data_norm=1.0, classes=[0, 1], max_iter=20,
                                      random_state=0).fit(X, y) for C in (100.0, 1e4)]
    for clf in fits:
        info = clf.privacy_info_
        assert info["extra_regularization"] > 0
        assert clf.C_ == pytest.approx(1 / (300 * info["regularization"]), rel=1e-12)
        assert clf.C_ < clf.C
    assert fits[0].C_ == fits[1].C_
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)


def test_auto_C_depends_on_public_inputs_only():
    X, y = _data(n=400, d=4, k=3, seed=0)
    X2, y2 = _data(n=400, d=4, k=3, seed=5)
    X2 = X2 * 0.3
    for cls in (PrivateLogisticRegression, PrivateHuberSVM):
        for pert in ("output", "objective", "gradient"):
            kw = dict(perturbation=pert, data_norm=1.0, classes=[0, 1, 2], max_iter=20)
            a = cls(random_state=0, **kw).fit(X, y)
            b = cls(random_state=1, **kw).fit(X2, y2)
            assert a.C == "auto" and a.C_ == b.C_
    assert PrivateLogisticRegression(perturbation="gradient", data_norm=1.0, classes=[0, 1, 2],
                                     max_iter=5, random_state=0).fit(X, y).C_ == 1.0


def test_auto_C_output_minimises_its_excess_risk_bound():
    """Closed form of the rule vs a numeric minimisation of the bound it states.

    Bound: lambda r^2 / 2 + c R^2 E||Z||^2 / 2 with Z the noise the core
    calibrates for the output sensitivity 2 sqrt(K) R / (n lambda) (+ solver term).
    """
    from skdp.mechanisms import Query, calibrate

    n, d, eps, delta, B = 500, 6, 0.7, 1e-5, 1.0
    X, y = _data(n=n, d=d, k=3)
    for cls, c in ((PrivateLogisticRegression, 0.25), (PrivateHuberSVM, 1 / (2 * 0.1))):
        clf = cls(perturbation="output", epsilon=eps, delta=delta, data_norm=B,
                  classes=[0, 1, 2], random_state=0).fit(X, y)
        K, p, R, tol = 3, d + 1, np.hypot(B, S_DEFAULT * B), 1e-6
        r = 5.0 / R

        def bound(log_lam):
            lam = np.exp(log_lam)
            sens = 2 * np.sqrt(K) * R / (n * lam) + 2 * tol * R / (n * lam)
            ez2 = calibrate(Query(shape=(K, p), l2_sensitivity=sens), eps, delta).expected_squared_error
            return lam * r * r / 2 + c * R**2 * ez2 / 2

        res = optimize.minimize_scalar(bound, bounds=(np.log(1e-6), np.log(1e2)), method="bounded",
                                       options={"xatol": 1e-8})
        np.testing.assert_allclose(clf.privacy_info_["regularization"], np.exp(res.x), rtol=1e-3)
        np.testing.assert_allclose(clf.C_, 1 / (n * np.exp(res.x)), rtol=1e-3)


def test_auto_C_objective_keeps_budget_consistent():
    X, y = _data(n=2000, d=5)
    for cls in (PrivateLogisticRegression, PrivateHuberSVM):
        for eps, delta in ((0.1, 1e-5), (1.0, 1e-5), (1.0, 0.0)):
            clf = cls(epsilon=eps, delta=delta, data_norm=1.0, classes=[0, 1], random_state=0).fit(X, y)
            info = clf.privacy_info_
            eps1 = 0.99 * eps
            beta = clf._loss().curvature * (1.0 + S_DEFAULT**2)  # c R^2, R^2 = 1 + s^2 (intercept)
            assert info["extra_regularization"] == 0.0  # the rule's lambda is used as is
            np.testing.assert_allclose(info["eps_jacobian"], np.log1p(beta / (2000 * info["regularization"])),
                                       rtol=1e-12)
            assert 0.0 < info["eps_jacobian"] <= 0.8 * eps1 * (1 + 1e-9)
            np.testing.assert_allclose(info["eps_jacobian"] + info["eps_noise"], eps1, rtol=1e-12)


def test_auto_C_huber_small_epsilon_beats_the_majority_class():
    """Imbalanced classes at epsilon = 0.1: the strategy's regularisation predicted one class."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=12000, n_features=10, n_informative=5, weights=[0.75],
                               random_state=2)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Xtr, ytr, Xte, yte = X[:9000], y[:9000], X[9000:], y[9000:]
    majority = max(yte.mean(), 1 - yte.mean())
    auto = [PrivateHuberSVM(epsilon=0.1, data_norm=1.0, classes=[0, 1], random_state=s)
            .fit(Xtr, ytr).score(Xte, yte) for s in range(3)]
    fixed = [PrivateHuberSVM(epsilon=0.1, data_norm=1.0, classes=[0, 1], C=1.0, intercept_scaling=1.0,
                             random_state=s)
             .fit(Xtr, ytr).score(Xte, yte) for s in range(3)]
    assert np.mean(fixed) <= majority + 0.01  # the former default: (almost) one class
    assert np.mean(auto) >= majority + 0.05


# ----------------------------------------------------------------------
# AMP with K classes: the block bound (skdp.linear_model._erm, "K classes")
# ----------------------------------------------------------------------
def _amp_exact_loss_sup(B, u, up, sigma, n, signed=True):
    """sup over the records' derivative factors of (2<b, v> + ||v||^2) / (2 sigma^2).

    ``v_k = (loss'(z_k) y_k u - loss'(z'_k) y'_k u') / n`` with ``loss'`` in ``[-1, 0]``
    (both losses are non-increasing): ``v_k = (s'_k d'_k - s_k d_k) / n`` with
    ``s, s'`` in ``[0, 1]``, ``d_k = y_k u``, ``d'_k = y'_k u'`` (the labels are folded
    into ``u``, ``up``: one row per block). ``signed=False``: ``s, s'`` in ``[-1, 1]``
    (derivatives of either sign, which the bound does not cover). A convex function of
    ``(s, s')`` separable over the blocks: each block's maximum is at a corner
    (written out, independently of skdp).
    """
    corners = (0.0, 1.0) if signed else (-1.0, 1.0)
    tot = 0.0
    for k, bk in enumerate(B):  # bk: (N, p) noise of block k
        best = None
        for s1 in corners:
            for s2 in corners:
                vk = (s2 * up[k] - s1 * u[k]) / n
                val = (2 * bk @ vk + vk @ vk) / (2 * sigma**2)
                best = val if best is None else np.maximum(best, val)
        tot = tot + best
    return tot


def _amp_mc(L, eps):
    x = -np.expm1(np.minimum(eps - L, 0.0))
    return x.mean(), x.std() / np.sqrt(x.size)


@pytest.mark.parametrize("K", [1, 2, 4])
def test_amp_multiclass_delta_bounds_the_exact_worst_loss(K):
    """Monte Carlo of the privacy-loss bound's expectation on explicit records vs the bound."""
    from skdp.linear_model._erm import amp_multiclass_delta

    rng = np.random.default_rng(0)
    n, p, R, eps, N = 50, 3, 1.0, 1.0, 200000
    for a1 in (0.05, 0.15):
        sigma = R / (n * a1)
        bound = amp_multiclass_delta(a1, eps, K)
        for ang, r2 in ((0.0, 1.0), (np.pi, 1.0), (np.pi / 2, 1.0), (2.0, 0.6)):
            u = np.array([R, 0.0, 0.0])
            up = r2 * R * np.array([np.cos(ang), np.sin(ang), 0.0])
            # labels per block: the same in every block, and alternating (c_k = +-c)
            for flips in (np.ones(K), (-1.0) ** np.arange(K)):
                B = [rng.normal(scale=sigma, size=(N, p)) for _ in range(K)]
                L = _amp_exact_loss_sup(B, [u] * K, [f * up for f in flips], sigma, n)
                mc, se = _amp_mc(L, eps)
                assert mc <= bound + 4 * se + 1e-9, (K, a1, ang, mc, bound)
        # the bound is not vacuous: at c = 1 (u' = -u: the worst pair) within a factor 2 of MC
        B = [rng.normal(scale=sigma, size=(N, p)) for _ in range(K)]
        L = _amp_exact_loss_sup(B, [u] * K, [-u] * K, sigma, n)
        mc, _ = _amp_mc(L, eps)
        assert bound <= 2 * mc + 1e-6
        # power: with derivatives of either sign the same records exceed the bound, which
        # therefore rests on loss' <= 0 (test_losses_are_non_increasing)
        if a1 > 0.1:  # (at a1 = 0.05 both are below 1e-12)
            L = _amp_exact_loss_sup(B, [u] * K, [-u] * K, sigma, n, signed=False)
            mc, se = _amp_mc(L, eps)
            assert mc > bound + 4 * se


def test_losses_are_non_increasing():
    # the K-block bound uses loss' in [-1, 0] (module docstring, "K classes"), for every
    # margin the solver can meet, and with weights in [0, 1]
    z = np.concatenate([np.linspace(-50, 50, 20001), [-1e300, -1e10, 1e10, 1e300, 0.0, -0.0]])
    for loss in (LogisticLoss(), HuberLoss(0.5), HuberLoss(1e-3)):
        _, der = loss.value_deriv(z.copy())
        assert np.all((der <= 0.0) & (der >= -1.0))
        assert np.all((loss.deriv(z) <= 0.0) & (loss.deriv(z) >= -1.0))


def test_block_survival_bounds_every_correlation():
    """The dominating survival against an independent quadrature of P((x1)_+ + (x2)_+ > s)."""
    from scipy import integrate
    from scipy.stats import norm

    from skdp.linear_model._erm import _block_pmf

    grid, pmf, tail = _block_pmf()
    surv = 1.0 - np.cumsum(pmf)  # P(Y > s_j), Y the dominating grid variable

    def exact_cdf(s, c):  # condition on x1: x2 | x1 = x ~ N(c x, 1 - c^2)
        if c == 1.0:  # 2 x_+
            return norm.cdf(s / 2.0)
        if c == -1.0:  # |x|
            return 1.0 - 2.0 * norm.sf(s)
        sd = np.sqrt(1 - c * c)
        f1 = integrate.quad(lambda x: norm.pdf(x) * norm.cdf((s - c * x) / sd), -np.inf, 0.0,
                            epsabs=1e-14)[0]
        f2 = integrate.quad(lambda x: norm.pdf(x) * norm.cdf((s - x - c * x) / sd), 0.0, s,
                            epsabs=1e-14)[0]
        return f1 + f2

    worst = np.zeros(6)
    for c in (-1.0, -0.9, -0.5, 0.0, 0.3, 0.7, 0.95, 0.999, 1.0):
        for j, s in enumerate((0.3, 0.8, 1.5, 2.5, 4.0, 5.5)):
            i = int(round(s / (grid[1] - grid[0])))
            exact = 1.0 - exact_cdf(grid[i], c)
            assert exact <= surv[i] * (1 + 1e-6) + 1e-9, (c, s, exact, surv[i])
            worst[j] = max(worst[j], exact)
    # and it is close to the worst correlation's value (c = 1 in the tail)
    assert np.all(surv[[int(round(s / 0.01)) for s in (2.5, 4.0, 5.5)]] <= 1.01 * worst[3:])
    assert tail < 1e-25


def test_amp_multiclass_bound_is_below_the_chi_bound_and_used():
    from skdp.linear_model._erm import amp_multiclass_delta, amp_multiclass_sigma

    for K in (1, 2, 5):
        for a1 in (0.05, 0.1, 0.2):
            # a = Delta_obj / sigma = 2 sqrt(K) a1; chi_{2K} bound of the same sigma (the
            # block bound carries a fixed 1e-12 allowance for the convolution's rounding)
            chi = amp_noise_delta(2 * np.sqrt(K) * a1, 1.0, 2 * K)
            assert amp_multiclass_delta(a1, 1.0, K) <= chi + 1e-12
            if chi > 1e-6:
                assert amp_multiclass_delta(a1, 1.0, K) < 0.9 * chi
    X, y = _data(n=400, d=4, k=3)
    clf = PrivateLogisticRegression(epsilon=1.0, delta=1e-5, C=0.5, data_norm=1.0, classes=[0, 1, 2],
                                    random_state=0).fit(X, y)
    info = clf.privacy_info_
    sig = amp_multiclass_sigma(info["eps_noise"], info["delta_noise"], info["l2_sensitivity"], 3)
    np.testing.assert_allclose(info["sigma"], sig, rtol=1e-12)
    assert amp_multiclass_delta(info["l2_sensitivity"] / (2 * np.sqrt(3) * sig), info["eps_noise"], 3) \
        <= info["delta_noise"]


# ----------------------------------------------------------------------
# sample_weight / class_weight (public range [0, 1]; module docstring of _erm)
# ----------------------------------------------------------------------
def _deriv(loss, z):
    """loss'(z) written out (independent of the module's value_deriv)."""
    if isinstance(loss, LogisticLoss):
        return -expit(-z)
    h, m = loss.h, 1.0 - z
    return np.where(m > h, -1.0, np.where(m < -h, 0.0, -(m / (2 * h) + 0.5)))


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.1)], ids=["logistic", "huber"])
def test_weighted_gradient_difference_is_maximised_at_the_unweighted_bound(loss):
    """max ||w l'(y<W,u>) y u - w' l'(y'<W,u'>) y' u'|| over w, w' in [0, 1], rows in the
    ball of radius R, both labels and any W equals the unweighted maximum, 2 R."""
    R, d = 1.5, 2
    rng = np.random.default_rng(0)

    def unpack(t):
        w, w2 = 0.5 * (1 + np.tanh(t[0])), 0.5 * (1 + np.tanh(t[1]))  # in [0, 1]
        u, u2 = t[2:4], t[4:6]
        u = u * min(1.0, R / max(np.linalg.norm(u), 1e-300))
        u2 = u2 * min(1.0, R / max(np.linalg.norm(u2), 1e-300))
        return w, w2, u, u2, t[6:8]

    def neg_norm(t, y, y2, weighted):
        w, w2, u, u2, W = unpack(t)
        if not weighted:
            w = w2 = 1.0
        g = w * _deriv(loss, y * (W @ u)) * y * u - w2 * _deriv(loss, y2 * (W @ u2)) * y2 * u2
        return -np.linalg.norm(g)

    best = {True: 0.0, False: 0.0}
    for weighted in (True, False):
        for y, y2 in [(1, 1), (1, -1), (-1, 1), (-1, -1)]:
            for _ in range(15):
                t0 = rng.normal(size=8) * 3
                res = optimize.minimize(neg_norm, t0, args=(y, y2, weighted), method="Nelder-Mead",
                                        options={"maxiter": 4000, "xatol": 1e-10, "fatol": 1e-12})
                best[weighted] = max(best[weighted], -res.fun)
    assert best[True] <= 2 * R * (1 + 1e-12)
    assert best[True] == pytest.approx(best[False], rel=1e-3)
    assert best[False] == pytest.approx(2 * R, rel=1e-3)


@pytest.mark.parametrize("loss", [LogisticLoss(), HuberLoss(0.1)], ids=["logistic", "huber"])
def test_weighted_curvature_is_at_most_c(loss):
    """The Jacobian term's per-record curvature w l''(z) over w in [0, 1] and all z is <= c."""
    z = np.linspace(-20, 20, 400001)
    w = np.linspace(0, 1, 101)[:, None]
    if isinstance(loss, LogisticLoss):
        second = expit(z) * expit(-z)
    else:
        second = np.where(np.abs(1 - z) <= loss.h, 1 / (2 * loss.h), 0.0)
    worst = float(np.max(w * second))
    assert worst <= loss.curvature and worst == pytest.approx(loss.curvature, rel=1e-6)


ROUTES = [dict(perturbation="output"), dict(perturbation="objective"),
          dict(perturbation="objective", delta=0.0), dict(perturbation="gradient", max_iter=30)]


@pytest.mark.parametrize("est", [PrivateLogisticRegression, PrivateHuberSVM])
@pytest.mark.parametrize("route", ROUTES, ids=["output", "amp", "chaudhuri", "gradient"])
def test_unit_weights_reproduce_the_unweighted_fit(est, route):
    X, y = _data(n=400, k=3)
    kw = dict(data_norm=1.0, classes=[0, 1, 2], random_state=3, **route)
    a = est(**kw).fit(X, y)
    b = est(**kw).fit(X, y, sample_weight=np.ones(len(y)))
    c = est(class_weight={0: 1.0, 1: 1.0, 2: 1.0}, **kw).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.coef_, c.coef_)
    np.testing.assert_array_equal(a.intercept_, c.intercept_)


@pytest.mark.parametrize("route", ROUTES, ids=["output", "amp", "chaudhuri", "gradient"])
def test_class_weight_equals_the_same_sample_weight(route):
    X, y = _data(n=400)
    kw = dict(data_norm=1.0, classes=[0, 1], random_state=5, **route)
    cw = {0: 0.3, 1: 0.8}
    a = PrivateLogisticRegression(class_weight=cw, **kw).fit(X, y)
    b = PrivateLogisticRegression(**kw).fit(X, y, sample_weight=np.where(y == 0, 0.3, 0.8))
    half = np.full(len(y), 0.5)
    c = PrivateLogisticRegression(class_weight=cw, **kw).fit(X, y, sample_weight=half)
    d = PrivateLogisticRegression(**kw).fit(X, y, sample_weight=np.where(y == 0, 0.15, 0.4))
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.coef_, d.coef_, rtol=1e-12, atol=1e-12)
    assert not np.allclose(a.coef_, c.coef_)


@pytest.mark.parametrize("route", ROUTES, ids=["output", "amp", "chaudhuri", "gradient"])
def test_zero_weight_removes_the_records_contribution(route):
    """A record of weight 0 contributes nothing: changing its row and label leaves the fit."""
    X, y = _data(n=300)
    sw = np.ones(len(y))
    sw[:5] = 0.0
    X2, y2 = X.copy(), y.copy()
    X2[:5] = -X2[:5] * 0.3
    y2[:5] = 1 - y2[:5]
    kw = dict(data_norm=1.0, classes=[0, 1], random_state=7, **route)
    a = PrivateHuberSVM(**kw).fit(X, y, sample_weight=sw)
    b = PrivateHuberSVM(**kw).fit(X2, y2, sample_weight=sw)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10, atol=1e-12)


def test_zero_weight_minimiser_matches_a_reference_without_the_record():
    """The solver's weighted minimiser equals scipy's minimiser of the objective written out
    on the other records (normaliser n kept)."""
    from skdp.linear_model._solver import minimize

    X, y = _data(n=200, d=3)
    U = np.hstack([X, np.ones((200, 1))])
    Y = np.where(y == 1, 1.0, -1.0)[:, None]
    sw = np.ones(200)
    sw[:20] = 0.0
    lam, n = 0.01, 200
    W = minimize(U, Y, LogisticLoss(), lam, np.zeros((1, 4)), 1e-12, 1000, np.sqrt(2),
                 sample_weight=sw)

    def f(w):
        z = Y[20:, 0] * (U[20:] @ w)
        return np.sum(np.logaddexp(0, -z)) / n + lam / 2 * w @ w

    ref = optimize.minimize(f, np.zeros(4), method="BFGS", options={"gtol": 1e-12}).x
    np.testing.assert_allclose(W[0], ref, atol=1e-6)


@pytest.mark.parametrize("kwargs, fit_kw, match, charged", [
    # the values of the weights are private: checked after the charge, like a NaN in X
    ({}, dict(sample_weight=np.full(50, 1.5)), "sample_weight", True),
    ({}, dict(sample_weight=np.r_[np.ones(49), -0.1]), "sample_weight", True),
    ({}, dict(sample_weight=np.r_[np.ones(49), np.nan]), "finite", True),
    # their length and the class weights are public: before the charge
    ({}, dict(sample_weight=np.ones(49)), "sample", False),
    (dict(class_weight="balanced"), {}, "balanced", False),
    (dict(class_weight={0: 2.0}), {}, "class_weight", False),
    (dict(class_weight={5: 0.5}), {}, "class_weight", False),
])
def test_invalid_weights_raise_and_private_ones_after_the_charge(kwargs, fit_kw, match, charged):
    from skdp import BudgetLedger

    X, y = _data(n=50)
    led = BudgetLedger(epsilon=10.0, delta=1e-3)
    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=led, **kwargs)
    with pytest.raises(ValueError, match=match):
        clf.fit(X, y, **fit_kw)
    assert len(led.spends) == int(charged)
    assert not hasattr(clf, "coef_")
    msg_values = [str(v) for v in (1.5, -0.1)]
    with pytest.raises(ValueError) as info:
        clf.fit(X, y, **fit_kw)
    if "sample_weight" in fit_kw and match == "sample_weight":
        assert not any(v in str(info.value) for v in msg_values)


def test_all_zero_weights_are_accepted_and_charged():
    """Refusing all-zero weights would be an error decided by the private weights."""
    from skdp import BudgetLedger

    X, y = _data(n=50)
    led = BudgetLedger(epsilon=10.0, delta=1e-3)
    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=led, random_state=0)
    clf.fit(X, y, sample_weight=np.zeros(50))
    assert led.spent.epsilon == pytest.approx(clf.epsilon) and clf.coef_.shape == (1, X.shape[1])


# ----------------------------------------------------------------------
# the default intercept_scaling (module docstring of _erm, "Choosing intercept_scaling")
# ----------------------------------------------------------------------
def test_default_intercept_scaling_is_the_minimax_of_the_bound():
    """sigma = 1/2 minimises the worst ratio of the bound's factor ``r R`` to its best value
    over intercepts rho in [0, 2/3] of the features' margin; numeric grid search, not the
    closed form sigma^2 = rho_max / (2 + rho_max) of the docstring."""
    sig = np.linspace(0.05, 2.0, 3901)[:, None]
    rho = np.linspace(0.0, 2.0 / 3.0, 2001)[None, :]
    rR = np.sqrt((1 + sig**2) * (1 + rho**2 / sig**2))  # / (||w_x|| B)
    best = 1.0 + rho  # min over sigma, at sigma^2 = rho
    inside = np.sqrt(rho[0]) >= 0.05  # the optimum sigma = sqrt(rho) lies on the grid
    np.testing.assert_allclose(rR.min(axis=0)[inside], best[0][inside], rtol=1e-6)
    worst = (rR / best).max(axis=1)
    assert abs(float(sig[np.argmin(worst), 0]) - S_DEFAULT) < 1e-3
    np.testing.assert_allclose(worst.min(), np.sqrt(1.25), rtol=1e-6)
    # the former default (sigma = 1) is sqrt(2) off at rho = 0
    np.testing.assert_allclose(worst[np.argmin(abs(sig[:, 0] - 1.0))], np.sqrt(2.0), rtol=1e-6)
    for cls in (PrivateLogisticRegression, PrivateHuberSVM):
        assert cls().intercept_scaling == S_DEFAULT
        X, y = _data(n=200)
        clf = cls(data_norm=1.0, classes=[0, 1], random_state=0).fit(X, y)
        np.testing.assert_allclose(clf.privacy_info_["lipschitz"], np.hypot(1.0, S_DEFAULT))


# ----------------------------------------------------------------------
# DP-GD: the per-step sum as computed (module docstring of _erm, _step_sum_rounding)
# ----------------------------------------------------------------------
@pytest.mark.parametrize("sparse_input", [False, True])
def test_dp_gd_step_sum_rounding_against_exact_arithmetic(sparse_input):
    from fractions import Fraction

    import scipy.sparse as sps

    from skdp.linear_model._erm import _step_sum_rounding
    from skdp.linear_model._rows import RowOperator, row_norms_any

    rng = np.random.default_rng(7)
    n, d, K, B, s, clip = 3000, 4, 2, 1.0, 0.5, 0.8
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 3.0, size=(n, 1))
    if sparse_input:
        X = sps.csr_matrix(X * (rng.uniform(size=X.shape) < 0.7))
    norms = row_norms_any(X)
    a = np.minimum(1.0, B / np.maximum(norms, 1e-300))
    U = RowOperator(X, a, s)
    unorm = U.row_norms()
    W = rng.normal(size=(K, d + 1))
    Y = np.where(rng.uniform(size=(n, K)) < 0.5, 1.0, -1.0)
    loss = LogisticLoss()
    seen = {}

    def clipped(Z, Yc, i, j):  # as in _gradient_perturbation
        A = loss.deriv(Z)
        np.nan_to_num(A, copy=False, nan=0.0)
        A *= Yc
        nr = np.sqrt(np.einsum("ik,ik->i", A, A)) * unorm[i:j]
        A *= np.minimum(1.0, clip / np.maximum(nr, 1e-300))[:, None]
        seen[i] = A.copy()
        return 0.0, A

    _, S = U.fused(W, Y, clipped)
    A = np.vstack([seen[i] for i in sorted(seen)])
    Xd = X.toarray() if sparse_input else X
    clip_c, err = _step_sum_rounding(K, d + 1, n, clip, sparse_input)
    exact = [[Fraction(0)] * (d + 1) for _ in range(K)]
    worst = Fraction(0)
    for i in range(n):
        coef = [Fraction(float(A[i, k] * a[i])) for k in range(K)]  # the pass's A_ik a_i
        g = [[coef[k] * Fraction(float(Xd[i, j])) for j in range(d)] + [Fraction(s) * Fraction(float(A[i, k]))]
             for k in range(K)]
        worst = max(worst, sum(v * v for row in g for v in row))
        for k in range(K):
            for j in range(d + 1):
                exact[k][j] += g[k][j]
    assert worst <= Fraction(clip_c) ** 2  # computed per-example gradients within clip'
    assert worst > Fraction(clip) ** 2 * (1 - Fraction(1, 10**9))  # and clipping binds
    e2 = sum((Fraction(float(S[k, j])) - exact[k][j]) ** 2 for k in range(K) for j in range(d + 1))
    assert float(e2) ** 0.5 <= err


# ----------------------------------------------------------------------
# the solver's certificate in floating point (skdp.linear_model._solver)
# ----------------------------------------------------------------------
def test_the_tolerance_rises_to_four_times_the_float_floor():
    from skdp._stats import UNIT_ROUNDOFF
    from skdp.linear_model._rows import _FUSED_BYTES

    est = PrivateLogisticRegression(tol=1e-6)
    R = float(np.hypot(1.0, S_DEFAULT))
    for n, d in ((1000, 20), (10**5, 100), (10**7, 100)):
        m = _FUSED_BYTES // (8 * d)
        h = m + -(-n // m)  # dense rows: chunks of m rows, one addition per chunk
        j = (h + 30) * UNIT_ROUNDOFF
        floor = R * (1 + (d + 10) * UNIT_ROUNDOFF / (1 - (d + 10) * UNIT_ROUNDOFF)) * j / (1 - j)
        gamma = est._tolerance(n, d, 1, R, False)
        np.testing.assert_allclose(gamma, max(1e-6 * R / n, 4 * floor), rtol=1e-12)
    assert est._tolerance(10**7, 100, 1, R, False) > 20 * 1e-6 * R / 10**7  # the floor binds
    assert est._tolerance(1000, 20, 1, R, False) == 1e-6 * R / 1000


@pytest.mark.parametrize("kind", ["dense", "float32", "csr"])
def test_fits_are_certified_in_floating_point_before_the_backstop(kind, monkeypatch):
    # stage 3 (Nesterov with its cap) is the one exit whose bound is not checked in floating
    # point: the fast paths and the damped Newton stage must meet the certificate first
    import scipy.sparse as sparse

    import skdp.linear_model._solver as solver

    def never(*args, **kwargs):
        raise AssertionError("the backstop was reached")

    monkeypatch.setattr(solver, "_accelerated", never)
    rng = np.random.default_rng(4)
    n, d = 30000, 12
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = np.argmax(X[:, :3] @ rng.normal(size=(3, 3)) + 0.3 * rng.normal(size=(n, 3)), axis=1)
    if kind == "float32":
        X = X.astype(np.float32)
    elif kind == "csr":
        X[rng.random(X.shape) < 0.7] = 0.0
        X = sparse.csr_matrix(X)
    for Est in (PrivateLogisticRegression, PrivateHuberSVM):
        for yy, classes in ((y == 0, [False, True]), (y, [0, 1, 2])):
            for route in ("output", "objective"):
                Est(epsilon=1.0, delta=1e-5, data_norm=1.0, classes=classes, perturbation=route,
                    C=1e4, random_state=0).fit(X, yy)  # little regularisation: large ||W||


@pytest.mark.parametrize("perturbation, eps, delta", [("objective", 0.1, 0.0), ("gradient", 0.02, 0.0),
                                                      ("objective", 1e-5, 1e-5), ("gradient", 1e-5, 1e-5)])
def test_small_epsilon_wide_fits_do_not_fail_after_the_charge(perturbation, eps, delta):
    # review 6: with 1000 features the default objective route at delta = 0 and epsilon = 0.1 (its
    # solver-error release gets 1% of epsilon) and DP-GD at 0.02 needed sampler scales beyond
    # the exact samplers' range and raised at sampling time, after the charge
    from skdp import BudgetLedger

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 1000))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = rng.integers(0, 2, 600)
    ledger = BudgetLedger(epsilon=1.0, delta=1e-4)
    clf = PrivateLogisticRegression(epsilon=eps, delta=delta, perturbation=perturbation, data_norm=1.0,
                                    classes=[0, 1], accountant=ledger, random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.coef_))


def test_auto_regularization_cache_follows_the_registry():
    """Review 24, F4: the C="auto" rule is cached by mechanism name; a name registered again
    for another mechanism returned the first mechanism's lambda."""
    import copy

    from skdp.linear_model._erm import auto_regularization
    from skdp.mechanisms import get_mechanism, register
    from skdp.mechanisms._base import _REGISTRY

    args = ("objective", 0.25, 1000, 3, 4, 1.5, 1.0, 1e-5, "test-cache-name", 1e-6)
    try:
        for base in ("laplace", "analytic_gaussian"):
            mech = copy.copy(get_mechanism(base))
            mech.name = "test-cache-name"
            register(mech)
            assert auto_regularization(*args) == auto_regularization.__wrapped__(*args)
    finally:
        _REGISTRY.pop("test-cache-name", None)
        auto_regularization.cache_clear()
