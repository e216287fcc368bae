"""The floating-point attack (skdp.audit.float_attack) on the core samplers and on estimators.

A coordinate whose true value is 0 on D and nonzero on D' is released many
times; the attack tests whether each release near zero is a point of the
ziggurat lattice ``fl(sigma * fl(j w_i))`` of numpy's normal sampler. It
catches the continuous samplers (the power check) and finds nothing on the
grid releases (same event, same number of runs).

Beyond the table's three releases: every verified route of every estimator
is fitted with a Generator whose floating-point samplers raise, so no release
anywhere draws noise that a sampler's lattice could betray (and the guard
catches the routes that do).
"""

import contextlib
import warnings

import numpy as np
import pytest

from skdp import PrivatePCA
from skdp.audit import float_attack, numpy_ziggurat_table, ziggurat_lattice_member
from skdp.mechanisms import Query, calibrate
from skdp.mechanisms._base import NoiseSpec


def test_the_table_is_learned_and_explains_numpy_draws():
    table = numpy_ziggurat_table()
    assert np.isfinite(table).sum() >= 250
    z = np.random.default_rng(5).standard_normal(20_000)
    small = np.abs(z) < 1e-2
    # fast-path draws are lattice points (sigma = 1): nearly all small draws are members
    assert ziggurat_lattice_member(z[small], 1.0, table, tau=1e-2).mean() > 0.95


