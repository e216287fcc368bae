"""The privacy filter (skdp._filter) and the ledgers that enforce it.

Oracles are independent of the code under test: GDP trade-off functions and
the GDP (epsilon, delta) curve written out with scipy.stats.norm, root finding
with scipy.optimize.brentq, and the trade-off function of pure DP.
"""

import math
import warnings
import multiprocessing as mp
import os
import pickle
import sqlite3

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from skdp import BudgetExceededError, BudgetLedger, PrivacyBudget, SQLiteLedger
from skdp._filter import (
    FilterState,
    GaussianCurve,
    combine_curves,
    conversion_mu,
    filter_charge,
    gdp_epsilon,
    pure_mu,
)


# ---------------------------------------------------------------- oracles
def gdp_delta(eps, mu):
    """delta(eps) of mu-GDP (Dong, Roth & Su 2022, Cor. 2.13), written out."""
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


def gdp_mu_cap(eps, delta):
    """Largest mu whose GDP curve is within (eps, delta)."""
    return brentq(lambda m: gdp_delta(eps, m) - delta, 1e-6, 50.0, xtol=1e-15, rtol=1e-14)


def tradeoff_gdp(alpha, mu):
    return norm.cdf(norm.ppf(1 - alpha) - mu)


def tradeoff_pure(alpha, eps):
    return np.maximum(np.maximum(1 - math.exp(eps) * alpha, math.exp(-eps) * (1 - alpha)), 0.0)


# ---------------------------------------------------------------- conversions
@pytest.mark.parametrize("eps", [0.05, 0.3, 1.0, 2.5])
def test_pure_mu_is_the_tight_gdp_bound_of_pure_dp(eps):
    alpha = np.concatenate([np.logspace(-12, -1, 400), np.linspace(0.1, 0.9, 801),
                            1 - np.logspace(-1, -12, 400)])
    mu = pure_mu(eps)
    alpha = np.append(alpha, 1 / (1 + math.exp(eps)))
    # f_{eps,0} >= G_mu everywhere ...
    assert np.all(tradeoff_pure(alpha, eps) >= tradeoff_gdp(alpha, mu) - 1e-12)
    # ... and touches it at the kink alpha* = 1/(1+e^eps): a smaller mu is not implied
    a_star = 1 / (1 + math.exp(eps))
    assert tradeoff_gdp(a_star, mu) == pytest.approx(tradeoff_pure(a_star, eps), abs=1e-9)
    assert np.any(tradeoff_pure(alpha, eps) < tradeoff_gdp(alpha, mu * 0.999) - 1e-12)


@pytest.mark.parametrize("eps,delta", [(1.0, 1e-5), (3.0, 1e-5), (0.1, 1e-7), (0.0, 1e-6)])
def test_conversion_mu_matches_the_gdp_curve(eps, delta):
    m = conversion_mu(eps, delta)
    if eps > 0:
        oracle = gdp_mu_cap(eps, delta)
    else:  # delta_G(0; m) = 2 Phi(m/2) - 1
        oracle = 2 * norm.ppf((1 + delta) / 2)
    assert m <= oracle * (1 + 1e-9)
    assert m == pytest.approx(oracle, rel=1e-6)


def test_gdp_epsilon_inverts_the_curve():
    for mu, delta in [(0.5, 1e-5), (2.0, 1e-6), (0.05, 1e-3)]:
        eps = gdp_epsilon(mu, delta)
        assert gdp_delta(eps, mu) <= delta * (1 + 1e-9)
        assert gdp_delta(eps * (1 - 1e-6), mu) > delta


def test_combine_curves_adds_squares():
    c = combine_curves([GaussianCurve(0.3, 1e-15), GaussianCurve(0.4, 2e-15)])
    assert c.mu == pytest.approx(0.5) and c.tv == pytest.approx(3e-15)
    assert combine_curves([GaussianCurve(0.3), None]) is None
    with pytest.raises(ValueError):
        GaussianCurve(0.0)
    with pytest.raises(ValueError):
        GaussianCurve(1.0, -1.0)


