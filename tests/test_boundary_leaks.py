"""Nothing leaves a fit but calibrated noise: the leaks around the mechanisms.

Regression tests for the six demonstrations of the boundary review (labels,
seeds, solver failure, messages, search, charging and state), each on a
neighbouring pair (replace one record, n public) where that applies. The
statistical estimator audits of every route are in
``tests/test_estimator_audits.py``.
"""

import inspect
import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from skdp import (
    BudgetExceededError,
    BudgetLedger,
    PrivacyGuaranteeWarning,
    PrivacyLeakWarning,
    PrivateHuberSVM,
    PrivateLogisticRegression,
    PrivateOLS,
    PrivatePCA,
    PrivateRandomProjection,
)
from skdp.model_selection import PrivateGridSearchCV
from skdp.preprocessing import PrivateStandardScaler

CLASSIFIERS = [PrivateLogisticRegression, PrivateHuberSVM]
ROUTES = ["output", "objective", "gradient"]


def _unit_rows(n=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X


def _label_pair(n=300):
    """D has one record labelled 2; its neighbour D' relabels it 0."""
    X = _unit_rows(n)
    y = (X[:, 0] > 0).astype(int)
    y_d = y.copy()
    y_d[0] = 2
    y_dp = y.copy()
    y_dp[0] = 0
    return X, y_d, y_dp


# ---------------------------------------------------------------------------
# 1. labels
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("Cls", CLASSIFIERS)
@pytest.mark.parametrize("route", ROUTES)
def test_release_structure_depends_on_declared_classes_only(Cls, route):
    X, y_d, y_dp = _label_pair()
    kw = dict(data_norm=1.0, classes=[0, 1, 2], perturbation=route, max_iter=50, random_state=0)
    a, b = Cls(**kw).fit(X, y_d), Cls(**kw).fit(X, y_dp)
    for est in (a, b):
        np.testing.assert_array_equal(est.classes_, [0, 1, 2])
        assert est.coef_.shape == (3, 3) and est.intercept_.shape == (3,)
    # a one-class dataset fits too when the classes are declared
    c = Cls(**{**kw, "classes": [0, 1]}).fit(X, np.zeros(len(X), dtype=int))
    assert c.coef_.shape == (1, 3)
    np.testing.assert_array_equal(c.classes_, [0, 1])


@pytest.mark.parametrize("Cls", CLASSIFIERS)
def test_inferred_classes_warn_and_labels_outside_classes_raise_without_values(Cls):
    X, y_d, _ = _label_pair()
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        est = Cls(data_norm=1.0, random_state=0).fit(X, y_d)
    assert est.classes is None and list(est.classes_) == [0, 1, 2]
    y = np.where(y_d == 2, 71717, y_d)
    with pytest.raises(ValueError, match="not in the declared classes") as err:
        Cls(data_norm=1.0, classes=[0, 1, 2], random_state=0).fit(X, y)
    assert "71717" not in str(err.value)
    with pytest.raises(ValueError, match="only one class") as err:
        Cls(data_norm=1.0).fit(X, np.full(len(X), 424242))
    assert "424242" not in str(err.value)


@pytest.mark.parametrize("classes", [[1], [[0, 1]], [0, 0, 1], [0.0, np.nan], [0, 0.5], [0.5, 1.5],
                                     [1e20, 0]])
def test_bad_classes_raise_before_the_charge(classes):
    # [0, 0.5]: review 6 found the target-type check after the charge, so with these declared
    # classes a data set of 0s fitted and its neighbour with one 0.5 raised
    ledger = BudgetLedger(1.0, 1e-3)
    X, y_d, _ = _label_pair()
    with pytest.raises(ValueError, match="classes"):
        PrivateLogisticRegression(data_norm=1.0, classes=classes, accountant=ledger).fit(X, y_d)
    assert ledger.spends == []


def test_string_labels_with_declared_classes():
    X, y_d, y_dp = _label_pair()
    names = np.array(["cat", "dog", "emu"])
    est = PrivateLogisticRegression(data_norm=1.0, classes=["emu", "cat", "dog"],
                                    random_state=0).fit(X, names[y_dp])
    np.testing.assert_array_equal(est.classes_, ["cat", "dog", "emu"])
    assert set(est.predict(X)) <= set(names)


# ---------------------------------------------------------------------------
# 2. seeds
# ---------------------------------------------------------------------------
def _all_random_states(est):
    return {k: v for k, v in est.get_params(deep=True).items()
            if k == "random_state" or k.endswith("__random_state")}


@pytest.mark.parametrize("strategy, delta", [("random_stopping", 0.0), ("exhaustive", 1e-5)])
@pytest.mark.parametrize("refit", [False, True])
def test_search_returns_models_without_seeds(strategy, delta, refit):
    X, y_d, _ = _label_pair(n=400)
    search = PrivateGridSearchCV(
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2], perturbation="output"),
        {"C": [0.01, 0.1]}, epsilon=3.0, delta=delta, strategy=strategy, refit=refit,
        random_state=7).fit(X, y_d)
    assert set(_all_random_states(search.best_estimator_).values()) == {None}
    # nothing on the search stores a seed, a generator or the secret run count
    for name, value in vars(search).items():
        assert not isinstance(value, (np.random.Generator, np.random.SeedSequence,
                                      np.random.BitGenerator)), name
    assert not hasattr(search, "_n_runs")


@pytest.mark.parametrize("Est, fit_args", [
    (lambda **kw: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1],
                                            perturbation="output", **kw), "clf"),
    (lambda **kw: PrivatePCA(data_norm=1.0, **kw), "X"),
    (lambda **kw: PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-5, **kw), "reg"),
    (lambda **kw: PrivateRandomProjection(data_norm=1.0, delta=1e-5, sketch_size=20, **kw), "X"),
])
def test_seeded_fits_on_one_ledger_never_share_noise(Est, fit_args):
    X = _unit_rows(200)
    y = (X[:, 0] > 0).astype(int) if fit_args == "clf" else X[:, 1]
    args = (X,) if fit_args == "X" else (X, y)
    ledger = BudgetLedger(100.0, 1e-2)
    a = Est(random_state=5, accountant=ledger).fit(*args)
    b = Est(random_state=5, accountant=ledger).fit(*args)
    attr = next(k for k in ("coef_", "components_", "sketch_") if hasattr(a, k))
    assert not np.allclose(getattr(a, attr), getattr(b, attr))
    # without a ledger an int seed reproduces the fit (reproducible experiments)
    c, e = Est(random_state=5).fit(*args), Est(random_state=5).fit(*args)
    np.testing.assert_array_equal(getattr(c, attr), getattr(e, attr))
    # and re-running the same experiment on a fresh ledger reproduces it too
    ledger2 = BudgetLedger(100.0, 1e-2)
    a2 = Est(random_state=5, accountant=ledger2).fit(*args)
    np.testing.assert_array_equal(getattr(a, attr), getattr(a2, attr))


def test_searches_on_one_ledger_with_one_seed_differ():
    X, y_d, _ = _label_pair(n=400)
    ledger = BudgetLedger(100.0)
    runs = [PrivateGridSearchCV(
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2], perturbation="output"),
        {"C": [0.01, 0.1]}, epsilon=3.0, strategy="exhaustive", accountant=ledger,
        random_state=7).fit(X, y_d) for _ in range(2)]
    assert not np.allclose(runs[0].cv_results_["noisy_score"], runs[1].cv_results_["noisy_score"])


@pytest.mark.parametrize("make", [
    lambda rs: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=rs),
    lambda rs: PrivatePCA(data_norm=1.0, random_state=rs),
])
def test_random_state_accepts_a_generator(make):
    X = _unit_rows(100)
    y = (X[:, 0] > 0).astype(int)
    gen = np.random.default_rng(3)
    est = make(gen)
    est.fit(X, y)
    check_is_fitted(est)
    # successive fits from one generator draw fresh noise
    attr = "coef_" if hasattr(est, "coef_") else "components_"
    first = getattr(est, attr).copy()
    assert not np.allclose(first, getattr(clone(est).set_params(random_state=gen).fit(X, y), attr))


# ---------------------------------------------------------------------------
# 3. the solver never fails on data
# ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("route", ["output", "objective"])
def test_hard_huber_problem_always_returns(route):
    # the review's case: h=1e-3, C=100 on 2000 unit rows. On this dataset the solver of
    # commit badcd3e raised RuntimeError in 3 of 3 output-perturbation fits (measured), so
    # whether a model was released depended on the data; its neighbour D' replaces a record.
    X = _unit_rows(2000, d=2, seed=2)
    r = np.random.default_rng(1)
    y = (X @ r.normal(size=2) + 0.3 * r.normal(size=2000) > 0).astype(int)
    X_prime = X.copy()
    X_prime[0] = -X[0]
    for data in (X, X_prime):
        for seed in range(3):
            est = PrivateHuberSVM(h=1e-3, C=100.0, data_norm=1.0, classes=[0, 1],
                                  perturbation=route, random_state=seed).fit(data, y)
            assert np.all(np.isfinite(est.coef_))


# ---------------------------------------------------------------------------
# 4. messages and overflow
# ---------------------------------------------------------------------------
def _forbidden_strings(*values):
    out = set()
    for v in values:
        v = float(v)
        for fmt in ("{:.6g}", "{:.4g}", "{:.3g}", "{!r}", "{:.2f}", "{:.1f}", "{:.3e}"):
            out.add(fmt.format(v))
    return {s for s in out if len(re.sub(r"[^0-9]", "", s)) >= 3}


