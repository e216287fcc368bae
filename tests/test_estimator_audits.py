"""Estimator-level audits: every route of every estimator, whole fits on neighbouring pairs.

:func:`skdp.audit.audit_estimator` fits an estimator many times on a
neighbouring pair (replace one record, n public) and certifies a lower bound
on delta from what leaves the fit: whether it raised, the shapes and classes
it released, and the released values. Each route is audited

* honestly, at its claimed (epsilon, delta): the audit must pass;
* under-noised (every noise draw multiplied by ``factor``): the audit must
  fail, which shows that the pair, the release and the events have power.

The pairs are the worst cases of each route's analysis: a label flip of a
record at the norm bound (classifiers), a record moving from the origin to
the bound (sums of rows), the pair maximising the augmented-matrix distance
(PCA) and a label at the bound (OLS). The pairs of the boundary review
(label set, one class, solver failure) are audited on the structure.

The audits are run at a moderate claimed delta (0.05) so that 1000 fits per
side resolve the violation; at small delta an audit has no power. Where the
analysis of a route is loose, half the noise is still private and the power
check uses a quarter (``factor=0.25``); the measured bounds are in the table
of each case below.

Measured (1000 fits per side, epsilon = 1, delta = 0.05; certified lower bound
on delta of the honest route / of the route with its noise times the factor):

=========================  ======  ==========  ======
route                      honest  factor      bound
=========================  ======  ==========  ======
logistic output            0       0.25        0.143
logistic objective (AMP)   0       0.25        0.135
logistic DP-GD, T=20       0       0.25        0.339
logistic DP-SGD, q=0.5     0       0.25        0.147
logistic objective (pure)  0       0.15        0.330
huber output               0       0.5         0.170
huber objective (AMP)      0       0.5         0.147
huber objective (pure)     0       0.25        0.323
huber DP-GD, T=20          0       0.25        0.336
huber objective, C="auto"  0       0.1         0.658
logistic AMP, 3 classes    0       0.1         0.546
OLS ssp                    0       0.5         0.115
OLS adassp (joint)         0       0.5         0.070
OLS sketch                 0       0.1         0.115
OLS pure (Laplace, l1)     0       0.25        0.181
PCA analyze_gauss          0       0.5         0.190
PCA inid_gaussian          0       0.25        0.287
PCA mvg                    0       0.05        0.507
random projection          0       0.5         0.153
=========================  ======  ==========  ======

Half the noise is not caught where the route's analysis is loose on these
pairs: the logistic loss moves its gradient by half the generic bound in a
label flip, AMP bounds the worst gradient shift everywhere, the pure
objective routes draw ``b`` as exact discrete Laplace calibrated through
``l1 <= sqrt(k) l2`` (``k = 3`` coordinates here), the pure OLS
route's l1 bound is 1.8x the change of this pair, the i.n.i.d. box analysis is
tight only at a corner of the box, and the matrix-variate Gaussian (MVG) is
calibrated from a bound on the whole statistic's norm, far above what one
record moves it (it is also not floating-point safe: it warns, never auto).
"""

import contextlib
import warnings

import numpy as np
import pytest

import skdp.linear_model._erm as _erm
import skdp.mechanisms.ndis as _ndis
from skdp import (
    PrivacyLeakWarning,
    PrivateHuberSVM,
    PrivateLogisticRegression,
    PrivateOLS,
    PrivatePCA,
    PrivateRandomProjection,
)
from skdp.audit import audit_estimator
from skdp.mechanisms._base import NoiseSpec
from skdp.mechanisms.gaussian import _IIDGaussian

N_FITS = 1000
EPS, DELTA = 1.0, 0.05