@pytest.fixture(scope="module")
def specs():
    q = Query(shape=(1000,), l2_sensitivity=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {m: calibrate(q, 1.0, 1e-5, mechanism=m)
                for m in ("analytic_gaussian", "analytic_gaussian_continuous")}


def _core_attack(spec, n_runs=300):
    zero, moved = np.zeros(1000), np.full(1000, 1.0 / np.sqrt(1000))  # l2 distance 1
    return float_attack(lambda rng: spec.privatize(zero, rng), lambda rng: spec.privatize(moved, rng),
                        spec.params["sigma"], epsilon=1.0, delta=1e-5, n_runs=n_runs)


def test_attack_catches_the_continuous_gaussian(specs):
    res = _core_attack(specs["analytic_gaussian_continuous"])
    assert not res.passed and res.delta_lower_bound > 0.1, res


def test_attack_finds_nothing_on_the_grid_gaussian(specs):
    res = _core_attack(specs["analytic_gaussian"])
    assert res.passed and res.delta_lower_bound == 0.0, res


@contextlib.contextmanager
def continuous_releases():
    """The pre-grid release: value + floating-point Gaussian noise (the old code path)."""
    privatize = NoiseSpec.privatize

    def old(self, value, random_state=None):
        from skdp._validation import check_generator

        mech = self.mechanism_
        rng = check_generator(random_state)
        return np.asarray(value, dtype=float) + mech.sample_continuous(self, rng)

    NoiseSpec.privatize = old
    try:
        yield
    finally:
        NoiseSpec.privatize = privatize


def _pca_mean_attack(n_runs):
    """PrivatePCA(mechanism='analyze_gauss').mean_, 100 features zero in D, one nonzero in D'."""
    d = 100
    X = np.zeros((50, d))
    X[:, 0] = np.linspace(-0.5, 0.5, 50)
    X_prime = X.copy()
    X_prime[0, 1:] = 0.05  # replace one record: the zero features become nonzero
    c = 1.0 / np.sqrt(2.0)  # PrivatePCA's mean weight c / R with R = 1

    def releases(data):
        def run(rng):
            est = PrivatePCA(epsilon=1.0, delta=1e-5, data_norm=1.0, mechanism="analyze_gauss",
                             random_state=int(rng.integers(2**31))).fit(data)
            entry = est.mean_[1:] * c  # the released Gram entries, up to the division's ulp
            return np.concatenate([entry, np.nextafter(entry, np.inf), np.nextafter(entry, -np.inf)])
        return run

    sigma = PrivatePCA(epsilon=1.0, delta=1e-5, data_norm=1.0, mechanism="analyze_gauss").fit(X) \
        .noise_spec_.params["sigma"]
    return float_attack(releases(X), releases(X_prime), sigma, epsilon=1.0, delta=1e-5,
                        n_runs=n_runs, tau=1e-3)


@pytest.mark.slow
def test_pca_mean_attack_power_on_the_continuous_release():
    with continuous_releases():
        res = _pca_mean_attack(1000)
    assert not res.passed, res


@pytest.mark.slow
def test_pca_mean_attack_finds_nothing_on_the_grid_release():
    res = _pca_mean_attack(1000)
    assert res.passed, res


@contextlib.contextmanager
def float_sketch():
    """The pre-grid sketch: no grid plan, so ndis.private_sketch takes its floating-point path."""
    import skdp.mechanisms.ndis as ndis

    plan = ndis.grid_sketch_plan
    ndis.grid_sketch_plan = lambda *a, **k: None
    try:
        yield
    finally:
        ndis.grid_sketch_plan = plan


def _sketch_attack(n_runs):
    """PrivateRandomProjection.sketch_, a feature identically zero in D, nonzero in one row of D'.

    With the zero column first, ``M = X^T X + sigma^2 I`` has first column
    ``fl(sigma^2) e_1``, so the Cholesky factor's first column is
    ``F_00 e_1`` with ``F_00 = sqrt(fl(sigma^2))`` and ``sketch_[:, 0] =
    fl(fl(z F_00) / sqrt(r))``: scaled ziggurat normals. On D' the factor is
    ``sqrt(sigma^2 + v^2)``, and the same lattice is almost never hit.
    """
    from skdp import PrivateRandomProjection
    from skdp.mechanisms.ndis import _cached_rp_noise_multiplier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 5))
    X[:, 0] = 0.0
    X /= 2.0 * np.linalg.norm(X, axis=1, keepdims=True)
    X_prime = X.copy()
    X_prime[0, 0] = 0.5  # replace one record: the zero feature becomes nonzero
    r = 300
    # (the floating-point path is refused unless allowed; the grid release ignores the flag)
    kw = dict(sketch_size=r, epsilon=1.0, delta=1e-5, data_norm=1.0, allow_float_sketch=True)

    def releases(data):
        def run(rng):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = PrivateRandomProjection(random_state=int(rng.integers(2**31)), **kw).fit(data)
            return est.sketch_[:, 0]
        return run

    sigma = _cached_rp_noise_multiplier(1.0, 1e-5, r)  # the floating-point path's sigma (l = 1)
    f00 = float(np.sqrt(sigma * sigma))
    return float_attack(releases(X), releases(X_prime), f00, epsilon=1.0, delta=1e-5,
                        n_runs=n_runs, tau=1e-3, divisor=np.sqrt(r))


@pytest.mark.slow
def test_sketch_attack_power_on_the_float_sketch():
    with float_sketch():
        res = _sketch_attack(1000)
    assert not res.passed and res.delta_lower_bound > 0.05, res


@pytest.mark.slow
def test_sketch_attack_finds_nothing_on_the_grid_sketch():
    res = _sketch_attack(1000)
    # grid values near zero can coincide with lattice points on both sides alike (measured:
    # 0.04 vs 0.01 in 100 runs); what matters is that no delta is certified
    assert res.passed and res.delta_lower_bound == 0.0, res


def test_random_projection_releases_on_the_grid_without_warning():
    from skdp import PrivateRandomProjection

    X = np.random.default_rng(0).normal(size=(50, 5)) / 10.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rp = PrivateRandomProjection(2, sketch_size=20, epsilon=1.0, delta=1e-5, data_norm=1.0,
                                     random_state=0).fit(X)
    assert rp.float_safe_ and 0.0 < rp.delta_reserve_ <= 1e-7
    # the release is on the grid: every entry times sqrt(r) is an integer multiple of g q
    plan = rp_plan(rp, X)
    unit = np.ldexp(plan["p_F"], -(plan["k"] + plan["m"])) * plan["data_norm"]
    v = rp.sketch_ * np.sqrt(20) / unit
    np.testing.assert_allclose(v, np.rint(v), rtol=0, atol=1e-6 * np.abs(v).max())