def _bad_input_cases():
    """(name, fit callable) of bad-input fits on data with distinctive private values."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(60, 3)) * 0.3
    X[5] = [613.457, -271.903, 88.1234]  # a row far beyond any bound
    y_reg = X[:, 0].copy()
    y_reg[7] = 9876.54321
    y_cls = (X[:, 1] > 0).astype(int)
    y_cls[9] = 31337
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    big = X.copy()
    big[2] = 1e300
    cases = [
        ("lr labels outside classes", lambda: PrivateLogisticRegression(
            data_norm=1.0, classes=[0, 1]).fit(X, y_cls)),
        ("lr one class inferred", lambda: PrivateLogisticRegression(
            data_norm=1.0).fit(X, np.full(60, 31337))),
        ("lr inferred data_norm", lambda: PrivateLogisticRegression(
            classes=[0, 1, 31337]).fit(X, y_cls)),
        ("lr overflowing data_norm", lambda: PrivateLogisticRegression(
            classes=[0, 1, 31337]).fit(big, y_cls)),
        ("lr nan", lambda: PrivateLogisticRegression(
            data_norm=1.0, classes=[0, 1, 31337]).fit(X_nan, y_cls)),
        ("huber wrong label", lambda: PrivateHuberSVM(
            data_norm=1.0, classes=[0, 1]).fit(X, y_cls)),
        ("ols inferred bounds", lambda: PrivateOLS(delta=1e-5).fit(X, y_reg)),
        ("ols label beyond bound", lambda: PrivateOLS(
            data_norm=1.0, label_bound=1.0, delta=1e-5).fit(X, y_reg)),
        ("ols overflowing label", lambda: PrivateOLS(
            data_norm=1.0, delta=1e-5).fit(X, np.where(y_reg > 100, 1e300, y_reg))),
        ("pca inferred", lambda: PrivatePCA().fit(X)),
        ("pca nan", lambda: PrivatePCA(data_norm=1.0).fit(X_nan)),
        ("rp inferred", lambda: PrivateRandomProjection(delta=1e-5).fit(X)),
        ("search inferred bound", lambda: PrivateGridSearchCV(
            PrivateLogisticRegression(classes=[0, 1]), {"C": [1.0]}, epsilon=1.0).fit(X, y_cls)),
    ]
    private = [613.457, -271.903, 88.1234, 9876.54321, 31337, np.linalg.norm(X[5]),
               np.linalg.norm(X, axis=1).max(), np.abs(y_reg).max()]
    return cases, _forbidden_strings(*private) | {"31337", "9876", "613.4", "271.9"}


def test_no_message_carries_a_value_computed_from_the_data():
    cases, forbidden = _bad_input_cases()
    seen = []
    for name, fit in cases:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fit()
            except Exception as exc:  # noqa: BLE001 - every error message is inspected
                seen.append((name, f"{type(exc).__name__}: {exc}"))
        seen.extend((name, str(w.message)) for w in caught)
    assert len(seen) >= len(cases)
    leaks = [(name, msg, s) for name, msg in seen for s in forbidden if s in msg]
    assert not leaks, leaks


def test_overflowing_rows_with_inferred_bound_raise_promptly():
    # this used to loop forever (the inferred bound overflowed; the AMP root search never ended)
    import signal

    def _hang(*_):
        raise AssertionError("the fit did not return within 60 s")

    X = _unit_rows(50)
    X[0] = 1e308
    y = (X[:, 1] > 0).astype(int)
    old = signal.signal(signal.SIGALRM, _hang)
    signal.alarm(60)
    try:
        for route in ROUTES:
            with pytest.raises(ValueError, match="too large"):
                with pytest.warns(PrivacyLeakWarning):
                    PrivateLogisticRegression(classes=[0, 1], perturbation=route).fit(X, y)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_huge_rows_with_a_public_bound_are_clipped_not_zeroed():
    X = _unit_rows(50)
    X[0] = [1e200, 0.0, 0.0]
    clipped = PrivatePCA(data_norm=1.0, random_state=0)
    from skdp._validation import clip_rows, row_norms
    np.testing.assert_allclose(row_norms(X)[0], 1e200)
    np.testing.assert_allclose(clip_rows(X, 1.0)[0], [1.0, 0.0, 0.0])
    clipped.fit(X)  # and the fit runs
    check_is_fitted(clipped)


# ---------------------------------------------------------------------------
# 5. search
# ---------------------------------------------------------------------------
def test_search_charges_a_ledger_set_on_the_inner_estimator():
    X, y_d, _ = _label_pair(n=400)
    ledger = BudgetLedger(10.0)
    inner = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2], accountant=ledger)
    search = PrivateGridSearchCV(inner, {"C": [0.1]}, epsilon=2.0, random_state=0).fit(X, y_d)
    assert [(r.who, r.epsilon) for r in ledger.spends] == [("PrivateGridSearchCV", 2.0)]
    assert search.best_estimator_.accountant is None
    other = BudgetLedger(10.0)
    with pytest.raises(ValueError, match="different accountants"):
        PrivateGridSearchCV(inner, {"C": [0.1]}, epsilon=2.0, accountant=other).fit(X, y_d)
    assert other.spends == [] and len(ledger.spends) == 1


@pytest.mark.parametrize("inner, grid", [
    (PrivateLogisticRegression(classes=[0, 1, 2]), {"C": [0.1]}),
    (PrivateLogisticRegression(data_norm=1.0), {"C": [0.1]}),
    (PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2]), {"data_norm": [None, 1.0]}),
    (PrivateOLS(data_norm=1.0), {"method": ["ssp"]}),
])
def test_search_refuses_inferred_bounds_before_the_charge(inner, grid):
    X, y_d, _ = _label_pair(n=400)
    ledger = BudgetLedger(10.0, 1e-3)
    scoring = {} if not isinstance(inner, PrivateOLS) else dict(  # (a regressor's scores)
        scoring=lambda est, X, y: -np.minimum((est.predict(X) - y) ** 2, 4.0),
        score_bounds=(-4.0, 0.0))
    with pytest.raises(ValueError, match="inferred from the private data"):
        PrivateGridSearchCV(inner, grid, epsilon=2.0, delta=1e-5, strategy="exhaustive",
                            accountant=ledger, **scoring).fit(X, y_d)
    assert ledger.spends == []


@pytest.mark.parametrize("grid, match", [
    ({"C": [0.1, -1.0]}, "C"),
    ({"perturbation": ["output", "bogus"]}, "perturbation"),
    ({"mechanism": ["no_such_mechanism"]}, "no_such_mechanism"),
    ({"mechanism": ["analytic_gaussian"]}, "delta"),  # random stopping runs are pure
])
def test_search_validates_every_candidate_before_the_charge(grid, match):
    X, y_d, _ = _label_pair(n=400)
    ledger = BudgetLedger(10.0)
    with pytest.raises(ValueError, match=match):
        PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2]), grid,
                            epsilon=2.0, accountant=ledger).fit(X, y_d)
    assert ledger.spends == []


# ---------------------------------------------------------------------------
# 6. public errors before the charge; a failed fit leaves nothing fitted
# ---------------------------------------------------------------------------
_X = _unit_rows(40, d=3)
_Y = (_X[:, 0] > 0).astype(int)
PUBLIC_ERRORS = [
    (lambda L: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], delta=0.0,
                                         mechanism="analytic_gaussian", accountant=L), "delta"),
    (lambda L: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], delta=0.0,
                                         perturbation="objective", mechanism="analytic_gaussian",
                                         accountant=L), "delta"),
    (lambda L: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="gradient",
                                         batch_size=10, delta=0.0, accountant=L), "subsampling"),
    (lambda L: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], mechanism="inid_gaussian",
                                         accountant=L), "inid_gaussian"),
    (lambda L: PrivateHuberSVM(data_norm=1.0, classes=[0, 1], mechanism="nope",
                               accountant=L), "nope"),
    (lambda L: PrivatePCA(n_components=5, data_norm=1.0, accountant=L), "n_components"),
    (lambda L: PrivatePCA(data_norm=1.0, delta=0.0, mechanism="analyze_gauss",
                          accountant=L), "delta"),
    (lambda L: PrivateOLS(method="sketch", sketch_size=3, data_norm=1.0, label_bound=1.0,
                          delta=1e-5, accountant=L), "sketch_size"),
    (lambda L: PrivateRandomProjection(sketch_size=2, data_norm=1.0, delta=1e-5,
                                       accountant=L), "sketch_size"),
    (lambda L: PrivateRandomProjection(n_components=4, data_norm=1.0, delta=1e-5,
                                       accountant=L), "n_components"),
]


@pytest.mark.parametrize("make, match", PUBLIC_ERRORS)
def test_public_errors_are_raised_before_the_charge(make, match):
    ledger = BudgetLedger(100.0, 1e-2)
    est = make(ledger)
    with pytest.raises(ValueError, match=match):
        est.fit(_X, _Y)
    assert ledger.spends == []
    with pytest.raises(Exception):
        check_is_fitted(est)


@pytest.mark.parametrize("make, bad_fit", [
    (lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0),
     lambda est: est.fit(_X, np.where(_Y == 1, 5, 0))),
    (lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=0),
     lambda est: est.set_params(classes=[0, 1, 2]).fit(np.full((40, 3), np.nan), _Y)),
    (lambda: PrivatePCA(data_norm=1.0, random_state=0),
     lambda est: est.set_params(n_components=7).fit(_X)),
    (lambda: PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-5, random_state=0),
     lambda est: est.fit(_X, np.full(40, np.inf))),
    (lambda: PrivateRandomProjection(data_norm=1.0, delta=1e-5, random_state=0),
     lambda est: est.fit(_X[:, :0])),
])
def test_a_failed_refit_leaves_nothing_that_looks_fitted(make, bad_fit):
    est = make()
    y = _Y if isinstance(est, (PrivateLogisticRegression, PrivateOLS)) else None
    est.fit(_X, y) if y is not None else est.fit(_X)
    check_is_fitted(est)
    with pytest.raises(ValueError):
        bad_fit(est)
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(est)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


def test_for_release_strips_seeds_and_ledgers_and_keeps_the_release():
    """A fitted estimator keeps its random_state (which replays its noise) and its ledger (whose
    serials seeded fits use); skdp.for_release copies it without them, nested ones included,
    and the copy predicts exactly as the original. The original is left as it was."""
    import pickle

    from sklearn.pipeline import make_pipeline

    import skdp
    from skdp.decomposition import PrivatePCA
    from skdp.linear_model import PrivateLogisticRegression
    from skdp.model_selection import PrivateGridSearchCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 4)) / 3
    y = (X[:, 0] > 0).astype(int)
    led = skdp.BudgetLedger(50.0, 0.5)
    pipe = make_pipeline(
        PrivatePCA(n_components=2, data_norm=1.0, random_state=3, accountant=led),
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], random_state=np.random.default_rng(4),
                                  accountant=led)).fit(X, y)
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [0.1, 1.0]}, epsilon=1.0, random_state=5,
                                 accountant=led).fit(X, y)
    for fitted in (pipe, search):
        pub = skdp.for_release(fitted)
        params = pub.get_params(deep=True)
        assert all(v is None for k, v in params.items()
                   if k.split("__")[-1] in ("random_state", "accountant"))
        if hasattr(pub, "best_estimator_"):
            assert pub.best_estimator_.random_state is None
            assert pub.best_estimator_.accountant is None
        np.testing.assert_array_equal(pub.predict(X), fitted.predict(X))
        blob = pickle.dumps(pub)
        for word in (b"BudgetLedger", b"SeedSequence", b"Generator", b"RandomState"):
            assert word not in blob
    assert pipe.steps[0][1].random_state == 3 and pipe.steps[0][1].accountant is led
    # a column transformer's fitted clones (transformers_) are stripped too
    from sklearn.compose import ColumnTransformer

    from skdp.preprocessing import PrivateStandardScaler

    ct = make_pipeline(ColumnTransformer([("s", PrivateStandardScaler(
        epsilon=1.0, bounds=(-1, 1), random_state=7, accountant=led), [0, 1])],
        remainder="passthrough"), PrivateLogisticRegression(data_norm=4.0, classes=[0, 1],
                                                            random_state=8)).fit(X, y)
    pub = skdp.for_release(ct)
    fitted = pub.steps[0][1].transformers_[0][1]
    assert fitted.random_state is None and fitted.accountant is None
    np.testing.assert_array_equal(pub.predict(X), ct.predict(X))
    blob = pickle.dumps(pub)
    assert b"BudgetLedger" not in blob
    # a bagging ensemble keeps the seeds it gave its members (_seeds): cleared as well
    from sklearn.ensemble import BaggingClassifier

    bag = BaggingClassifier(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                            n_estimators=3, bootstrap=False, random_state=9).fit(X, y)
    pub = skdp.for_release(bag)
    assert pub.random_state is None and getattr(pub, "_seeds", None) is None
    assert all(e.random_state is None for e in pub.estimators_)
    np.testing.assert_array_equal(pub.predict(X), bag.predict(X))
    assert bag._seeds is not None
    # review 23, F4: CalibratedClassifierCV keeps its fitted members inside plain helper
    # objects (calibrated_classifiers_), which are not estimators: entered as well
    from sklearn.calibration import CalibratedClassifierCV

    cal = CalibratedClassifierCV(PrivateLogisticRegression(
        data_norm=1.0, classes=[0, 1], random_state=424242, accountant=led), cv=2).fit(X, y)
    with pytest.warns(skdp.PrivacyLeakWarning, match="not private"):
        pub = skdp.for_release(cal)
    assert all(c.estimator.random_state is None and c.estimator.accountant is None
               for c in pub.calibrated_classifiers_)
    np.testing.assert_array_equal(pub.predict(X), cal.predict(X))
    blob = pickle.dumps(pub)
    assert b"BudgetLedger" not in blob and b"Generator" not in blob
    assert all(c.estimator.random_state == 424242 for c in cal.calibrated_classifiers_)


def test_for_release_refuses_scikit_learn_searches_and_keeps_only_noisy_search_results():
    """GridSearchCV / RandomizedSearchCV keep cv_results_ and best_score_: exact scores on the
    private validation folds. for_release refuses them, at the top or nested, and points to
    best_estimator_ and PrivateGridSearchCV; PrivateGridSearchCV's fitted attributes are the
    selected model and grid point, noisy scores and public settings only."""
    from sklearn.model_selection import GridSearchCV, RandomizedSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    import skdp
    from skdp.model_selection import PrivateGridSearchCV

    X, y_d, _ = _label_pair(n=300)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1, 2], perturbation="output",
                                    random_state=0)
    searches = [
        GridSearchCV(est, {"C": [0.1, 1.0]}, cv=2).fit(X, y_d),
        RandomizedSearchCV(est, {"C": [0.1, 1.0]}, n_iter=2, cv=2, random_state=0).fit(X, y_d),
        make_pipeline(FunctionTransformer(), GridSearchCV(est, {"C": [0.1]}, cv=2)).fit(X, y_d),
    ]
    for fitted in searches:
        with pytest.raises(TypeError, match="best_estimator_") as info:
            skdp.for_release(fitted)
        assert "PrivateGridSearchCV" in str(info.value) and "cv_results_" in str(info.value)
    pub = skdp.for_release(searches[0].best_estimator_)  # the selected model alone is fine
    np.testing.assert_array_equal(pub.predict(X), searches[0].predict(X))
    private = PrivateGridSearchCV(est, {"C": [0.1, 1.0]}, epsilon=2.0, delta=1e-5,
                                  strategy="exhaustive", random_state=0).fit(X, y_d)
    pub = skdp.for_release(private)
    fitted_names = {k for k in vars(pub) if k.endswith("_") and not k.startswith("__")}
    # every one reviewed: noisy scores, the selection, the release, public settings of the search
    assert fitted_names == {"best_score_", "best_index_", "best_params_", "best_estimator_",
                            "cv_results_", "privacy_spent_", "run_budget_", "n_candidates_",
                            "stopping_law_", "score_noise_", "classes_", "n_features_in_"}
    assert set(pub.cv_results_) == {"params", "noisy_score", "rank_noisy_score", "param_C"}
    assert pub.best_score_ == pub.cv_results_["noisy_score"].max()


# ---------------------------------------------------------------------------
# 7. validation errors of the data carry no value of it (string cells, 1-D X), and the
#    errors decided by the structure of X and y come before the charge
# ---------------------------------------------------------------------------
_SECRET_STR = "SSN 123-45-6789"
_SECRET_NUM = 123.456789
_SECRETS = (_SECRET_STR, "123-45-6789", "123.45", "123.46", "1.2345", "1.2346")


def _estimators(L=None):
    """``(name, estimator, needs_y, takes_weight)`` for every private estimator."""
    from skdp.preprocessing import PrivateRowNormScaler, PrivateStandardScaler

    return [
        ("LR", PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=L), True, True),
        ("Huber", PrivateHuberSVM(data_norm=1.0, classes=[0, 1], accountant=L), True, True),
        ("OLS", PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6, accountant=L), True, True),
        ("PCA", PrivatePCA(data_norm=1.0, delta=1e-6, accountant=L), False, True),
        ("RP", PrivateRandomProjection(data_norm=1.0, delta=1e-6, accountant=L), False, True),
        ("Scaler", PrivateStandardScaler(bounds=(-1, 1), accountant=L), False, False),
        ("RowNorm", PrivateRowNormScaler(norm_range=(0.1, 10), accountant=L), False, False),
    ]


def _messages(exc):
    """The message of ``exc`` and of every exception chained to it."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(f"{type(exc).__name__}: {exc}")
        exc = exc.__cause__ or exc.__context__
    return out