# ---------------------------------------------------------------- acceptance rule
def _count_accepted(eps_total, delta_total, eps_i, delta_i, curve):
    state, k = FilterState.start(eps_total, delta_total), 0
    while True:
        new, _ = filter_charge(state, eps_i, delta_i, curve, eps_total)
        if new is None:
            return k
        state, k = new, k + 1


@pytest.mark.parametrize("total", [(1.0, 1e-5), (3.0, 1e-5)])
@pytest.mark.parametrize("fit", [(0.1, 1e-7), (0.5, 1e-6), (1.0, 1e-5)])
def test_gaussian_fits_accepted_match_the_gdp_closed_form(total, fit):
    eps_t, delta_t = total
    mu = gdp_mu_cap(*fit)
    count = _count_accepted(eps_t, delta_t, *fit, GaussianCurve(mu, 0.0))
    # the filter converts the whole budget at 99% of its delta (or all of it when one fit needs
    # it): the closed form brackets the count
    k_hi = math.floor(gdp_mu_cap(eps_t, delta_t) ** 2 / mu**2 * (1 + 1e-9))
    k_lo = math.floor(gdp_mu_cap(eps_t, 0.99 * delta_t) ** 2 / mu**2 * (1 - 1e-9))
    basic = min(math.floor(eps_t / fit[0] + 1e-9), math.floor(delta_t / fit[1] + 1e-9))
    assert max(k_lo, basic) <= count <= max(k_hi, basic)


def test_issue_example_882_gaussian_fits_in_3():
    # 100 analytic-Gaussian fits at (0.1, 1e-7) cost (10, 1e-5) by basic composition; as
    # mu-GDP they compose to sqrt(k) mu, within (3, 1e-5) for about 880 of them
    mu = gdp_mu_cap(0.1, 1e-7)
    assert _count_accepted(3.0, 1e-5, 0.1, 1e-7, GaussianCurve(mu)) == 882
    assert _count_accepted(3.0, 1e-5, 0.1, 1e-7, None) == 30


def _allowed(state, eps_t, delta_t, history):
    """Independent check that an accepted history fits the theorem's cap.

    The accepted charges, recomputed with the oracles: Gaussian-pool charges
    (mu^2 of Gaussian spends, pure_mu^2 of the others) must fit in the capacity
    bought by the conversions, and basic-pool charges plus deltas in (eps, delta).
    """
    conv_mu2, conv_eps, conv_delta = 0.0, 0.0, 0.0
    basic_eps, deltas, gauss_mu2 = 0.0, 0.0, 0.0
    for how, eps_i, delta_i, curve, conv in history:
        if conv is not None:
            e, d = conv
            conv_eps += e
            conv_delta += d
            conv_mu2 += (gdp_mu_cap(e, d) if e > 0 else 2 * norm.ppf((1 + d) / 2)) ** 2
        if how == "basic":
            basic_eps += eps_i
            deltas += delta_i
        elif how == "gaussian-pool":
            a_star = 1 / (1 + math.exp(eps_i))
            gauss_mu2 += (-2 * norm.ppf(a_star)) ** 2  # the touching point of the two curves
            deltas += delta_i
        else:
            gauss_mu2 += curve.mu**2
            deltas += (1 + math.exp(eps_t)) * curve.tv
    assert gauss_mu2 <= conv_mu2 * (1 + 1e-7) + 1e-15
    assert basic_eps + conv_eps <= eps_t * (1 + 1e-9)
    assert deltas + conv_delta <= delta_t * (1 + 1e-9)