def rp_plan(rp, X):
    """The grid plan of the fit (long-double or decimal factor, as the estimator decides)."""
    from skdp.mechanisms.ndis import sketch_plan

    n, d = X.shape
    return sketch_plan(n, d, rp.sketch_size_, rp.epsilon, rp.delta, rp.data_norm_)[0]


def test_random_projection_float_sketch_only_when_allowed():
    """Where no grid release exists the sketch routes refuse before the charge (the decision is
    a function of n, d, r, epsilon, delta and the bounds); allow_float_sketch=True draws the
    floating-point sketch with a warning. An inferred bound decides after the charge."""
    from skdp import BudgetLedger, PrivacyGuaranteeWarning, PrivateOLS, PrivateRandomProjection

    X = np.random.default_rng(0).normal(size=(50, 5)) / 10.0
    y = X[:, 0]
    with float_sketch():
        for make, args in [
            (lambda **k: PrivateRandomProjection(2, sketch_size=20, epsilon=1.0, delta=1e-5,
                                                 data_norm=1.0, **k), (X,)),
            (lambda **k: PrivateOLS(method="sketch", epsilon=1.0, delta=1e-5, data_norm=1.0,
                                    label_bound=1.0, **k), (X, y)),
        ]:
            ledger = BudgetLedger(10.0, 1e-3)
            est = make(accountant=ledger)
            with pytest.raises(ValueError, match="no floating-point-safe release of the sketch"):
                est.fit(*args)
            assert ledger.spends == [] and not hasattr(est, "float_safe_")
            with pytest.warns(PrivacyGuaranteeWarning, match="floating point"):
                est = make(allow_float_sketch=True).fit(*args)
            assert not est.float_safe_ and est.delta_reserve_ == 0.0
        ledger = BudgetLedger(10.0, 1e-3)
        est = PrivateRandomProjection(2, sketch_size=20, delta=1e-5, accountant=ledger)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the inferred bound's leak warning
            with pytest.raises(ValueError, match="no floating-point-safe release"):
                est.fit(X)
        assert len(ledger.spends) == 1  # decided after the charge: the bound came from the data
    rp = PrivateRandomProjection(2, sketch_size=20, epsilon=1.0, delta=1e-5, data_norm=1.0).fit(X)
    assert rp.float_safe_  # the grid release where it exists, whatever the flag


# ----------------------------------------------------------------------
# beyond the table: no verified route draws floating-point noise at all
# ----------------------------------------------------------------------
_FLOAT_SAMPLERS = (
    "standard_normal", "normal", "laplace", "gamma", "standard_gamma", "exponential",
    "standard_exponential", "uniform", "beta", "chisquare", "multivariate_normal", "logistic",
    "gumbel", "lognormal", "standard_cauchy", "standard_t", "vonmises", "wald", "weibull",
    "rayleigh", "pareto", "power", "triangular", "f", "noncentral_chisquare", "noncentral_f",
    "dirichlet", "random",
)