def _assert_no_secret(exc):
    msgs = _messages(exc)
    leaks = [(m, s) for m in msgs for s in _SECRETS if s in m]
    assert not leaks, leaks
    assert exc.__cause__ is None and exc.__context__ is None


def _bad_cells():
    X = (_unit_rows(40, d=3) / 2).astype(object)
    X[0, 0] = _SECRET_NUM
    X_str = X.copy()
    X_str[7, 1] = _SECRET_STR
    y_cls = _Y.astype(object)
    y_reg = (_Y * 0.5).astype(object)
    return X, X_str, y_cls, y_reg


def _bad_value_fits():
    X, X_str, y_cls, y_reg = _bad_cells()
    Xf = X.astype(float)
    cases = []
    for name, est, needs_y, takes_weight in _estimators():
        y = (y_cls if name in ("LR", "Huber") else y_reg) if needs_y else None
        y_bad = None
        if needs_y:
            y_bad = y.copy()
            y_bad[3] = _SECRET_STR
        args = (lambda Xa, ya=y: (Xa, ya) if needs_y else (Xa,))
        cases.append((f"{name} X string", est, args(X_str), {}))
        cases.append((f"{name} 1-D X", est, args(Xf[:, 0]), {}))
        if needs_y:
            cases.append((f"{name} y string", est, (Xf, y_bad), {}))
        if takes_weight:
            w = np.full(40, 0.5, dtype=object)
            w[5] = _SECRET_STR
            cases.append((f"{name} sample_weight string", est, args(Xf), {"sample_weight": w}))
    return cases


@pytest.mark.parametrize("name, est, args, kwargs", _bad_value_fits(),
                         ids=[c[0] for c in _bad_value_fits()])
def test_validation_errors_carry_no_value_of_the_data(name, est, args, kwargs):
    est = clone(est)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((ValueError, TypeError)) as err:
            est.fit(*args, **kwargs)
    _assert_no_secret(err.value)
    msg = str(err.value)
    if "1-D X" in name:
        assert "Expected 2D array" in msg
    elif "string" in name and not (name.startswith(("LR y", "Huber y"))):
        # (a classifier's labels need not be numbers: a mixed one is an unknown label type)
        what = "sample_weight" if "sample_weight" in name else ("y" if "y string" in name else "X")
        assert msg.startswith(f"{what} contains values that cannot be converted to float")
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(est)


def test_nan_and_complex_messages_carry_no_value():
    from skdp._validation import validate_private_data

    X = _unit_rows(10, d=2)
    X[0, 0] = _SECRET_NUM
    Xc = X.astype(complex)
    Xc[1, 1] = 1j * _SECRET_NUM
    Xn = X.copy()
    Xn[2, 1] = np.nan
    for bad, match in ((Xc, "Complex data not supported"), (Xn, "Input X contains NaN")):
        with pytest.raises(ValueError, match=match) as err:
            validate_private_data(PrivatePCA(), bad, dtype=[np.float64])
        _assert_no_secret(err.value)
    # a scalar X: sklearn prints it ("array=..."); the message here does not
    with pytest.raises(ValueError, match="Expected 2D array") as err:
        validate_private_data(PrivatePCA(), np.float64(_SECRET_NUM))
    _assert_no_secret(err.value)
    # a continuous target: "Unknown label type", without the labels
    with pytest.raises(ValueError, match="Unknown label type") as err:
        PrivateLogisticRegression(data_norm=1.0).fit(X, np.full(10, _SECRET_NUM) + np.arange(10))
    _assert_no_secret(err.value)


def _structural_cases():
    from skdp.preprocessing import PrivateRowNormScaler, PrivateStandardScaler

    X, y = _unit_rows(200, d=3) / 2, None
    y = (X[:, 0] > 0).astype(int)
    LR = lambda L, **k: PrivateLogisticRegression(**{"data_norm": 1.0, "classes": [0, 1],  # noqa: E731
                                                     "accountant": L, **k})
    OLS = lambda L: PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6, accountant=L)  # noqa: E731
    PCA = lambda L: PrivatePCA(data_norm=1.0, delta=1e-6, accountant=L)  # noqa: E731
    RP = lambda L: PrivateRandomProjection(data_norm=1.0, delta=1e-6, accountant=L)  # noqa: E731
    SC = lambda L: PrivateStandardScaler(bounds=(-1, 1), accountant=L)  # noqa: E731
    RN = lambda L: PrivateRowNormScaler(norm_range=(0.1, 10), accountant=L)  # noqa: E731
    return [
        ("LR y shorter", LR, (X, y[:150]), "inconsistent numbers of samples"),
        ("Huber y shorter", lambda L: PrivateHuberSVM(data_norm=1.0, classes=[0, 1], accountant=L),
         (X, y[:150]), "inconsistent numbers of samples"),
        ("OLS y shorter", OLS, (X, X[:150, 0]), "inconsistent numbers of samples"),
        ("OLS y list longer", OLS, (X, list(X[:, 0]) + [0.0]), "inconsistent numbers of samples"),
        # a single-output estimator given several target columns: decided by y's structure
        ("OLS y 2 columns", OLS, (X, X[:, :2]), r"y should be a 1d array.*\(200, 2\)"),
        ("OLS y list of pairs", OLS, (X, X[:, :2].tolist()), "y should be a 1d array"),
        ("LR y 2 columns", LR, (X, np.c_[y, y]), "y should be a 1d array"),
        ("Huber y 3-D", lambda L: PrivateHuberSVM(data_norm=1.0, classes=[0, 1], accountant=L),
         (X, y.reshape(200, 1, 1)), "y should be a 1d array"),
        ("LR y None", LR, (X, None), "requires y to be passed"),
        ("OLS y None", OLS, (X, None), "requires y to be passed"),
        ("LR 1-D X", LR, (X[:, 0], y), "Expected 2D array"),
        ("OLS 1-D X", OLS, (X[:, 0], X[:, 1]), "Expected 2D array"),
        ("PCA 1-D X", PCA, (X[:, 0],), "Expected 2D array"),
        ("RP 1-D X", RP, (X[:, 0],), "Expected 2D array"),
        ("Scaler 1-D X", SC, (X[:, 0],), "Expected 2D array"),
        ("RowNorm 1-D X", RN, (X[:, 0],), "Expected 2D array"),
        ("RowNorm 1-D list X", RN, (list(X[:, 0]),), "Expected 2D array"),
        ("PCA 3-D X", PCA, (X.reshape(200, 3, 1),), "dim"),
        ("LR 0 features", LR, (X[:, :0], y), r"0 feature\(s\)"),
        ("OLS 0 features", OLS, (X[:, :0], X[:, 0]), r"0 feature\(s\)"),
        ("PCA 0 features", PCA, (X[:, :0],), r"0 feature\(s\)"),
        ("RP 0 features", RP, (X[:, :0],), r"0 feature\(s\)"),
        ("Scaler 0 features", SC, (X[:, :0],), r"0 feature\(s\)"),
        ("RowNorm 0 features", RN, (X[:, :0],), r"0 feature\(s\)"),
        ("LR objective delta=1e-300",
         lambda L: LR(L, delta=1e-300, perturbation="objective"), (X, y), "delta is too small"),
        ("Huber objective delta=1e-300",
         lambda L: PrivateHuberSVM(data_norm=1.0, classes=[0, 1], delta=1e-300,
                                   perturbation="objective", accountant=L), (X, y),
         "delta is too small"),
        ("LR objective C=auto delta=1e-300",
         lambda L: LR(L, delta=1e-300, perturbation="objective", C="auto"), (X, y),
         "delta is too small"),
    ]


@pytest.mark.parametrize("name, make, args, match", _structural_cases(),
                         ids=[c[0] for c in _structural_cases()])