@contextlib.contextmanager
def under_noised(factor):
    """Every noise draw of every route times ``factor`` (a broken calibration)."""
    sample, m_rp = NoiseSpec.sample, _ndis._cached_rp_noise_multiplier
    privatize = NoiseSpec.privatize

    def scaled(self, random_state=None):
        return sample(self, random_state) * factor

    def scaled_release(self, value, random_state=None):
        value = np.asarray(value, dtype=float)
        return value + (np.asarray(privatize(self, value, random_state)) - value) * factor

    release_with = _IIDGaussian.release_with

    def scaled_release_with(self, spec, value, noise_int):
        value = np.asarray(value, dtype=float)
        return value + (np.asarray(release_with(self, spec, value, noise_int)) - value) * factor

    sample_continuous = _IIDGaussian.sample_continuous

    def scaled_continuous(self, spec, rng):
        return sample_continuous(self, spec, rng) * factor

    # AMP's objective noise b (an exact discrete Gaussian on a fine grid, skdp.linear_model._erm)
    draw_b = _erm._draw_objective_noise

    def scaled_b(sigma, grid, shape, rng):
        return draw_b(sigma, grid, shape, rng) * factor

    _erm._draw_objective_noise = scaled_b
    # the pure route's b (exact discrete Laplace on a fine grid)
    draw_pure_b = _erm._draw_pure_objective_noise

    def scaled_pure_b(t, grid, shape, rng):
        return draw_pure_b(t, grid, shape, rng) * factor

    _erm._draw_pure_objective_noise = scaled_pure_b
    NoiseSpec.sample = scaled
    NoiseSpec.privatize = scaled_release
    _IIDGaussian.release_with = scaled_release_with
    _IIDGaussian.sample_continuous = scaled_continuous
    # the sketch routes (PrivateRandomProjection, PrivateOLS "sketch") share ndis.private_sketch
    _ndis._cached_rp_noise_multiplier = lambda *a: m_rp(*a) * factor
    try:
        yield
    finally:
        NoiseSpec.sample = sample
        NoiseSpec.privatize = privatize
        _IIDGaussian.release_with = release_with
        _IIDGaussian.sample_continuous = sample_continuous
        _ndis._cached_rp_noise_multiplier = m_rp
        _erm._draw_objective_noise = draw_b
        _erm._draw_pure_objective_noise = draw_pure_b


# --- neighbouring pairs -----------------------------------------------------------
_N = 20
_ANG = np.linspace(0.0, 2 * np.pi, _N, endpoint=False)
CIRCLE = np.column_stack([np.cos(_ANG), np.sin(_ANG)])  # rows at the norm bound 1
LABELS = np.arange(_N) % 2
FLIPPED = LABELS.copy()
FLIPPED[0] = 1 - LABELS[0]  # replace record 0 by the same x with the other label
LABELS3 = np.arange(_N) % 3  # three classes: record 0 moves from class 0 to class 1
FLIPPED3 = LABELS3.copy()
FLIPPED3[0] = 1

ZEROS = np.zeros((_N, 2))
ONE_AT_BOUND = ZEROS.copy()
ONE_AT_BOUND[0] = [1.0, 0.0]

# PCA: the augmented rows [x, c] of record 0 at the largest Frobenius distance
# of their outer products (cos angle -1/4 between x and x', see skdp.decomposition._pca)
PCA_X = CIRCLE.copy()
PCA_X[0] = [1.0, 0.0]
PCA_XP = CIRCLE.copy()
PCA_XP[0] = [-0.25, np.sqrt(1.0 - 0.25**2)]

# OLS: x of record 0 flips sign (its x y and the rest's x^T x stay well conditioned)
OLS_X = np.ones((_N, 1))
OLS_XP = OLS_X.copy()
OLS_XP[0] = -1.0
OLS_Y = np.full(_N, 0.5)
OLS_Y[0] = 1.0
OLS_YP = OLS_Y.copy()


def _clf(cls, **kw):
    base = dict(epsilon=EPS, delta=DELTA, data_norm=1.0, C=0.01, fit_intercept=False, classes=[0, 1])
    base.update(kw)
    return cls(**base)


_GRAD = dict(perturbation="gradient", max_iter=20, clip_norm=0.01)