class _IntegerOnlyGenerator(np.random.Generator):
    """A Generator whose floating-point samplers raise: the exact samplers of
    :mod:`skdp.mechanisms._discrete` and Poisson subsampling's coins call ``integers``
    only."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self.integer_calls = 0

    def integers(self, *args, **kwargs):
        self.integer_calls += 1
        return super().integers(*args, **kwargs)


def _refuse(name):
    def method(self, *args, **kwargs):
        raise AssertionError(f"a verified route drew floating-point noise: Generator.{name}")
    return method


for _name in _FLOAT_SAMPLERS:
    setattr(_IntegerOnlyGenerator, _name, _refuse(_name))


def _route_cases():
    from skdp import PrivateRandomProjection
    from skdp.linear_model import PrivateHuberSVM, PrivateLogisticRegression, PrivateOLS
    from skdp.preprocessing import PrivateRowNormScaler, PrivateStandardScaler

    clf = dict(data_norm=1.0, classes=[0, 1])
    return {
        "logistic-output": PrivateLogisticRegression(perturbation="output", **clf),
        "logistic-output-pure": PrivateLogisticRegression(perturbation="output", delta=0.0, **clf),
        "logistic-objective": PrivateLogisticRegression(perturbation="objective", **clf),
        "logistic-objective-pure": PrivateLogisticRegression(perturbation="objective", delta=0.0,
                                                             **clf),
        "logistic-gradient": PrivateLogisticRegression(perturbation="gradient", max_iter=5, **clf),
        "logistic-gradient-pure": PrivateLogisticRegression(perturbation="gradient", delta=0.0,
                                                            max_iter=5, **clf),
        "logistic-dpsgd": PrivateLogisticRegression(perturbation="gradient", batch_size=200,
                                                    max_iter=5, **clf),
        "huber-objective": PrivateHuberSVM(perturbation="objective", **clf),
        "huber-output": PrivateHuberSVM(perturbation="output", **clf),
        "ols-auto": PrivateOLS(data_norm=1.0, label_bound=1.0),
        "ols-ssp": PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
        "ols-adassp": PrivateOLS(method="adassp", data_norm=1.0, label_bound=1.0),
        "ols-sketch": PrivateOLS(method="sketch", data_norm=1.0, label_bound=1.0, delta=1e-4),
        "ols-pure": PrivateOLS(delta=0.0, data_norm=1.0, label_bound=1.0),
        "ols-mean": PrivateOLS(method="mean", data_norm=1.0, label_bound=1.0),
        "pca-auto": PrivatePCA(n_components=2, data_norm=1.0),
        "pca-analyze-gauss": PrivatePCA(n_components=2, data_norm=1.0, mechanism="analyze_gauss"),
        "pca-inid-gaussian": PrivatePCA(n_components=2, data_norm=1.0, mechanism="inid_gaussian"),
        "random-projection": PrivateRandomProjection(n_components=2, data_norm=1.0, delta=1e-4),
        "standard-scaler": PrivateStandardScaler(bounds=(-1.0, 1.0)),
        "standard-scaler-gauss": PrivateStandardScaler(bounds=(-1.0, 1.0), delta=1e-5),
        "row-norm-scaler": PrivateRowNormScaler(norm_range=(1e-3, 10.0)),
    }


@pytest.mark.parametrize("route", sorted(_route_cases()))
def test_verified_routes_draw_no_floating_point_noise(route):
    # the held-out version of the attack may aim at any release: a route whose noise never
    # comes from a floating-point sampler has no sampler lattice to leak through
    est = _route_cases()[route]
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(3000, 5)) / np.sqrt(5)
    X[:, 2] = 0.0  # a structural zero, the attack's target
    y = (X[:, 0] + 0.1 * rng.normal(size=3000) > 0).astype(int)
    if route.startswith("ols"):
        y = np.clip(X[:, 0] + 0.1 * rng.normal(size=3000), -1, 1)
    gen = _IntegerOnlyGenerator(7)
    est.set_params(random_state=gen)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a verified route does not warn (nothing inferred)
        if route.startswith(("pca", "random", "standard", "row-norm")):
            est.fit(X)
        else:
            est.fit(X, y)
    assert gen.integer_calls > 0  # its noise came from the exact samplers


@pytest.mark.parametrize("est", [
    "gamma_norm-objective", "analytic_gaussian_continuous-output", "mvg-pca",
])
def test_the_guard_catches_a_floating_point_route(est):
    # power check of the test above: routes that do draw floating-point noise are caught
    from skdp.linear_model import PrivateLogisticRegression

    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(500, 4)) / 2
    y = (X[:, 0] > 0).astype(int)
    gen = _IntegerOnlyGenerator(3)
    if est == "mvg-pca":
        model, args = PrivatePCA(n_components=2, data_norm=1.0, mechanism="mvg",
                                 random_state=gen), (X,)
    else:
        mech, route = est.split("-")
        model = PrivateLogisticRegression(perturbation=route, mechanism=mech, data_norm=1.0,
                                          classes=[0, 1], random_state=gen,
                                          delta=0.0 if mech == "gamma_norm" else 1e-5)
        args = (X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError, match="floating-point noise"):
            model.fit(*args)


@pytest.mark.parametrize("strategy", ["negative_binomial", "random_stopping", "exhaustive"])
def test_private_grid_search_draws_no_floating_point_randomness(strategy, monkeypatch):
    # every generator the search makes (its own, the runs' seeds, the inner fits') is an
    # integer-only one: the number of runs, the splits and all noise are exact draws
    from skdp.linear_model import PrivateLogisticRegression
    from skdp.model_selection import PrivateGridSearchCV

    made = []
    real = np.random.default_rng

    def integer_only(seed=None):
        gen = _IntegerOnlyGenerator(np.random.SeedSequence() if seed is None else seed)
        made.append(gen)
        return gen

    rng = real(1)
    X = rng.uniform(-1, 1, size=(2000, 4)) / 2
    X[:, 3] = 0.0
    y = (X[:, 0] + 0.1 * rng.normal(size=2000) > 0).astype(int)
    monkeypatch.setattr(np.random, "default_rng", integer_only)
    search = PrivateGridSearchCV(
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]), {"C": [0.1, 1.0, 10.0]},
        epsilon=2.0, delta=1e-5 if strategy == "exhaustive" else 0.0, strategy=strategy,
        random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*above what objective perturbation allows")
        search.fit(X, y)
    assert made and sum(g.integer_calls for g in made) > 0


@pytest.mark.parametrize("name, delta, caught", [
    ("analytic_gaussian", 1e-5, False), ("laplace", 0.0, False),          # on the grid
    ("analytic_gaussian_continuous", 1e-5, True), ("laplace_continuous", 0.0, True),
    ("gamma_norm", 0.0, True),  # floating-point noise of another construction: not on a lattice
])
def test_cancellation_event_catches_any_floating_point_noise_and_not_the_grid(name, delta, caught):
    """The second event of skdp.audit.float_attack (found by an independent held-out attack):
    near zero, fl(shift + n) is a multiple of ulp(shift) / 2 and fl(n) is not. It needs no
    sampler table, so it also catches the gamma-norm noise (Gamma radius times a normalised
    direction), which the ziggurat event misses; a release on a grid is a multiple of the grid
    on both sides."""
    import skdp.audit as audit

    q = Query(shape=(1000,), l2_sensitivity=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = calibrate(q, 1.0, delta, mechanism=name)
    scale = spec.params.get("sigma", spec.params.get("scale"))
    shift = 1.0 / np.sqrt(1000)
    zero, moved = np.zeros(1000), np.full(1000, shift)
    res = audit.float_attack(lambda rng: spec.privatize(zero, rng),
                             lambda rng: spec.privatize(moved, rng), scale, epsilon=1.0,
                             delta=max(delta, 1e-5), n_runs=200, shift=shift)
    assert res.n_events == 2
    if caught:
        assert not res.passed and res.delta_lower_bound > 0.05 and "cancellation" in res.event
        assert res.p_prime_hat == 0.0
    else:
        assert res.passed and res.delta_lower_bound == 0.0
    # the event itself: a grid multiple or a value far from zero is never in it
    assert not audit.cancellation_event(np.array([0.0, 2.0**-30, 1.0]), 1.0).any()
    assert audit.cancellation_event(np.array([np.nextafter(1e-3, 1.0)]), 1.0).all()  # odd ulp