def test_structural_errors_are_raised_before_the_charge(name, make, args, match):
    ledger = BudgetLedger(100.0, 0.5)
    est = make(ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=match):
            est.fit(*args)
    assert ledger.spends == []
    assert ledger.spent.epsilon == 0 and ledger.spent.delta == 0
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(est)
    assert not [k for k in vars(est) if k.endswith("_") and not k.startswith("__")]


@pytest.mark.parametrize("i", range(7))
def test_schema_and_scalar_weight_errors_are_raised_before_the_charge(i):
    """Column names are schema and a scalar sample_weight is one setting for every record: a
    DataFrame whose names mix str and int, and a scalar weight outside [0, 1], were refused only
    after the charge (review 9, F4 and F5)."""
    pd = pytest.importorskip("pandas")
    ledger = BudgetLedger(100.0, 0.5)
    name, est, needs_y, takes_weight = _estimators(ledger)[i]
    X = _unit_rows(60, d=3) / 2
    y = (X[:, 0] > 0).astype(int) if name in ("LR", "Huber") else X[:, 0]
    args = (pd.DataFrame(X, columns=["a", 1, "c"]),) + ((y,) if needs_y else ())
    with pytest.raises(TypeError, match="Feature names are only supported"):
        est.fit(*args)
    if takes_weight:
        for w in (2.0, -0.5, np.nan):
            with pytest.raises(ValueError, match=r"sample_weight must lie in \[0, 1\]"):
                est.fit(X, *((y,) if needs_y else ()), sample_weight=w)
    assert ledger.spends == []
    with pytest.raises(Exception, match="not fitted"):
        check_is_fitted(est)


def test_random_projection_failed_refit_keeps_no_feature_names():
    """PrivateRandomProjection's output width was a plain private attribute that a failed refit
    kept, so get_feature_names_out answered with the previous fit's names (review 9, F6)."""
    from sklearn.exceptions import NotFittedError

    ledger = BudgetLedger(1.0, 1e-5)
    est = PrivateRandomProjection(n_components=2, data_norm=1.0, delta=1e-5, accountant=ledger)
    est.fit(_X)
    assert len(est.get_feature_names_out()) == 2
    with pytest.raises(BudgetExceededError):
        est.fit(_X)
    with pytest.raises(NotFittedError):
        est.get_feature_names_out()


def test_objective_route_fits_unchanged_after_the_precharge_calibration():
    # the pre-charge calibration of the objective route is the fit's own: same seed, same release
    X = _unit_rows(200, d=3)
    y = (X[:, 0] > 0).astype(int)
    kw = dict(data_norm=1.0, classes=[0, 1], perturbation="objective", random_state=3)
    a = PrivateLogisticRegression(**kw).fit(X, y)
    b = PrivateLogisticRegression(**{**kw, "classes": None})
    with pytest.warns(PrivacyLeakWarning):
        b.fit(X, y)  # no pre-charge calibration (classes inferred): the same release
    np.testing.assert_array_equal(a.coef_, b.coef_)
    np.testing.assert_array_equal(a.intercept_, b.intercept_)


def test_predict_and_transform_errors_carry_no_value_of_the_data():
    X, X_str, _, _ = _bad_cells()
    Xf = X.astype(float)
    for name, est, needs_y, _ in _estimators():
        est = clone(est).set_params(random_state=0)
        y = (_Y if name in ("LR", "Huber") else _Y * 0.5) if needs_y else None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(Xf, y) if needs_y else est.fit(Xf)
        method = getattr(est, "predict", None) or est.transform
        for bad in (X_str, Xf[:, 0], Xf[0]):
            with pytest.raises((ValueError, TypeError)) as err:
                method(bad)
            _assert_no_secret(err.value)
        if hasattr(est, "inverse_transform"):
            with pytest.raises((ValueError, TypeError)) as err:
                est.inverse_transform(X_str)
            _assert_no_secret(err.value)


def test_dask_input_errors_carry_no_value_of_the_data():
    da = pytest.importorskip("dask.array")
    X = da.from_array(_unit_rows(40, d=3) / 2, chunks=10)
    y = (_Y * 0.5).astype(object)
    y[3] = _SECRET_STR
    ledger = BudgetLedger(100.0, 0.5)
    with pytest.raises(ValueError, match="y contains values that cannot be converted") as err:
        PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6, accountant=ledger).fit(X, y)
    _assert_no_secret(err.value)
    w = np.full(40, 0.5, dtype=object)
    w[5] = _SECRET_STR
    with pytest.raises(ValueError, match="sample_weight contains values") as err:
        PrivatePCA(data_norm=1.0, delta=1e-6, accountant=ledger).fit(X, sample_weight=w)
    _assert_no_secret(err.value)
    # a y of the wrong length: decided by the structure, before the charge
    spent = len(ledger.spends)
    with pytest.raises(ValueError):
        PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6, accountant=ledger).fit(
            X, np.zeros(39))
    assert len(ledger.spends) == spent


def test_for_release_warns_about_fitted_steps_that_are_not_private():
    """A StandardScaler (or a one-vs-rest wrapper) fitted on the private rows keeps values
    computed without noise: the copy is made, with a PrivacyLeakWarning naming the step; private,
    stateless and frozen steps do not warn."""
    import warnings

    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer, StandardScaler

    from skdp import PrivacyLeakWarning, PrivateLogisticRegression, PrivatePCA, for_release

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = rng.integers(0, 3, size=300)
    leaky = [make_pipeline(StandardScaler(), PrivatePCA(2, data_norm=1.0, random_state=0)).fit(X),
             OneVsRestClassifier(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1],
                                                           random_state=0)).fit(X, y)]
    for est, name in zip(leaky, ("StandardScaler", "OneVsRestClassifier")):
        with pytest.warns(PrivacyLeakWarning, match=name):
            for_release(est)
    clean = [PrivatePCA(2, data_norm=1.0, random_state=0).fit(X),
             make_pipeline(Normalizer(), PrivatePCA(2, data_norm=1.0, random_state=0)).fit(X)]
    try:
        from sklearn.frozen import FrozenEstimator

        frozen = FrozenEstimator(StandardScaler().fit(rng.normal(size=(50, 3))))
        clean.append(make_pipeline(frozen, PrivatePCA(2, data_norm=1.0, random_state=0)).fit(X))
    except ImportError:
        pass
    for est in clean:
        with warnings.catch_warnings():
            warnings.simplefilter("error", PrivacyLeakWarning)
            for_release(est)


@pytest.mark.parametrize("make", [
    lambda: PrivatePCA(n_components=2, data_norm=1.0),
    lambda: PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0),
    lambda: PrivateOLS(method="adassp", data_norm=1.0, label_bound=1.0),
    lambda: PrivateOLS(method="mean", data_norm=1.0, label_bound=1.0),
    lambda: PrivateStandardScaler(bounds=(-1.0, 1.0), delta=1e-5),
], ids=["pca", "ols-ssp", "ols-adassp", "ols-mean", "scaler"])
def test_release_calibrated_before_the_charge_is_never_silently_recalibrated(make, monkeypatch):
    # the release is calibrated from the shape read before the charge (a filtering ledger
    # composes its curve); if validation later saw another shape, the fit must fail, not
    # recalibrate. Forced here by a wrong public shape (it never happens on its own).
    est = make()
    real = type(est)._public_shape

    def off_by_one(self, X, *args, **kwargs):
        n, d = real(self, X, *args, **kwargs)
        return n + 1, d

    monkeypatch.setattr(type(est), "_public_shape", off_by_one)
    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, size=(200, 3))
    y = rng.uniform(-1, 1, size=200)
    with pytest.raises(RuntimeError, match="before it; nothing was released"):
        est.fit(X, y)
    assert not hasattr(est, "n_features_in_") and not hasattr(est, "noise_spec_")


def _with_row(X, row):
    Xr = X.copy()
    Xr[0] = row
    return Xr


@pytest.mark.parametrize("make", [
    lambda: PrivateLogisticRegression(perturbation="output", C=10.0),
    lambda: PrivateLogisticRegression(perturbation="objective", C=10.0),
    lambda: PrivateLogisticRegression(perturbation="gradient"),
    lambda: PrivateHuberSVM(perturbation="output", C=10.0),
    lambda: PrivateHuberSVM(perturbation="objective", C=10.0),
    lambda: PrivateHuberSVM(perturbation="gradient"),
], ids=["lr-output", "lr-objective", "lr-gradient", "huber-output", "huber-objective",
        "huber-gradient"])
def test_a_huge_finite_record_enters_as_the_zero_row(make):
    # review 6: margins were X @ W before the clip factor, so one finite record near the float64
    # limit overflowed them and the fit raised (its neighbour fitted), or the row silently
    # vanished from the certificate's analysis. Rows beyond 2^400 data_norm now enter as 0: the
    # release is exactly that of the data set with a zero record in their place.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    kw = dict(data_norm=1.0, classes=[0, 1], random_state=0, epsilon=5.0)
    ref = clone(make()).set_params(**kw).fit(_with_row(X, [0.0, 0.0, 0.0]), y)
    for row in ([1.7e308, 1.7e308, 0.0], [-1.7e308, 1.7e308, 1e308], [3e121, 0.0, 0.0]):
        est = clone(make()).set_params(**kw).fit(_with_row(X, row), y)
        np.testing.assert_array_equal(est.coef_, ref.coef_)
        np.testing.assert_array_equal(est.intercept_, ref.intercept_)


@pytest.mark.parametrize("make", [
    lambda: PrivatePCA(n_components=2, data_norm=1.0, random_state=0),
    lambda: PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, random_state=0),
], ids=["pca", "ols"])
def test_gram_kernel_zeroes_a_huge_record_too(make):
    # the shared kernel scales rows before its products (no overflow), but the clip factor of a
    # row beyond 4.5e307 R would be subnormal (relative error above u, outside the computed row
    # bound): it is 0 instead, and no floating-point warning depends on the record
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3)) / 4
    y = rng.uniform(-1, 1, size=300)
    ref = make().fit(_with_row(X, [0.0, 0.0, 0.0]), y)
    for row in ([1.7e308, -1.7e308, 0.0], [1e308, 0.0, 0.0]):  # norm inf; factor 1e-308 subnormal
        est = make().fit(_with_row(X, row), y)
        for attr in ("components_", "coef_"):
            if hasattr(ref, attr):
                np.testing.assert_array_equal(getattr(est, attr), getattr(ref, attr))


def test_indefinite_hessian_under_a_tiny_public_lambda_does_not_raise():
    # review 6: with C = 1e14 a duplicated column made the Newton Hessian numerically indefinite
    # and LinAlgError escaped fit() on D while the neighbour D' fitted; the stage now ends and
    # the factorisation-free stage reaches the certificate on both
    rng = np.random.default_rng(0)
    b, c = rng.normal(size=(2, 3000))
    X = np.column_stack([b, b, c])
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    y = (b + 0.5 * rng.normal(size=3000) > 0).astype(int)
    X2 = _with_row(X, [0.7, -0.7, 0.0])
    kw = dict(C=1e14, perturbation="output", data_norm=1.0, classes=[0, 1], random_state=0)
    for A in (X, X2):
        assert np.all(np.isfinite(PrivateLogisticRegression(**kw).fit(A, y).coef_))


def test_declared_integer_valued_float_classes_fit_whatever_labels_occur():
    # a label's type must not decide whether a fit exists: with classes [0., 1.] both data sets fit
    X, _, _ = _label_pair()
    y = np.zeros(len(X))
    y2 = y.copy()
    y2[0] = 1.0
    for yy in (y, y2):
        est = PrivateLogisticRegression(data_norm=1.0, classes=[0.0, 1.0], random_state=0).fit(X, yy)
        assert est.coef_.shape == (1, X.shape[1])