def test_random_mixed_sequences_never_exceed_the_cap():
    rng = np.random.default_rng(12)
    for trial in range(50):
        eps_t, delta_t = float(rng.choice([0.5, 1.0, 3.0])), float(rng.choice([1e-6, 1e-5]))
        state, history = FilterState.start(eps_t, delta_t), []
        for _ in range(60):
            kind = rng.integers(3)
            eps_i = float(rng.uniform(0.01, 0.6))
            if kind == 0:  # Gaussian fit calibrated at (eps_i, delta_i)
                delta_i = float(delta_t * rng.uniform(0.005, 0.3))
                curve = GaussianCurve(gdp_mu_cap(eps_i, delta_i), float(rng.uniform(0, 1e-14)))
            elif kind == 1:  # pure
                delta_i, curve = 0.0, None
            else:  # approximate DP without a curve
                delta_i, curve = float(delta_t * rng.uniform(0.005, 0.3)), None
            before = state
            new, how = filter_charge(state, eps_i, delta_i, curve, eps_t)
            if new is None:
                continue
            conv = None
            if how == "converted":
                conv = (before.eps_pool, before.delta_pool - new.delta_pool
                        - (1 + math.exp(eps_t)) * curve.tv)
            history.append((how, eps_i, delta_i, curve, conv))
            state = new
            _allowed(state, eps_t, delta_t, history)
        assert history  # something was accepted in every trial


def test_power_a_filter_without_the_cap_would_be_caught():
    # the independent check fails if a Gaussian charge is not paid for
    mu = gdp_mu_cap(0.1, 1e-7)
    history = [("gaussian", 0.1, 1e-7, GaussianCurve(mu), None)]
    with pytest.raises(AssertionError):
        _allowed(None, 1.0, 1e-5, history)


# ---------------------------------------------------------------- ledgers
def _fast_dir(tmp_path):
    # tmpfs when there is one: fsync is free there (see tests/test_ledger.py)
    import tempfile

    shm = "/dev/shm"
    return tempfile.mkdtemp(dir=shm) if os.access(shm, os.W_OK) else str(tmp_path)


@pytest.fixture(params=["memory", "sqlite"])
def make_ledger(request, tmp_path):
    folder = _fast_dir(tmp_path)

    def make(eps, delta, composition=None):
        kw = {} if composition is None else {"composition": composition}
        if request.param == "memory":
            return BudgetLedger(eps, delta, **kw)
        return SQLiteLedger(os.path.join(folder, "f.sqlite"), eps, delta, **kw)

    yield make
    import shutil

    if folder != str(tmp_path):
        shutil.rmtree(folder, ignore_errors=True)


def test_ledger_filter_vs_basic(make_ledger):
    mu = gdp_mu_cap(0.1, 1e-7)
    for composition, expected in (("filter", 882), ("basic", 30)):
        led = make_ledger(3.0, 1e-5, composition)
        k = 0
        with pytest.raises(BudgetExceededError):
            while True:
                led.spend(PrivacyBudget(0.1, 1e-7), "t", "", curve=GaussianCurve(mu, 1e-20))
                k += 1
        assert k == expected
        assert led.composition == composition
        assert led.spent_basic == pytest.approx(PrivacyBudget(0.1 * k, 1e-7 * k))
        s = led.spent
        assert s.epsilon <= 3.0 * (1 + 1e-12) and s.delta <= 1e-5 * (1 + 1e-12)
        if composition == "filter":
            # reported: sqrt(k) mu as GDP at the ledger's delta
            assert gdp_delta(s.epsilon, math.sqrt(k) * mu) <= 1e-5 * 1.0001
            assert all(r.mu == pytest.approx(mu) for r in led.spends)
        if isinstance(led, SQLiteLedger):
            os.remove(led.path)


def test_spends_without_curves_compose_as_basic(make_ledger):
    led = make_ledger(1.0, 1e-5)
    for _ in range(10):
        led.spend(PrivacyBudget(0.1, 1e-6))
    assert led.spent == led.spent_basic
    with pytest.raises(BudgetExceededError):
        led.spend(PrivacyBudget(0.01, 0.0))