# name: (estimator, X, y, X', y', release, power factor)
ROUTES = {
    "logistic-output": (_clf(PrivateLogisticRegression, perturbation="output"),
                        CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    "logistic-objective-amp": (_clf(PrivateLogisticRegression, perturbation="objective"),
                               CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    "logistic-gradient-full": (_clf(PrivateLogisticRegression, **_GRAD),
                               CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    "logistic-gradient-poisson": (_clf(PrivateLogisticRegression, batch_size=10, **_GRAD),
                                  CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    "logistic-objective-pure": (_clf(PrivateLogisticRegression, perturbation="objective", delta=0.0),
                                CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.15),
    "huber-output": (_clf(PrivateHuberSVM, perturbation="output", mechanism="analytic_gaussian"),
                     CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.5),
    "huber-objective-amp": (_clf(PrivateHuberSVM, perturbation="objective"),
                            CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.5),
    "huber-objective-pure": (_clf(PrivateHuberSVM, perturbation="objective", delta=0.0),
                             CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    "huber-gradient-full": (_clf(PrivateHuberSVM, **_GRAD),
                            CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.25),
    # C="auto": the rule's lambda' replaces AMP's budget strategy (eps_J from lambda')
    "huber-objective-amp-autoC": (_clf(PrivateHuberSVM, perturbation="objective", C="auto"),
                                  CIRCLE, LABELS, CIRCLE, FLIPPED, None, 0.1),
    # K = 3: the per-block AMP bound (skdp.linear_model._erm, "K classes")
    "logistic-objective-amp-3class": (_clf(PrivateLogisticRegression, perturbation="objective",
                                           classes=[0, 1, 2]),
                                      CIRCLE, LABELS3, CIRCLE, FLIPPED3, None, 0.1),
    "pca-analyze-gauss": (PrivatePCA(epsilon=EPS, delta=DELTA, data_norm=1.0, mechanism="analyze_gauss"),
                          PCA_X, None, PCA_XP, None,
                          lambda e: np.concatenate([e.mean_, e.get_covariance().ravel()]), 0.5),
    "pca-inid-gaussian": (PrivatePCA(epsilon=EPS, delta=DELTA, data_norm=1.0, mechanism="inid_gaussian"),
                          PCA_X, None, PCA_XP, None,
                          lambda e: np.concatenate([e.mean_, e.get_covariance().ravel()]), 0.25),
    "pca-mvg": (PrivatePCA(epsilon=EPS, delta=DELTA, data_norm=1.0, mechanism="mvg"),
                PCA_X, None, PCA_XP, None,
                lambda e: np.concatenate([e.mean_, e.get_covariance().ravel()]), 0.05),
    "random-projection": (PrivateRandomProjection(epsilon=EPS, delta=DELTA, data_norm=1.0, sketch_size=4),
                          ZEROS, None, ONE_AT_BOUND, None,
                          lambda e: (e.sketch_.T @ e.sketch_).ravel(), 0.5),
}
for _m in ("ssp", "adassp", "sketch"):
    ROUTES[f"ols-{_m}"] = (
        PrivateOLS(method=_m, epsilon=EPS, delta=DELTA, data_norm=1.0, label_bound=1.0,
                   fit_intercept=False, sketch_size=4),
        OLS_X, OLS_Y, OLS_XP, OLS_YP, None, {"ssp": 0.5, "adassp": 0.5, "sketch": 0.1}[_m],
    )
# delta = 0: the pure-epsilon SSP (Laplace on the grid, l1 sensitivity bound)
ROUTES["ols-pure"] = (
    PrivateOLS(method="auto", epsilon=EPS, delta=0.0, data_norm=1.0, label_bound=1.0, fit_intercept=False),
    OLS_X, OLS_Y, OLS_XP, OLS_YP, None, 0.25,
)

# the intercept-only route (Laplace on the grid): the label of record 0 moves across the range
OLS_MEAN_Y = np.zeros(_N)
OLS_MEAN_Y[0] = 1.0
OLS_MEAN_YP = OLS_MEAN_Y.copy()
OLS_MEAN_YP[0] = -1.0
ROUTES["ols-mean"] = (
    PrivateOLS(method="mean", epsilon=EPS, delta=0.0, data_norm=1.0, label_bound=1.0),
    OLS_X, OLS_MEAN_Y, OLS_X, OLS_MEAN_YP, lambda e: np.array([e.intercept_]), 0.25,
)


def _audit(name, n_fits=N_FITS):
    est, X, y, Xp, yp, release, _ = ROUTES[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return audit_estimator(est, X, y, Xp, yp, n_fits=n_fits, release=release, random_state=11)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_route_passes_its_audit(name):
    res = _audit(name)
    assert res.passed, (name, res.delta_lower_bound, res.event)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ROUTES))
def test_under_noised_route_is_caught(name):
    factor = ROUTES[name][-1]
    with under_noised(factor):
        res = _audit(name)
    assert not res.passed, (name, factor, res.delta_lower_bound, res.event)
    assert res.event.startswith("values:")


# --- the boundary review's pairs, audited on what the fit exposes -----------------
ONLY2 = np.array([0, 1] * 9 + [0, 2])  # exactly one record labelled 2
ONLY2_P = ONLY2.copy()
ONLY2_P[-1] = 0


@pytest.mark.slow
def test_label_set_pair_inferred_classes_is_caught_declared_passes():
    kw = dict(epsilon=EPS, delta=DELTA, data_norm=1.0, perturbation="output", fit_intercept=False)
    X = CIRCLE
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        leaky = audit_estimator(PrivateLogisticRegression(**kw), X, ONLY2, X, ONLY2_P, n_fits=200)
    assert not leaky.passed and leaky.event.startswith("structure:")
    assert leaky.delta_lower_bound > 0.8  # three rows of coef_ against one, every time
    declared = audit_estimator(PrivateLogisticRegression(classes=[0, 1, 2], **kw), X, ONLY2, X, ONLY2_P,
                               n_fits=N_FITS, random_state=3)
    assert declared.passed, (declared.delta_lower_bound, declared.event)


@pytest.mark.slow
def test_one_class_pair_fits_on_both_sides():
    y = np.zeros(_N, dtype=int)
    y_prime = y.copy()
    y_prime[0] = 1  # D has one class, D' two
    est = PrivateHuberSVM(epsilon=EPS, delta=DELTA, data_norm=1.0, classes=[0, 1], perturbation="output",
                          mechanism="analytic_gaussian", fit_intercept=False, C=0.01)
    res = audit_estimator(est, CIRCLE, y, CIRCLE, y_prime, n_fits=N_FITS, random_state=4)
    assert res.passed, (res.delta_lower_bound, res.event)


def _hard_huber_pair():
    # the review's solver pair: h tiny and C large made the old solver raise on D only
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    r = np.random.default_rng(1)
    y = (X @ r.normal(size=2) + 0.3 * r.normal(size=2000) > 0).astype(int)
    y_prime = y.copy()
    y_prime[0] = 1 - y[0]
    return X, y, y_prime


@pytest.mark.slow
@pytest.mark.parametrize("perturbation", ["output", "objective"])
def test_solver_pair_never_raises_on_either_side(perturbation):
    X, y, y_prime = _hard_huber_pair()
    est = PrivateHuberSVM(epsilon=EPS, delta=DELTA, data_norm=1.0, classes=[0, 1], h=1e-3, C=100.0,
                          perturbation=perturbation)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = audit_estimator(est, X, y, X, y_prime, n_fits=30, random_state=5,
                              release=lambda e: np.zeros(1))
    # the release is constant: only the structure (raised or not, shapes) can differ
    assert res.passed and res.delta_lower_bound == 0.0, res.event


# --- the audit itself ---------------------------------------------------------------
class _RaisesOnD:
    """Fits like PCA but raises when the first row is zero (a data-decided error)."""

    def __init__(self, epsilon=1.0, delta=0.05, random_state=None):
        self.epsilon, self.delta, self.random_state = epsilon, delta, random_state

    def get_params(self, deep=True):
        return {"epsilon": self.epsilon, "delta": self.delta, "random_state": self.random_state}

    def set_params(self, **p):
        for k, v in p.items():
            setattr(self, k, v)
        return self

    def fit(self, X, y=None):
        if not np.any(X[0]):
            raise ValueError("data-dependent failure")
        self.coef_ = np.zeros(2)
        return self


def test_audit_estimator_catches_a_data_decided_exception():
    res = audit_estimator(_RaisesOnD(), ZEROS, None, ONE_AT_BOUND, n_fits=100)
    assert not res.passed and res.event.startswith("structure:")
    assert res.delta_lower_bound > 0.5  # 50 certifying fits per side


def test_audit_estimator_passes_identical_outcomes():
    res = audit_estimator(_RaisesOnD(), ONE_AT_BOUND, None, ONE_AT_BOUND, n_fits=50)
    assert res.passed and res.delta_lower_bound == 0.0


def test_audit_estimator_validates_its_arguments():
    est = PrivatePCA(epsilon=1.0, delta=0.05, data_norm=1.0)
    with pytest.raises(ValueError, match="n_fits"):
        audit_estimator(est, ZEROS, None, ONE_AT_BOUND, n_fits=2)
    with pytest.raises(ValueError, match="same number of rows"):
        audit_estimator(est, ZEROS, None, ONE_AT_BOUND[:5], n_fits=10)
    with pytest.raises(ValueError, match="delta"):
        audit_estimator(PrivatePCA(epsilon=1.0, delta=None, data_norm=1.0), ZEROS, None, ONE_AT_BOUND,
                        n_fits=10)
    with pytest.raises(ValueError):
        audit_estimator(est, ZEROS, None, ONE_AT_BOUND, n_fits=10, epsilon=-1.0)
    with pytest.raises(ValueError, match="callable"):
        audit_estimator(est, ZEROS, None, ONE_AT_BOUND, n_fits=10, release=3)


def test_audit_estimator_does_not_charge_the_estimators_ledger():
    from skdp import BudgetLedger

    ledger = BudgetLedger(epsilon=1.0, delta=0.1)
    est = PrivatePCA(epsilon=1.0, delta=0.05, data_norm=1.0, accountant=ledger)
    audit_estimator(est, ZEROS, None, ONE_AT_BOUND, n_fits=10)
    assert ledger.spent.epsilon == 0.0 and len(ledger.spends) == 0