def _zero_row_makers():
    from skdp.preprocessing import PrivateRowNormScaler

    common = dict(random_state=0)
    return [
        lambda B: PrivateLogisticRegression(data_norm=B, classes=[0, 1], **common),
        lambda B: PrivateHuberSVM(data_norm=B, classes=[0, 1], perturbation="output", **common),
        lambda B: PrivateLogisticRegression(data_norm=B, classes=[0, 1], perturbation="gradient",
                                            max_iter=20, **common),
        lambda B: PrivatePCA(n_components=2, data_norm=B, **common),
        lambda B: PrivateOLS(data_norm=B, label_bound=1.0, **common),
        lambda B: PrivateOLS(data_norm=B, label_bound=1.0, method="sketch", **common),
        lambda B: PrivateRandomProjection(n_components=2, data_norm=B, **common),
        lambda B: PrivateRowNormScaler(norm_range=(0.01, B), **common),
    ]


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("i", range(8))
def test_a_zero_row_raises_no_numeric_warning(i, sparse):
    # a zero row under a bound above 4 made B / tiny overflow: a RuntimeWarning that
    # appeared only when the data had such a row (review 15), on every route's clipping
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.3, 0.3, (400, 5))
    y = (X[:, 0] > 0).astype(int)
    X[7] = 0.0
    if sparse:
        X = sp.csr_matrix(X)
    for B in (7.0, 1e30):
        est = _zero_row_makers()[i](B)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est.fit(X, y)


@pytest.mark.parametrize("bound, match", [(1e160, "above 3.4e"), (2.0**-536, "below 2.94e")])
@pytest.mark.parametrize("i", range(7))  # (the row-norm scaler's range is not raised to powers)
def test_a_bound_beyond_float64_powers_is_refused_before_the_charge(i, bound, match):
    # data_norm = 1e160 overflowed R**2 in the calibrations: an OverflowError with errno text;
    # data_norm = 2^-536 let the gradient's squared norm underflow to 0, and the output
    # route's certificate accepted W = 0 on D but not on D' (review 14, F2: a leak)
    ledger = BudgetLedger(10.0, 1e-3)
    est = _zero_row_makers()[i](bound)
    est.set_params(accountant=ledger)
    X = np.random.default_rng(0).uniform(-0.3, 0.3, (100, 3))
    with pytest.raises(ValueError, match=match):
        est.fit(X, (X[:, 0] > 0).astype(int))
    assert ledger.spent.epsilon == 0.0 and ledger.spent.delta == 0.0


@pytest.mark.parametrize("Cls", CLASSIFIERS)
def test_a_zero_gradient_raises_no_warning_in_the_gradient_route(Cls):
    # review 14, F3: clip / max(norm, 1e-300) overflowed for a zero per-row gradient under a
    # public clip_norm above ~1.8e8, one RuntimeWarning per step only if the data had one
    rng = np.random.default_rng(0)
    X = rng.uniform(-1e9, 1e9, (300, 3))
    y = (X[:, 0] > 0).astype(int)
    X[5] = 0.0
    est = Cls(data_norm=2e10, clip_norm=1e9, classes=[0, 1], perturbation="gradient",
              fit_intercept=False, max_iter=20, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        est.fit(X, y)


@pytest.mark.parametrize("i", range(7))
def test_complex_or_string_dtypes_are_refused_before_the_charge(i):
    # review 13: the declared dtype decides these errors, which came after the charge
    X = np.random.default_rng(0).uniform(-0.3, 0.3, (100, 3))
    y = (X[:, 0] > 0).astype(int)
    for bad_X, bad_y, match in [(X.astype(complex), y, "Complex data"),
                                (X.astype(str), y, "dtype str not"),
                                (X, y.astype(complex), "Complex data")]:
        ledger = BudgetLedger(10.0, 1e-3)
        est = _zero_row_makers()[i](1.0)
        est.set_params(accountant=ledger)
        if isinstance(est, (PrivatePCA, PrivateRandomProjection)) and bad_y is not y:
            continue  # (they ignore y)
        with pytest.raises(ValueError, match=match):
            est.fit(bad_X, bad_y)
        assert ledger.spends == []


@pytest.mark.parametrize("Cls", CLASSIFIERS)
def test_poisson_dpsgd_is_calibrated_before_the_charge(Cls):
    # review 14, F1: with batch_size < n the DP-SGD noise was calibrated after the charge, so
    # "delta is too small" (decided by epsilon, delta, n, batch_size) came after spending
    X = _unit_rows(400) / 3
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetLedger(1e6, 0.5, composition="basic")
    est = Cls(perturbation="gradient", batch_size=50, epsilon=60.0, delta=1e-5, data_norm=1.0,
              classes=[0, 1], accountant=ledger, random_state=0)
    with pytest.raises(ValueError, match="delta is too small"):
        est.fit(X, y)
    assert ledger.spends == []


@pytest.mark.parametrize("Cls", CLASSIFIERS)
def test_poisson_dpsgd_refuses_an_epsilon_its_accountant_cannot_reach(Cls):
    # at epsilon = 1e-6 the PLD accountant (discretised at epsilon / 500) tried to allocate
    # 131 GiB and raised a MemoryError (before the charge, but no clear refusal)
    X = _unit_rows(400) / 3
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetLedger(1.0, 0.5, composition="basic")
    est = Cls(perturbation="gradient", batch_size=50, epsilon=1e-6, delta=1e-5, data_norm=1.0,
              classes=[0, 1], accountant=ledger, random_state=0)
    with pytest.raises(ValueError, match="below the supported 0.001.*batch_size=None"):
        est.fit(X, y)
    assert ledger.spends == []
    assert not hasattr(est, "coef_")


def test_a_sparse_dataframe_is_calibrated_as_the_sparse_matrix_it_becomes():
    # review 14, F6: sp.issparse was False for a DataFrame of sparse columns before the charge,
    # so the release was calibrated with the dense kernel's rounding bound while scikit-learn's
    # validation made it CSR and the sparse kernel (deeper sums) computed the statistic
    pd = pytest.importorskip("pandas")
    import scipy.sparse as sp

    Xs = sp.random(200_000, 4, density=0.3, format="csr", random_state=1)
    Xdf = pd.DataFrame.sparse.from_spmatrix(Xs)
    for make in (lambda: PrivateStandardScaler(bounds=(-1, 1), with_mean=False, random_state=0),
                 lambda: PrivatePCA(data_norm=1.0, random_state=0)):
        a = make().fit(Xs).noise_spec_.query.l2_bound
        b = make().fit(Xdf).noise_spec_.query.l2_bound
        assert a == b


def test_value_errors_after_the_charge_say_the_budget_counts_as_spent():
    # review 15: a NaN found after the charge spent the budget without saying so
    X = _unit_rows(100) / 2
    y = (X[:, 0] > 0).astype(int)
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="counts as spent"):
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(Xn, y)
    # review 27, F3: weights out of their range and labels outside the classes said nothing
    for fit in (lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(
                    X, y, sample_weight=np.full(len(y), 2.0)),
                lambda: PrivateOLS(data_norm=1.0, label_bound=1.0).fit(
                    X, y * 1.0, sample_weight=-np.ones(len(y))),
                lambda: PrivatePCA(data_norm=1.0, n_components=1).fit(
                    X, sample_weight=np.full(len(y), np.nan)),
                lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 2]).fit(X, y)):
        with pytest.raises(ValueError, match="counts as spent"):
            fit()
    Xs = X.astype(object)
    Xs[0, 0] = "red"  # text in a numeric input: the advice is to encode it
    with pytest.raises(ValueError, match="counts as spent.*OneHotEncoder"):
        PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(Xs, y)
    pca = PrivatePCA(data_norm=1.0, n_components=1).fit(X)
    with pytest.raises(ValueError, match="NaN") as info:  # predict/transform spend nothing
        pca.transform(Xn)
    assert "spent" not in str(info.value)


def test_huge_finite_rows_raise_no_warning_in_the_gradient_route_and_row_norm_scaling():
    # review 16: the gradient route's row norms computed inf * 0 for a finite row whose norm
    # overflows (clip_norm below the bound), and PrivateRowNormScaler.transform divided a huge
    # norm by norm_ < 1: RuntimeWarnings only on such data
    from skdp.preprocessing import PrivateRowNormScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 4)) / 2
    y = (X[:, 0] > 0).astype(int)
    X[0] = -1.7e308
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        PrivateLogisticRegression(perturbation="gradient", data_norm=1.0, clip_norm=0.5,
                                  classes=[0, 1], delta=1e-6, random_state=0).fit(X, y)
        sc = PrivateRowNormScaler(norm_range=(0.01, 0.5), random_state=0).fit(X[1:])
        out = sc.transform(X)
    assert np.all(np.isfinite(out)) and np.linalg.norm(out, axis=1).max() <= 1 + 1e-12


def test_private_projections_clip_rows_beyond_the_bound_in_transform():
    # review 17, f4: transform of a finite row of 1.5e308 gave inf, which a private step after
    # the projection in a pipeline refused after its own charge
    import scipy.sparse as sp

    X = _unit_rows(300, d=4) / 2
    for est in (PrivatePCA(n_components=2, data_norm=1.0, random_state=0),
                PrivateRandomProjection(n_components=2, data_norm=1.0, random_state=0)):
        est.fit(X)
        Xh = X[:3].copy()
        Xh[0] = [1.5e308, 0.0, 0.0, 0.0]
        Xh[1] *= 5.0  # beyond the bound: scaled to norm 1 first
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            out = est.transform(Xh)
            out_sparse = est.transform(sp.csr_matrix(Xh))
        assert np.all(np.isfinite(out))
        np.testing.assert_allclose(out_sparse, out)
        scaled = Xh[1] / np.linalg.norm(Xh[1])
        np.testing.assert_allclose(out[1], est.transform(scaled[None, :])[0])
        np.testing.assert_allclose(out[2], est.transform(Xh[2:3])[0])  # inside: unchanged


@pytest.mark.parametrize("which", ["RP", "OLS sketch"])
def test_a_sparse_chunk_of_zero_rows_fits_like_its_neighbour(which):
    # review 19, f1: the grid sketch's integer Gram quantises CSR input chunk by chunk; for a
    # chunk storing no value np.bincount returned int64 and the in-place float sum raised,
    # after the charge, exactly when that chunk's records were all zero rows (n = 8193: the
    # last chunk is the last record alone, zero in D' and not in D)
    import scipy.sparse as sp
    from skdp.random_projection import check_sketch_plan

    n, d = 8193, 5
    m = check_sketch_plan("RP", n, d, PrivateRandomProjection()._sketch_rows(d), 1.0, 1e-6, 1.0,
                          False)[0]["m"]
    assert n % min(10_000, 2 ** (52 - 2 * m)) == 1  # the case: a chunk of one record
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = np.clip(X @ rng.normal(size=d), -1, 1)
    for last in (rng.normal(size=d) * 0.1, np.zeros(d)):
        X[-1] = last
        ledger = BudgetLedger(10.0, 1e-3)
        if which == "RP":
            est = PrivateRandomProjection(n_components=2, data_norm=1.0, delta=1e-6,
                                          accountant=ledger, random_state=0).fit(sp.csr_matrix(X))
        else:
            est = PrivateOLS(method="sketch", data_norm=1.0, label_bound=1.0, delta=1e-6,
                             accountant=ledger, random_state=0).fit(sp.csr_matrix(X), y)
        check_is_fitted(est)
        assert len(ledger.spends) == 1