def test_composition_is_fixed(tmp_path):
    led = BudgetLedger(1.0, 1e-5)
    with pytest.raises(AttributeError):
        led.composition = "basic"
    with pytest.raises(ValueError):
        BudgetLedger(1.0, 1e-5, composition="advanced")
    path = str(tmp_path / "c.sqlite")
    SQLiteLedger(path, 1.0, 1e-5, composition="basic")
    assert SQLiteLedger(path).composition == "basic"
    with pytest.raises(ValueError, match="composition"):
        SQLiteLedger(path, composition="filter")
    # editing the stored rule through SQL makes the handle refuse
    h = SQLiteLedger(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE skdp_budget SET composition = 'filter'")
    conn.commit()
    conn.close()
    with pytest.raises(skdp_ledger_error()):
        h.spend(PrivacyBudget(0.1))


def skdp_ledger_error():
    from skdp import LedgerFileError

    return LedgerFileError


def test_pickle_keeps_the_rule(tmp_path):
    led = SQLiteLedger(str(tmp_path / "p.sqlite"), 1.0, 1e-5, composition="basic")
    assert pickle.loads(pickle.dumps(led)).composition == "basic"
    mem = BudgetLedger(1.0, 1e-5, composition="basic")
    assert pickle.loads(pickle.dumps(mem)) is mem


def test_old_files_migrate_to_basic_with_curve_columns(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(
        "CREATE TABLE skdp_budget (id INTEGER PRIMARY KEY CHECK (id = 1), epsilon REAL NOT NULL,"
        " delta REAL NOT NULL, created REAL NOT NULL, ledger_id TEXT);"
        "CREATE TABLE skdp_spends (id INTEGER PRIMARY KEY AUTOINCREMENT, who TEXT NOT NULL,"
        " what TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, at REAL NOT NULL,"
        " pid INTEGER NOT NULL);"
        "INSERT INTO skdp_budget VALUES (1, 1.0, 1e-5, 0.0, 'abc');"
        "INSERT INTO skdp_spends (who, what, epsilon, delta, at, pid) VALUES ('a','b',0.25,0,0,1);"
    )
    conn.commit()
    conn.close()
    led = SQLiteLedger(path)
    assert led.composition == "basic"
    led.spend(PrivacyBudget(0.5, 1e-6), curve=GaussianCurve(0.2, 1e-18))
    recs = led.spends
    assert recs[0].curve is None and recs[1].curve == GaussianCurve(0.2, 1e-18)


def _filter_worker(path, n, mu, barrier, queue):
    led = SQLiteLedger(path)
    ok = []
    barrier.wait()
    for _ in range(n):
        try:
            led.spend(PrivacyBudget(0.1, 1e-7), "w", "", curve=GaussianCurve(mu, 1e-20))
            ok.append(1)
        except BudgetExceededError:
            pass
    queue.put((os.getpid(), len(ok)))


@pytest.mark.slow
def test_concurrent_processes_never_exceed_the_filter(tmp_path):
    """8 processes x 250 Gaussian spends against one filtering SQLite ledger."""
    path = os.path.join(_fast_dir(tmp_path), "filter.sqlite")
    SQLiteLedger(path, 3.0, 1e-5)
    mu = gdp_mu_cap(0.1, 1e-7)
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    n_proc, n = 8, 250
    barrier, queue = ctx.Barrier(n_proc), ctx.Queue()
    procs = [ctx.Process(target=_filter_worker, args=(path, n, mu, barrier, queue))
             for _ in range(n_proc)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    accepted = sum(k for _, k in results)
    records = SQLiteLedger(path).spends
    assert accepted == len(records) == 882  # exactly the filter's capacity, no record lost
    assert {r.pid for r in records} <= {pid for pid, _ in results}
    assert len({r.serial for r in records}) == len(records)


# ---------------------------------------------------------------- estimators pass their curves
def _unit_rows(n=400, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, np.clip(X @ np.ones(d) / 3, -1, 1)


def test_pca_fit_records_its_gdp_curve():
    from skdp import PrivatePCA

    X, _ = _unit_rows()
    led = BudgetLedger(10.0, 1e-4)
    PrivatePCA(epsilon=0.5, delta=1e-6, data_norm=1.0, n_components=2, accountant=led,
               mechanism="analyze_gauss").fit(X)
    (rec,) = led.spends
    # the analytic Gaussian calibrated at (0.5, 1e-6 - tiny reserve): mu is the GDP cap of the fit
    assert rec.mu == pytest.approx(gdp_mu_cap(0.5, 1e-6), rel=1e-8)
    assert rec.mu <= gdp_mu_cap(0.5, 1e-6) * (1 + 1e-10)
    assert 0 <= rec.tv < 1e-12


def test_adassp_curve_combines_its_releases():
    from skdp import PrivateOLS

    X, y = _unit_rows()
    led = BudgetLedger(10.0, 1e-4)
    est = PrivateOLS(method="adassp", epsilon=0.3, delta=1e-6, data_norm=1.0, label_bound=1.0,
                     accountant=led).fit(X, y)
    (rec,) = led.spends
    # the three Gaussian releases are calibrated jointly (PrivateOLS, "adassp"): their
    # separations (rounded sensitivity / sigma) compose to the fit's curve, whose mu is the
    # largest one within (epsilon, delta - the grid samplers' reserve)
    parts = []
    for spec in est.noise_spec_:
        assert spec.mechanism == "analytic_gaussian"
        k = spec.query.n_released
        parts.append((spec.query.l2_bound + spec.params["grid"] * math.sqrt(k)) / spec.params["sigma"])
    mu = math.sqrt(sum(m * m for m in parts))
    assert rec.mu == pytest.approx(mu, rel=1e-6)
    reserve = sum(spec.params["tv_reserve"] for spec in est.noise_spec_)
    assert rec.mu == pytest.approx(gdp_mu_cap(0.3, 1e-6 - reserve), rel=1e-6)


def test_inferred_bounds_and_custom_accountants_get_no_curve():
    from skdp import PrivacyLeakWarning, PrivatePCA

    X, _ = _unit_rows()
    led = BudgetLedger(10.0, 1e-4)
    with pytest.warns(PrivacyLeakWarning):
        PrivatePCA(epsilon=0.5, delta=1e-6, n_components=2, accountant=led).fit(X)
    assert led.spends[0].curve is None

    class Plain:  # an accountant with the old interface: no curve keyword
        def __init__(self):
            self.calls = []

        def spend(self, budget, source="", description=""):
            self.calls.append(budget)

    acc = Plain()
    PrivatePCA(epsilon=0.5, delta=1e-6, data_norm=1.0, n_components=2, accountant=acc).fit(X)
    assert acc.calls == [PrivacyBudget(0.5, 1e-6)]


def test_private_standard_scaler_passes_its_curve():
    from skdp.preprocessing import PrivateStandardScaler

    X, _ = _unit_rows()
    led = BudgetLedger(10.0, 1e-4)
    sc = PrivateStandardScaler(epsilon=0.5, delta=1e-6, bounds=(-1.0, 1.0), accountant=led).fit(X)
    (rec,) = led.spends
    assert sc.noise_spec_.mechanism == "analytic_gaussian"
    assert rec.mu == pytest.approx(gdp_mu_cap(0.5, 1e-6), rel=1e-8)
    led2 = BudgetLedger(10.0, 1e-4)
    PrivateStandardScaler(epsilon=0.5, delta=0.0, bounds=(-1.0, 1.0), accountant=led2).fit(X)
    assert led2.spends[0].curve is None  # pure Laplace: basic composition


def test_classifier_output_and_full_batch_gradient_fits_record_their_curve():
    from skdp import PrivateLogisticRegression

    X, y = _unit_rows()
    yc = (y > 0).astype(int)
    # output perturbation with the analytic Gaussian: one release calibrated at (eps, delta -
    # reserve), so its curve's mu is the GDP cap of the fit
    led = BudgetLedger(10.0, 1e-4)
    PrivateLogisticRegression(epsilon=0.5, delta=1e-6, data_norm=1.0, classes=[0, 1],
                              perturbation="output", mechanism="analytic_gaussian",
                              accountant=led).fit(X, yc)
    (rec,) = led.spends
    assert rec.mu == pytest.approx(gdp_mu_cap(0.5, 1e-6), rel=1e-6)
    assert rec.mu <= gdp_mu_cap(0.5, 1e-6) * (1 + 1e-10)
    # full-batch DP-GD: T Gaussian steps of separation Delta / sigma compose to sqrt(T) Delta / sigma,
    # which the calibration puts at the GDP cap of (eps, delta - reserve)
    led = BudgetLedger(10.0, 1e-4)
    est = PrivateLogisticRegression(epsilon=0.5, delta=1e-6, data_norm=1.0, classes=[0, 1],
                                    perturbation="gradient", max_iter=30, accountant=led).fit(X, yc)
    (rec,) = led.spends
    p = est.noise_spec_.params
    assert rec.mu == pytest.approx(math.sqrt(30) * p["l2_sensitivity"] / p["sigma"], rel=1e-12)
    assert rec.mu == pytest.approx(gdp_mu_cap(0.5, 1e-6), rel=1e-6)
    assert rec.mu <= gdp_mu_cap(0.5, 1e-6) * (1 + 1e-10)
    assert 0 < rec.tv < 1e-12
    # the filter then admits many more such fits than basic composition (10 of 0.1 in 1)
    led = BudgetLedger(1.0, 1e-5)
    fits = 0
    for s in range(40):
        try:
            PrivateLogisticRegression(epsilon=0.1, delta=1e-7, data_norm=1.0, classes=[0, 1],
                                      perturbation="gradient", max_iter=20, accountant=led,
                                      random_state=s).fit(X, yc)
            fits += 1
        except Exception:
            break
    assert fits > 20


def test_classifier_routes_without_a_gaussian_curve_compose_by_basic_composition():
    from skdp import PrivacyLeakWarning, PrivateLogisticRegression

    X, y = _unit_rows()
    yc = (y > 0).astype(int)
    cases = [dict(perturbation="objective", data_norm=1.0, classes=[0, 1]),  # AMP: no curve
             dict(perturbation="output", data_norm=1.0),  # inferred classes
             dict(perturbation="output", classes=[0, 1])]  # inferred data_norm
    for kw in cases:
        led = BudgetLedger(10.0, 1e-4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            PrivateLogisticRegression(epsilon=0.5, delta=1e-6, accountant=led, **kw).fit(X, yc)
        assert led.spends[0].curve is None, kw


def test_a_ledger_above_epsilon_709_charges_gaussian_fits():
    """e^epsilon overflows float64 above epsilon ~ 709.78: the filter's (1 + e^eps) tv term is
    then inf (or 0 for tv = 0), never an OverflowError on every Gaussian charge."""
    import warnings

    from skdp._validation import one_plus_exp, scaled_reserve
    from skdp.linear_model import PrivateOLS

    assert one_plus_exp(1000.0) == float("inf") and one_plus_exp(1.0) == pytest.approx(1 + np.e)
    assert scaled_reserve(1000.0, 0.0) == 0.0 and scaled_reserve(1000.0, 1e-300) == float("inf")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = np.clip(X[:, 0], -1, 1)
    led = BudgetLedger(1000.0, 1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = PrivateOLS(data_norm=1.0, label_bound=1.0, epsilon=1.0, delta=1e-6, accountant=led,
                         random_state=0).fit(X, y)
    assert est.privacy_spent_.epsilon == pytest.approx(1.0) and len(led.spends) == 1


def test_refusal_says_when_basic_composition_would_accept():
    """A Gaussian fit makes the filter convert the epsilon budget; a later non-Gaussian fit that
    basic composition would accept is refused, and the message says so (public values only)."""
    from skdp.mechanisms.gaussian import analytic_gaussian_mu

    ledger = BudgetLedger(1.0, 1e-5)
    ledger.spend(PrivacyBudget(0.5, 1e-6), curve=GaussianCurve(analytic_gaussian_mu(0.5, 1e-6)))
    with pytest.raises(BudgetExceededError, match="Basic composition would have accepted"):
        ledger.spend(PrivacyBudget(0.5, 1e-6))
    basic = BudgetLedger(1.0, 1e-5, composition="basic")
    basic.spend(PrivacyBudget(0.5, 1e-6))
    basic.spend(PrivacyBudget(0.5, 1e-6))  # accepted, as the message says
    # a refusal that basic composition would also refuse does not suggest it
    with pytest.raises(BudgetExceededError) as exc:
        BudgetLedger(1.0, 1e-5).spend(PrivacyBudget(2.0, 1e-6))
    assert "Basic composition" not in str(exc.value)


def test_pools_never_round_above_exact_arithmetic():
    """Spends chosen so that every pool subtraction would round up (0.49 ulp of the pool above
    a power of two): the exact sum of the accepted spends stays within the budget (the pools
    are rounded down)."""
    from fractions import Fraction

    from skdp._filter import FilterState, filter_charge

    s, total, k = FilterState.start(1.0, 0.0), Fraction(0), 0
    while k < 270_000:
        x = 2.0**-18 + 0.49 * math.ulp(s.eps_pool)
        new, _ = filter_charge(s, x, 0.0, None, 1.0)
        if new is None:
            break
        s, total, k = new, total + Fraction(x), k + 1
    last = s.eps_pool * (1 + 1e-12)  # then all that the pool says is left, with the slack
    new, _ = filter_charge(s, last, 0.0, None, 1.0)
    if new is not None:
        total += Fraction(last)
    assert k > 250_000
    assert total <= Fraction(1) * (1 + Fraction(1, 10**12))


def test_small_parameters_are_computed_without_cancellation():
    """pure_mu at tiny epsilon, and the conversions at tiny epsilon or delta, against 50-digit
    arithmetic: pure_mu never below the exact value, a conversion never above it."""
    import mpmath

    from skdp._filter import conversion_mu, gdp_epsilon, pure_mu

    mpmath.mp.dps = 50

    def exact_pure_mu(eps):
        p = mpmath.e**eps / (1 + mpmath.e**eps)
        return 2 * mpmath.sqrt(2) * mpmath.erfinv(2 * p - 1)

    def exact_delta(mu, eps):
        mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
        return (mpmath.ncdf(mu / 2 - eps / mu)
                - mpmath.e**eps * mpmath.ncdf(-mu / 2 - eps / mu))

    for eps in (1e-17, 1e-12, 1e-8, 1e-3, 1.0, 5.0, 40.0):
        assert pure_mu(eps) >= exact_pure_mu(eps)
        assert pure_mu(eps) <= exact_pure_mu(eps) * (1 + 1e-8)
    for E, d in ((0.0, 1e-15), (0.0, 1e-200), (1e-12, 1e-30), (1e-12, 1e-200), (1e-10, 1e-40),
                 (0.1, 1e-200), (3.0, 1e-200), (1.0, 1e-5)):
        m = conversion_mu(E, d)
        assert m > 0 and exact_delta(m, E) <= d
    for mu, d in ((1e-4, 1e-12), (0.01, 1e-100), (1.0, 1e-5)):
        assert exact_delta(mu, gdp_epsilon(mu, d)) <= d