def test_float32_transforms_saturate_inside_the_public_bounds():
    # review 19, f3: public bounds reach 2^128, above float32's largest value 3.4e38; a float32
    # record inside them projected (PCA: X V^T - mean V^T, whitening), centred (scaler) or
    # projected (random projection) to inf, and the private step after it in a pipeline or a
    # search refused the data after its own charge, exactly when a record was on the far side
    from skdp.preprocessing import PrivateStandardScaler

    big = np.finfo(np.float32).max
    R = 3.0e38
    X = np.zeros((1000, 2), dtype=np.float32)
    X[:, 0], X[:, 1] = -0.99 * R, 1e37
    far = np.array([[0.99 * R, 0.0]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # silently, too
        pca = PrivatePCA(n_components=1, data_norm=R, epsilon=20.0, delta=1e-6,
                         random_state=0).fit(X)
        assert np.abs(pca.transform(far)).max() == big  # inf before: saturated now
        assert pca.transform(far).dtype == np.float32
        scaler = PrivateStandardScaler(bounds=(-R, R), epsilon=5.0, random_state=0).fit(
            np.full((1000, 1), -0.99 * R, dtype=np.float32))
        out = scaler.transform(far[:, :1])
        assert np.isfinite(out).all() and out.dtype == np.float32
        # review 21, F1: at bounds of 2^128 scale_ exceeds float32's range; cast first, it
        # made inf / inf = NaN exactly for a record far from mean_ (and 0 for the others)
        big32 = np.finfo(np.float32).max
        wide = PrivateStandardScaler(bounds=([-2.0**128], [2.0**128]), epsilon=0.5,
                                     random_state=4).fit(
            np.tile(np.array([[-big32], [big32]], dtype=np.float32), (5, 1)))
        rows = np.array([[-big32], [0.0], [big32]])
        out32 = wide.transform(rows.astype(np.float32))
        assert np.isfinite(out32).all() and out32.dtype == np.float32
        np.testing.assert_allclose(out32, wide.transform(rows), rtol=1e-6)
        rp = PrivateRandomProjection(n_components=1, data_norm=2.0**128, random_state=0,
                                     allow_float_sketch=True).fit(X.astype(np.float64))
        # (|x . v| <= data_norm_ exceeds the float32 range only by rounding: a stand-in
        # component of norm 2 makes the product overflow)
        rp.components_ = np.array([[2.0, 0.0]])
        assert np.abs(rp.transform(far)).max() == big
    # whitening a component whose noisy variance is clamped: |x . v| / sqrt(eps) in float32
    Xw = np.zeros((2000, 2))
    Xw[:, 0] = np.random.default_rng(0).uniform(-0.5, 0.5, 2000) * 1e25
    for seed in range(50):
        pca = PrivatePCA(n_components=2, whiten=True, data_norm=1e25, epsilon=1.0,
                         random_state=seed).fit(Xw.astype(np.float32))
        if pca.explained_variance_[1] == 0.0:
            break
    assert pca.explained_variance_[1] == 0.0
    Z = pca.transform(np.array([[0.0, 0.9e25]], dtype=np.float32))
    assert np.isfinite(Z).all() and np.abs(Z).max() == big
    Z64 = pca.transform(np.array([[0.0, 0.9e25]]))  # float64: the value itself
    assert Z64.dtype == np.float64 and np.abs(Z64).max() > big


def test_lowered_C_warning_names_no_value_of_an_inferred_bound():
    # review 19, f4: with data_norm inferred, the objective route's limit on C follows the
    # largest row, and the warning printed C_ (0.314 vs 0.0349 when one record was 3x longer)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    X /= np.linalg.norm(X, axis=1)[:, None]
    y = (X[:, 0] > 0).astype(int)
    texts = []
    for longest in (1.0, 3.0):
        Xi = X.copy()
        Xi[0] *= longest
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            est = PrivateLogisticRegression(classes=[0, 1], perturbation="objective", C=1e3,
                                            random_state=0).fit(Xi, y)
        texts.append(sorted(str(w.message) for w in rec if w.category is UserWarning))
        assert any("the fitted C_" in t for t in texts[-1])
        assert est.C_ < 1e3
    assert texts[0] == texts[1]


def test_ols_string_labels_are_converted_without_values_and_checked_finite():
    # review 18, F1/F5: scikit-learn's y_numeric converts only object labels; a numpy string y
    # reached np.asarray(y, float64), whose error quoted the label, and "nan" / "inf" strings
    # skipped the finiteness check ("inf" was clipped silently)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 3
    y = np.clip(X[:, 0], -1, 1).astype(str)
    for bad, match in (("SSN=078-05-1120", "cannot be converted to float"),
                       ("nan", "NaN or infinity"), ("inf", "NaN or infinity")):
        yb = y.copy()
        yb[7] = bad
        for labels in (yb, list(yb)):
            with pytest.raises(ValueError, match=match) as err:
                PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6).fit(X, labels)
            assert "078-05" not in str(err.value)
    assert PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6).fit(X, y).coef_.shape == (3,)


def test_scale_by_bounds_refuses_a_cell_without_its_value():
    # review 18, F3: scale_by_bounds runs on private rows (a FunctionTransformer ahead of a
    # private step) and numpy's conversion error quoted the cell
    from skdp.preprocessing import scale_by_bounds

    X = np.array([[1.0, "patient-4711 HIV+"], [2.0, 3.0]], dtype=object)
    with pytest.raises(ValueError, match="cannot be converted to float") as err:
        scale_by_bounds(X, bounds=([0, 0], [10, 10]))
    assert "4711" not in str(err.value) and err.value.__context__ is None


@pytest.mark.parametrize("n", [50, 197])
def test_grid_sketch_never_wraps_its_factor_around_int64(n):
    # review 18, F2: the long-double plan bounded the factor's grid integers |F / p_F| only by
    # their digits; at d = 1 and small n they passed 2^63 and the int64 cast wrapped around
    # (a RuntimeWarning after the charge, at n = 197 for some data sets only) and the release
    # read no row: the sketch of X was the sketch of zeros under the same seed
    from skdp.mechanisms.ndis import sketch_plan

    rng = np.random.default_rng(0)
    X = rng.uniform(0.2, 1.0, size=(n, 1))
    plan, _ = sketch_plan(n, 1, PrivateRandomProjection()._sketch_rows(1), 1.0, 1e-6, 1.0)
    assert plan is not None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a = PrivateRandomProjection(data_norm=1.0, delta=1e-6, random_state=0).fit(X)
        b = PrivateRandomProjection(data_norm=1.0, delta=1e-6, random_state=0).fit(0 * X)
    assert not np.array_equal(a.sketch_, b.sketch_)  # (the same noise: the rows count)


@pytest.mark.parametrize("make, needs_y", [
    (lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="output"), True),
    (lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="gradient",
                                       max_iter=20), True),
    (lambda: PrivateHuberSVM(data_norm=1.0, classes=[0, 1], perturbation="objective"), True),
    (lambda: PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6), True),
    (lambda: PrivatePCA(n_components=2, data_norm=1.0), False),
    (lambda: PrivateRandomProjection(n_components=2, data_norm=1.0), False),
], ids=["lr-output", "lr-gradient", "huber-objective", "ols", "pca", "rp"])
def test_the_process_error_state_decides_nothing(make, needs_y):
    # review 18, F4: under an application's np.seterr(under="raise") a record of denormals
    # made a fit raise FloatingPointError after its charge while its neighbour fitted
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = (X[:, 0] > 0).astype(int) if not isinstance(make(), PrivateOLS) else np.clip(X[:, 0], -1, 1)
    Xd = X.copy()
    Xd[5] = 5e-324
    old = np.seterr(all="raise")
    try:
        for data in (X, Xd):
            ledger = BudgetLedger(10.0, 1e-3)
            est = make().set_params(accountant=ledger, random_state=0)
            est.fit(data, y) if needs_y else est.fit(data)
            assert len(ledger.spends) == 1
            if hasattr(est, "transform"):
                est.transform(Xd)
    finally:
        np.seterr(**old)


def test_sparse_duplicate_entries_are_summed_in_float64():
    # review 18, F6: duplicates were summed in the input's dtype after the charge; two stored
    # float32 3e38 made inf and each estimator failed with a different misleading error (and
    # a RuntimeWarning), two float64 1e308 likewise: a finite float64 sum now fits, one beyond
    # the float64 range is refused like a NaN
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) / 3
    y = (X[:, 0] > 0).astype(int)

    def with_duplicate(value, dtype):  # row 5 stores (5, 0) twice, as value
        Xd = X.copy()
        Xd[5] = [value, 0.0, 0.0]
        A = sp.csr_matrix(Xd.astype(dtype))
        k = A.indptr[5]
        data = np.insert(A.data, k, A.data[k])
        indices = np.insert(A.indices, k, 0)
        indptr = A.indptr.copy()
        indptr[6:] += 1
        return sp.csr_matrix((data, indices, indptr), shape=X.shape)

    makers = [lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
              lambda: PrivateOLS(data_norm=1.0, label_bound=1.0, delta=1e-6),
              lambda: PrivatePCA(n_components=2, data_norm=1.0, delta=1e-6),
              lambda: PrivateRandomProjection(n_components=2, data_norm=1.0, delta=1e-6)]
    for make in makers:
        target = y if not isinstance(make(), PrivateOLS) else np.clip(X[:, 0], -1, 1)
        Xs = with_duplicate(3e38, np.float32)
        assert not Xs.has_canonical_format
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            make().set_params(random_state=0).fit(Xs, target)
        with pytest.raises(ValueError, match="NaN or infinity: duplicate entries"):
            make().fit(with_duplicate(1e308, np.float64), target)


@pytest.mark.parametrize("i", range(7))
def test_structures_and_dtypes_that_never_fit_are_refused_before_the_charge(i):
    # review 18, F10-F14: each of these is decided by a type, a declared dtype or a number of
    # dimensions, and was refused after the charge (np.matrix by scikit-learn, with its message
    # withheld; a 0-d y; pandas periods and intervals; complex weights; on dask, an object X,
    # a string y or complex weights; labels of a kind the declared classes can never match)
    pd = pytest.importorskip("pandas")
    da = pytest.importorskip("dask.array")
    X = np.random.default_rng(0).uniform(-0.3, 0.3, (100, 3))
    y = (X[:, 0] > 0).astype(int)
    w = np.full(100, 0.5)
    period = pd.DataFrame({"a": X[:, 0], "p": pd.period_range("2020-01", periods=100, freq="M")})
    interval = pd.DataFrame({"a": X[:, 0], "i": pd.interval_range(0, 100)})
    dask_ok = i in (3, 4, 6)  # PCA, OLS (ssp), random projection
    cases = [((np.asmatrix(X), y), {}, "np.matrix"),
             ((X, np.asmatrix(y).T), {}, "np.matrix"),
             ((np.ma.masked_array(X, mask=X > 0.2), y), {}, "masked arrays"),
             ((X, np.array(1)), {}, "got a scalar"),
             ((period, y), {}, "dtype period"),
             ((interval, y), {}, "dtype interval"),
             ((X, y), {"sample_weight": w.astype(complex)}, "Complex data"),
             # review 21, F8: pandas' default sparse float column (fill value NaN)
             ((pd.DataFrame({"a": pd.arrays.SparseArray(X[:, 0])}), y), {}, "dtype Sparse")]
    if dask_ok:
        cases += [((da.from_array(X.astype(object), chunks=50), y), {}, "dtype object"),
                  ((da.from_array(X, chunks=50), da.from_array(y.astype(str), chunks=50)), {},
                   "dtype str not"),
                  ((da.from_array(X, chunks=50), y),
                   {"sample_weight": da.from_array(w.astype(complex), chunks=50)},
                   "Complex data")]
    make = _zero_row_makers()[i]
    if i < 3:  # classifiers: labels that can never match the declared classes
        cases += [((X, y.astype(str)), {}, "y holds strings"),
                  ((X, y), {"classes": ["a", "b"]}, "y holds numbers"),
                  # review 21, F7: bytes, dates, and categories of numbers against strings
                  ((X, y.astype("S1")), {"classes": ["0", "1"]}, "y holds bytes"),
                  ((X, y.astype("datetime64[D]")), {}, "y holds dates"),
                  ((X, pd.Series(y).astype("category")), {"classes": ["a", "b"]},
                   "y holds numbers")]
    if isinstance(make(1.0), PrivateOLS):  # a regressor's labels are numbers (review 21, F7)
        cases += [((X, pd.Series(pd.period_range("2020-01", periods=100, freq="M"))), {},
                   "y of dtype period"),
                  ((X, y.astype("datetime64[D]")), {}, "y of dtype datetime64")]
    for args, extra, match in cases:
        est = make(1.0)
        if isinstance(est, (PrivatePCA, PrivateRandomProjection)) and args[1] is not y:
            continue  # (they ignore y)
        ledger = BudgetLedger(10.0, 1e-3)
        params = {k: v for k, v in extra.items() if k != "sample_weight"}
        est.set_params(accountant=ledger, **params)
        fit_params = {k: v for k, v in extra.items() if k == "sample_weight"}
        if fit_params and "sample_weight" not in inspect.signature(type(est).fit).parameters:
            continue  # (the signature of the fit itself: the wrapper's is *args, **kwargs)
        with pytest.raises((ValueError, TypeError), match=match):
            est.fit(*args, **fit_params)
        assert ledger.spends == [], (type(est).__name__, match)


def test_a_refit_keeps_nothing_of_the_previous_fit():
    # review 18, F16: float_safe_ and delta_reserve_ (set by the sketch route only) survived
    # a refit by the ssp route, describing a release that the model no longer holds
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)) / 3
    y = np.clip(X[:, 0], -1, 1)
    est = PrivateOLS(method="sketch", data_norm=1.0, label_bound=1.0, delta=1e-6,
                     random_state=0).fit(X, y)
    assert hasattr(est, "float_safe_")
    est.set_params(method="ssp").fit(X, y)
    fresh = PrivateOLS(method="ssp", data_norm=1.0, label_bound=1.0, delta=1e-6,
                       random_state=0).fit(X, y)
    assert sorted(k for k in vars(est) if k.endswith("_")) == sorted(
        k for k in vars(fresh) if k.endswith("_"))


@pytest.mark.parametrize("Cls", CLASSIFIERS)
@pytest.mark.parametrize("mechanism, epsilon, match", [
    ("gaussian_continuous", 1e-4, "objective perturbation with delta > 0 supports"),
    ("analytic_gaussian_continuous", 1.0, "objective perturbation with delta > 0 supports"),
    # (passed through to AMP by name, review 21, F2; its calibration refuses this epsilon)
    ("product_noise", 50.0, "delta is too small")])
def test_unverified_mechanisms_are_calibrated_before_the_charge(Cls, mechanism, epsilon, match):
    # review 18, F8: the objective route's refusals of these mechanisms at delta > 0, decided
    # by the parameters alone, came after the charge (the pre-charge check and calibration
    # skipped unverified names)
    X = _unit_rows(300) / 3
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetLedger(100.0, 1e-3)
    est = Cls(data_norm=1.0, classes=[0, 1], perturbation="objective", mechanism=mechanism,
              epsilon=epsilon, delta=1e-6, accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the mechanism's PrivacyGuaranteeWarning)
        with pytest.raises(ValueError, match=match):
            est.fit(X, y)
    assert ledger.spends == []


@pytest.mark.parametrize("mechanism, epsilon", [("product_noise", 1.0), ("product_noise", 5.0),
                                                ("r1smg", 0.2)])
def test_amp_pass_through_mechanisms_still_fit(mechanism, epsilon):
    # review 21, F2: refusing every non-pure unverified mechanism on the objective route at
    # delta > 0 made the documented pass-through names (product_noise, r1smg) unusable
    X = _unit_rows(300) / 3
    y = (X[:, 0] > 0).astype(int)
    with pytest.warns(PrivacyGuaranteeWarning):
        est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], perturbation="objective",
                                        mechanism=mechanism, epsilon=epsilon, delta=1e-6,
                                        random_state=0).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("method", ["ls", "als"])
def test_unverified_ols_methods_are_calibrated_before_the_charge(method):
    # review 18, F9: their noise multiplier (public inputs only) was computed after the charge
    X = _unit_rows(300) / 3
    y = np.clip(X[:, 0], -1, 1)
    ledger = BudgetLedger(10.0, 1e-3)
    est = PrivateOLS(method=method, data_norm=1.0, label_bound=1.0, epsilon=1e-6, delta=1e-12,
                     accountant=ledger)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the method's PrivacyGuaranteeWarning)
        with pytest.raises(ValueError, match=f"method='{method}'.* has no noise multiplier"):
            est.fit(X, y)
    assert ledger.spends == []


def test_scale_by_bounds_ignores_the_process_error_state():
    # review 21, F6: it runs on private rows in a pipeline, after a previous step's charge; under
    # np.seterr(under="raise") a denormal cell raised FloatingPointError there
    from skdp.preprocessing import scale_by_bounds

    old = np.seterr(all="raise")
    try:
        out = scale_by_bounds(np.array([[1.0, 5e-309], [2.0, 3.0]]), bounds=([0, 0], [4, 1e10]))
    finally:
        np.seterr(**old)
    assert np.all(np.isfinite(out))


def test_sparse_fill_value_is_not_quoted():
    """Review 23, F3: the refusal of a pandas sparse column named its dtype, which prints the
    fill value; pandas advises setting it to the column's most common value (private)."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    column = rng.choice([31415.92, 0.5], p=[0.7, 0.3], size=100)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 100),
                      "b": pd.arrays.SparseArray(column, fill_value=31415.92)})
    for est in (PrivatePCA(n_components=1, data_norm=1e5),
                PrivateOLS(data_norm=1e5, label_bound=1.0)):
        ledger = BudgetLedger(10.0, 1e-3)
        est.set_params(accountant=ledger)
        with pytest.raises(ValueError, match="dtype Sparse") as info:
            est.fit(X, np.zeros(100))
        assert "31415" not in str(info.value) and ledger.spends == []


_CORRUPT_SPARSE_SCRIPT = r"""
import warnings; warnings.simplefilter("ignore")
import numpy as np, scipy.sparse as sp
from skdp import (BudgetLedger, PrivateHuberSVM, PrivateLogisticRegression, PrivateOLS,
                  PrivatePCA, PrivateRandomProjection)
from skdp.model_selection import PrivateGridSearchCV
from skdp.preprocessing import PrivateStandardScaler

def corrupt(fmt):
    X = sp.random(60, 3, density=0.5, random_state=0, format="csr") * 0.5
    if fmt == "coo":
        X = X.tocoo()
        X.col[4] = 98765
        return X
    if fmt == "lil":
        X = X.tolil()
        X.rows[next(i for i, r in enumerate(X.rows) if r)][0] = 98765
        return X
    if fmt == "dok":
        X = X.todok()
        getattr(X, "_dict", X)[(3, 98765)] = 0.5  # (its dict's methods bypass scipy's checks)
        return X
    X = X.tobsr(blocksize=(1, 1)) if fmt == "bsr" else X.asformat(fmt)
    X.indices = X.indices.astype(np.int64)
    X.indices[4] = 98765
    return X

y = np.tile([0, 1], 30)
for fmt in ("csr", "csc", "coo", "bsr", "lil", "dok"):
    for est in (PrivateLogisticRegression(data_norm=1, classes=[0, 1]),
                PrivateHuberSVM(data_norm=1, classes=[0, 1], perturbation="gradient"),
                PrivateOLS(data_norm=1, label_bound=1),
                PrivateOLS(method="sketch", data_norm=1, label_bound=1),
                PrivatePCA(n_components=2, data_norm=1),
                PrivateRandomProjection(n_components=2, data_norm=1),
                PrivateStandardScaler(bounds=(-1, 1), with_mean=False),
                PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1, classes=[0, 1]),
                                    {"C": [1.0, 0.1]}, epsilon=1.0)):
        est.set_params(accountant=BudgetLedger(100, 1e-2))
        try:
            est.fit(corrupt(fmt), y)
            print("FITTED", fmt, type(est).__name__)
        except ValueError as e:
            assert "structure is invalid" in str(e) and "98765" not in str(e), str(e)
            print("refused", fmt, type(est).__name__, flush=True)

# data of two dimensions (one row's values moved other rows' norms: review 25, F2)
X2 = sp.random(60, 3, density=0.5, random_state=0, format="csr")
X2.data = np.column_stack([X2.data, X2.data])
for est in (PrivateOLS(data_norm=1, label_bound=1), PrivateStandardScaler(bounds=(-1, 1),
            with_mean=False), PrivatePCA(n_components=2, data_norm=1)):
    try:
        est.fit(X2, y)
        print("FITTED 2-D data", type(est).__name__)
    except ValueError as e:
        assert "structure is invalid" in str(e), str(e)
        print("refused-2d", type(est).__name__, flush=True)

# inverse transforms read sparse input too (review 25, F3)
Xok = sp.random(60, 3, density=0.5, random_state=0, format="csr") * 0.5
for est in (PrivatePCA(n_components=2, data_norm=1), PrivateRandomProjection(n_components=2,
            data_norm=1), PrivateStandardScaler(bounds=(-1, 1), with_mean=False)):
    est.fit(Xok.toarray() if not isinstance(est, PrivateStandardScaler) else Xok)
    width = est.transform(Xok[:2]).shape[1]
    Z = sp.random(60, width, density=0.5, random_state=1, format="csr")
    Z.indices = Z.indices.astype(np.int64)
    Z.indices[4] = 10**7
    try:
        est.inverse_transform(Z)
        print("FITTED inverse", type(est).__name__)
    except ValueError as e:
        assert "structure is invalid" in str(e), str(e)
        print("refused-inverse", type(est).__name__, flush=True)

# valid small index dtypes: block pointers had wrapped in int8 (a crash, review 25, F1)
for dtype in (np.int8, np.uint8, np.int16):
    Xs = sp.random(400, 5, density=0.9, random_state=2, format="csr") * 0.4
    Xs.indices = Xs.indices.astype(dtype)
    for est in (PrivateLogisticRegression(data_norm=1, classes=[0, 1]),
                PrivateHuberSVM(data_norm=1, classes=[0, 1])):
        est.fit(Xs, np.tile([0, 1], 200))
        print("small-index-dtype fitted", np.dtype(dtype).name, type(est).__name__, flush=True)
"""


def test_corrupt_sparse_structure_is_refused_not_a_crash():
    """Review 23: a CSR matrix with a column index beyond its width crashed the process (a
    segfault in scipy's tocsc) after the charge, and so did BSR and LIL ones (review 24). Every
    fit refuses such a matrix (CSR, CSC, COO, BSR, LIL, DOK) with a value-free error. Run in a
    subprocess: a regression is a crash."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[1])  # this checkout's skdp
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get(
        "PYTHONPATH")])))
    res = subprocess.run([sys.executable, "-c", _CORRUPT_SPARSE_SCRIPT], capture_output=True,
                         text=True, timeout=300, cwd=root, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stdout.count("refused ") == 48 and "FITTED" not in res.stdout
    assert res.stdout.count("refused-2d") == 3 and res.stdout.count("refused-inverse") == 3
    assert res.stdout.count("small-index-dtype fitted") == 6


def test_score_and_search_delegations_quote_no_value():
    """Review 23 (notes): the classifiers' score quoted labels through scikit-learn's accuracy
    ("Mix of label input types ... Got ['<label>' ...]"), and the search's predict through a
    scikit-learn step quoted a cell; both now re-raise without values."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import Normalizer

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (200, 3))
    y = (X[:, 0] > 0).astype(int)
    secret = np.array(["SECRETLABEL"] + ["x"] * 199)

    def quotes_nothing(score):
        """Whether the scoring's error (scikit-learn >= 1.7 raises on labels of two kinds; 1.6
        scored them) names no value; a returned score is a float."""
        try:
            return isinstance(score(), float)
        except ValueError as exc:
            return "SECRET" not in str(exc)

    clf = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(X, y)
    assert quotes_nothing(lambda: clf.score(X, secret))
    ols = PrivateOLS(data_norm=1.0, label_bound=1.0).fit(X, X[:, 0])
    with pytest.raises(ValueError) as info:  # (labels that are not numbers)
        ols.score(X, secret)
    assert "SECRET" not in str(info.value)
    search = PrivateGridSearchCV(
        make_pipeline(Normalizer(), PrivateLogisticRegression(data_norm=1.0, classes=[0, 1])),
        {"privatelogisticregression__C": [1.0, 0.1]}, epsilon=1.0).fit(X, y)
    cells = X.astype(object)
    cells[7, 1] = "SECRETCELL 1234.5678"
    for method in ("predict", "predict_proba", "decision_function"):
        with pytest.raises(ValueError) as info:
            getattr(search, method)(cells)
        assert "SECRET" not in str(info.value) and "1234" not in str(info.value)
    assert quotes_nothing(lambda: search.score(X, secret))
    assert 0.0 <= search.score(X, y) <= 1.0 and 0.0 <= clf.score(X, y) <= 1.0


def test_a_private_transformer_refuses_a_y_of_another_length_before_its_charge():
    """Review 24 (older issue): in a Pipeline the first private step, a transformer, was charged
    and only the final step refused a y of the wrong length (public structure). The private
    transformers check y's length (and refuse a dask Series) before their charge."""
    from sklearn.pipeline import make_pipeline

    from skdp.preprocessing import PrivateRowNormScaler

    rng = np.random.default_rng(0)
    X = rng.uniform(-0.5, 0.5, (100, 3))
    y_short = (X[:60, 0] > 0).astype(int)
    for first in (PrivateStandardScaler(bounds=(-1, 1)), PrivatePCA(n_components=2, data_norm=1.0),
                  PrivateRandomProjection(n_components=2, data_norm=1.0),
                  PrivateRowNormScaler(norm_range=(0.01, 10.0))):
        ledger = BudgetLedger(10.0, 1e-3)
        first.set_params(accountant=ledger)
        pipe = make_pipeline(first, PrivateLogisticRegression(data_norm=4.0, classes=[0, 1],
                                                              accountant=ledger))
        with pytest.raises(ValueError, match="inconsistent numbers of samples|length"):
            pipe.fit(X, y_short)
        assert ledger.spends == [], type(first).__name__
        first.fit(X, (X[:, 0] > 0).astype(int))  # a y of the right length is still ignored


@pytest.mark.parametrize("Cls", CLASSIFIERS)
@pytest.mark.parametrize("zero_column", [False, True])
def test_a_diverging_gradient_route_releases_whatever_the_data(Cls, zero_column):
    # a public learning_rate far too large: the iterates (post-processing of the released
    # steps) reach inf, and 0 * inf in the margins of rows with a zero feature made the next
    # step's statistic NaN, so the fit raised after its charge or not depending on the rows
    X = _unit_rows(200, 4)
    y = (X[:, 0] > 0).astype(int)
    if zero_column:
        X[:, 2] = 0.0
    ledger = BudgetLedger(epsilon=10.0, delta=1e-4)
    est = Cls(data_norm=1.0, classes=[0, 1], perturbation="gradient", learning_rate=1e10,
              max_iter=40, random_state=0, accountant=ledger)
    with pytest.warns(ConvergenceWarning, match="learning_rate"):
        est.fit(X, y)
    assert not np.isfinite(est.coef_).all()
    assert est.privacy_spent_ is not None and len(ledger.spends) == 1


@pytest.mark.parametrize("kind", ["string", "inferred", "categorical"])
@pytest.mark.parametrize("search", [False, True])
def test_pandas_string_labels_against_numeric_classes_are_refused_before_the_charge(kind, search):
    # review 28, F2: pandas 3 infers StringDtype("str") for strings, which the dtype check
    # did not know (only the name "string"): the fit was refused after its charge
    pd = pytest.importorskip("pandas")
    X = _unit_rows(60) / 2
    labels = np.where(X[:, 0] > 0, "1", "0")
    y = {"string": lambda: pd.Series(labels, dtype="string"),
         "inferred": lambda: pd.Series(labels.tolist()),
         "categorical": lambda: pd.Series(pd.Categorical(labels.tolist()))}[kind]()
    inner = y.dtype.categories.dtype if kind == "categorical" else y.dtype
    if type(inner).__name__ != "StringDtype":
        pytest.skip("this pandas infers object strings (decided after the charge)")
    ledger = BudgetLedger(epsilon=10.0, delta=1e-4)
    est = PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger)
    if search:
        est = PrivateGridSearchCV(est, {"C": [1.0]}, epsilon=1.0)
    with pytest.raises(ValueError, match="no label could match"):
        est.fit(X, y)
    assert ledger.spends == []


@pytest.mark.parametrize("cell", ["int", "fraction", "decimal"])
def test_cells_beyond_float64_raise_the_masked_error(cell):
    # review 28, F3: OverflowError / decimal.InvalidOperation of the float conversion escaped
    # the masking (raw message, an exception type telling the kind of cell, no spent note)
    import decimal
    import fractions

    value = {"int": 10**400, "fraction": fractions.Fraction(10**400, 3),
             "decimal": decimal.Decimal("sNaN")}[cell]
    X = _unit_rows(40) / 2
    y = (X[:, 0] > 0).astype(int)
    Xo = X.astype(object)
    Xo[4, 0] = value
    fits = [lambda: PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]).fit(Xo, y),
            lambda: PrivatePCA(data_norm=1.0, n_components=1).fit(Xo),
            lambda: PrivateOLS(data_norm=1.0, label_bound=1.0).fit(X, Xo[:, 0]),
            lambda: PrivatePCA(data_norm=1.0, n_components=1).fit(X).transform(Xo)]
    for fit in fits:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(ValueError, match="cannot be converted to float") as info:
                fit()
        assert type(info.value) is ValueError and info.value.__context__ is None


def test_review_30_messages_and_sparse_y():
    # F5: a sparse y is refused by its type, before the charge (it was refused after it, and
    # the search said "labels not in the declared classes")
    import scipy.sparse as sps

    X = _unit_rows(80) / 2
    y = (X[:, 0] > 0).astype(int)
    ledger = BudgetLedger(epsilon=10.0, delta=1e-4)
    ys = sps.csr_matrix(y[:, None])
    for est in (PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=ledger),
                PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                    {"C": [1.0]}, epsilon=1.0, accountant=ledger)):
        with pytest.raises(ValueError, match="Sparse data was passed for y"):
            est.fit(X, ys)
    assert ledger.spends == []
    # F4: an unknown label type found after the charge says that the budget counts as spent
    with pytest.raises(ValueError, match="Unknown label type.*counts as spent"):
        PrivateLogisticRegression(data_norm=1.0, accountant=ledger).fit(X, X[:, 0] + 0.123)
    assert len(ledger.spends) == 1
    # F3: a scoring callable's ZeroDivisionError is not reported as a cell beyond float64
    search = PrivateGridSearchCV(PrivateLogisticRegression(data_norm=1.0, classes=[0, 1]),
                                 {"C": [1.0]}, epsilon=1.0, strategy="exhaustive",
                                 scoring=lambda est, Xv, yv: 1 // 0, score_bounds=(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"ZeroDivisionError.*counts as spent") as info:
            search.fit(X, y)
    assert "converted to float" not in str(info.value)


def test_an_output_route_charged_no_delta_releases_only_pure_noise(monkeypatch):
    # review 30: the output route recalibrates after its charge; a release that is not pure
    # after an (epsilon, 0) charge must not leave the fit (the inputs are the same today)
    from skdp.linear_model import _erm

    X = _unit_rows(300, 3) / 2
    y = (X[:, 0] > 0).astype(int)
    est = PrivateLogisticRegression(perturbation="output", data_norm=1.0, classes=[0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert est.privacy_spent_.delta == 0.0  # auto chose the grid Laplace here
    real, calls = _erm._output_spec, []

    def gaussian_after_the_charge(*args):
        calls.append(1)
        if len(calls) == 1:
            return real(*args)
        return real(*args[:-1], "analytic_gaussian")

    monkeypatch.setattr(_erm, "_output_spec", gaussian_after_the_charge)
    with pytest.raises(RuntimeError, match="report this as a bug"):
        clone(est).fit(X, y)


def test_callers_generator_advances_by_four_words_whatever_the_data():
    # review 32, F1: permute-and-flip's exact coins draw a number of words that depends
    # on the private count gaps; a Generator passed as random_state now only seeds a
    # child stream, so it leaves the fit in a state that does not depend on the rows
    from skdp.preprocessing import PrivateRowNormScaler

    rng0 = np.random.default_rng(1)
    X = rng0.normal(size=(150, 4)) * 0.4
    X /= np.maximum(1, np.linalg.norm(X, axis=1, keepdims=True))
    Xn = X.copy()
    Xn[0] = 0.0  # a neighbour: one row replaced
    reference = np.random.Generator(np.random.PCG64(11))
    reference.integers(0, 2**63, size=4)
    norms, states = [], []
    for data in (X, Xn):
        g = np.random.Generator(np.random.PCG64(11))
        est = PrivateRowNormScaler(epsilon=0.1, norm_range=(1e-3, 10.0), random_state=g).fit(data)
        norms.append(est.norm_)
        states.append(g.bit_generator.state)
    assert norms[0] == norms[1]  # the same release on both neighbours...
    assert states[0] == states[1] == reference.bit_generator.state  # ...and the same state


def test_text_dtypes_are_named_without_their_item_size():
    # review 32, F2: numpy's <U9 is the length of the longest private string
    from skdp import BudgetLedger, PrivateLogisticRegression, PrivatePCA

    X = np.random.default_rng(0).normal(size=(50, 3)) * 0.3
    messages = []
    for longest in ("1", "123456789"):
        y = np.array(["1"] * 25 + ["0"] * 24 + [longest])
        led = BudgetLedger(epsilon=10.0, delta=1e-3)
        with pytest.raises(ValueError) as err:
            PrivateLogisticRegression(data_norm=1.0, classes=[0, 1], accountant=led).fit(X, y)
        assert led.spent.epsilon == 0
        messages.append(str(err.value))
        Xs = np.array([["0.1", "0.2"]] * 19 + [["0.1", longest]])
        with pytest.raises(ValueError) as err:
            PrivatePCA(n_components=1, data_norm=1.0).fit(Xs)
        messages.append(str(err.value))
    assert messages[0] == messages[2] and messages[1] == messages[3]
    assert "<U" not in "".join(messages) and "dtype is str" in messages[0]


def test_date_dtypes_are_named_without_their_unit():
    # review 35, F2: numpy infers datetime64[D] or [us] from the finest value
    from skdp import PrivatePCA

    messages = []
    for values in (["2020-01-01", "2020-01-02"], ["2020-01-01", "2020-01-02T10:00:01.5"]):
        X = np.array([values] * 10, dtype="datetime64")
        with pytest.raises(ValueError) as err:
            PrivatePCA(n_components=1, data_norm=1.0).fit(X)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "dtype datetime64 not" in messages[0]
