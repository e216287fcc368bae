"""The privacy cost of a hyperparameter search, priced before it runs."""

import copy
import math
from numbers import Integral

import numpy as np
from scipy.optimize import brentq
from sklearn.base import clone, is_classifier
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import (KFold, ParameterGrid, ParameterSampler, PredefinedSplit,
                                     RepeatedKFold, RepeatedStratifiedKFold, ShuffleSplit,
                                     StratifiedKFold, StratifiedShuffleSplit, TimeSeriesSplit,
                                     check_cv)
from sklearn.model_selection._split import _CVIterableWrapper
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.utils.validation import _num_samples

from .._budget import PrivacyBudget, compose_basic
from ..base import PrivateEstimatorMixin, walk_estimators

__all__ = ["search_cost", "fit_cost", "selection_run_budget", "truncated_negative_binomial_mean",
           "truncated_negative_binomial_gamma"]


def truncated_negative_binomial_mean(eta, gamma):
    """Expected number of runs ``E[K]`` for ``K ~ D_{eta, gamma}``.

    ``D_{eta, gamma}`` is the truncated negative binomial law of Papernot &
    Steinke (2022) on ``k = 1, 2, ...``:
    ``P(K = k) = (1 - gamma)^k / (gamma^-eta - 1) * prod_{l<k} (l + eta) / (l + 1)``
    for ``eta > 0`` (the negative binomial ``NB(eta, gamma)`` conditioned on
    ``K >= 1``), and the logarithmic law
    ``P(K = k) = (1 - gamma)^k / (k log(1/gamma))`` for ``eta = 0``. Its mean
    is ``eta (1 - gamma) / (gamma (1 - gamma^eta))`` (``eta > 0``) and
    ``(1 - gamma) / (gamma log(1/gamma))`` (``eta = 0``); ``eta = 1`` is the
    geometric law of random stopping, mean ``1 / gamma``. ``gamma = 1`` is
    the limit ``K = 1``.
    """
    eta, gamma = float(eta), float(gamma)
    if not (eta >= 0 and 0 < gamma <= 1):
        raise ValueError(f"need eta >= 0 and 0 < gamma <= 1, got eta={eta}, gamma={gamma}.")
    if gamma == 1.0:
        return 1.0
    log_gamma = math.log(gamma)
    if eta == 0.0:
        return (1.0 - gamma) / (gamma * -log_gamma)
    return eta * (1.0 - gamma) / (gamma * -math.expm1(eta * log_gamma))


def truncated_negative_binomial_gamma(eta, mean):
    """The ``gamma`` with ``E[K] = mean`` for ``K ~ D_{eta, gamma}``.

    The mean decreases from infinity (``gamma -> 0``) to 1 (``gamma = 1``),
    so the root is unique; it is found on ``log(gamma)`` by Brent's method.
    Only public inputs enter (the grid size or the user's choice).
    """
    eta, mean = float(eta), float(mean)
    if not mean >= 1:
        raise ValueError(f"the expected number of runs must be >= 1, got {mean}.")
    if mean == 1.0:
        return 1.0

    def gap(t):
        return math.log(truncated_negative_binomial_mean(eta, math.exp(t))) - math.log(mean)

    lo = -1.0
    while gap(lo) < 0:  # mean(e^lo) still below the target: move towards gamma -> 0
        lo *= 2.0
    return math.exp(brentq(gap, lo, -1e-12, xtol=1e-15, rtol=1e-14))


def selection_run_budget(strategy, epsilon, delta, n_candidates, eta=None):
    """Budget of one base run so that the whole selection is (epsilon, delta)-DP.

    * ``"random_stopping"``: Liu & Talwar (2019, Theorem 3.4): pure eps_r-DP
      runs, random stopping is ``3 eps_r``-DP: ``eps_r = epsilon / 3``.
    * ``"negative_binomial"``: Papernot & Steinke (2022, Theorem 2, in its
      pure-DP limit, see :class:`PrivateGridSearchCV`): pure eps_r-DP runs,
      ``K ~ D_{eta, gamma}``, the selection is ``(2 + eta) eps_r``-DP for
      every ``gamma``: ``eps_r = epsilon / (2 + eta)``.
    * ``"exhaustive"``: basic composition of ``n_candidates`` runs:
      ``(epsilon / n_candidates, delta / n_candidates)``.

    Both randomised strategies need pure runs: ``delta`` must be 0.
    """
    if strategy == "exhaustive":
        return PrivacyBudget(epsilon / n_candidates, delta / n_candidates)
    if delta != 0:
        raise ValueError(f"strategy={strategy!r} needs pure (delta = 0) base runs.")
    factor = 3.0 if strategy == "random_stopping" else 2.0 + float(eta)
    return PrivacyBudget(epsilon / factor, 0.0)


def _parts(estimator):
    """``(name, part)`` of a composition whose ``fit`` fits each part exactly once (the steps
    of a Pipeline, a FeatureUnion's transformers, a ColumnTransformer's transformers and its
    remainder), or ``None`` for any other estimator."""
    if isinstance(estimator, Pipeline):
        return list(estimator.steps)
    if isinstance(estimator, FeatureUnion):
        return list(estimator.transformer_list)
    if isinstance(estimator, ColumnTransformer):
        return [(name, part) for name, part, _ in estimator.transformers] + \
            [("remainder", estimator.remainder)]
    return None


def _leaf_steps(estimator, prefix=""):
    """``(parameter prefix, step)`` of every step below the compositions of :func:`_parts`.

    ``"passthrough"``, ``"drop"``, ``None`` and a ``FrozenEstimator`` (whose
    ``fit`` does nothing: it holds a model fitted beforehand) fit nothing and
    are skipped.
    """
    if isinstance(estimator, FrozenEstimator):
        return
    parts = _parts(estimator)
    if parts is None:
        yield prefix, estimator
        return
    for name, part in parts:
        if part is not None and not isinstance(part, str):
            yield from _leaf_steps(part, f"{prefix}{name}__")


def _holds_private_estimator(estimator):
    """Whether a private estimator sits anywhere in ``estimator``'s parameters."""
    return any(isinstance(obj, PrivateEstimatorMixin)
               for obj, _ in walk_estimators(estimator, fitted=False))


def _private_steps(estimator):
    """``(parameter prefix, step)`` of every private step of ``estimator``.

    A private step is an instance of :class:`skdp.base.PrivateEstimatorMixin`
    (whatever its parameters are called: a non-private estimator's parameter
    named ``epsilon``, such as SVR's, is not a budget), reached through
    Pipeline, ColumnTransformer and FeatureUnion only: their ``fit`` fits each
    step exactly once, so one fit of ``estimator`` spends the basic
    composition of its private steps' budgets. Any other estimator holding a
    private one (OneVsRestClassifier, BaggingClassifier, MultiOutputRegressor,
    TransformedTargetRegressor, ...) may fit it several times on the same rows,
    each fit a release at the full budget, and how many times can depend on
    the data (the number of classes): it raises ``TypeError``.
    """
    steps = []
    for prefix, step in _leaf_steps(estimator):
        if isinstance(step, PrivateEstimatorMixin):
            steps.append((prefix, step))
        elif _holds_private_estimator(step):
            where = f"the step {prefix[:-2]!r}" if prefix else "the estimator"
            raise TypeError(
                f"{where} is a {type(step).__name__} holding a private estimator. Only private "
                "steps reached through Pipeline, ColumnTransformer and FeatureUnion (whose fit "
                "fits each step once) can be priced and given a share of a budget: a "
                f"{type(step).__name__} may fit its inner estimator several times on the same "
                "rows (once per class, output or resample), each fit a release with the full "
                "budget, so the true cost is a multiple of the stated one. Use a private "
                "estimator that handles the task itself (skdp's classifiers take several "
                "classes), or fit a wrapper that refits on the same rows (OneVsRest, "
                "MultiOutput, CalibratedClassifierCV's folds) on its own with a ledger as "
                "the inner estimator's accountant, which records every fit. Not a wrapper "
                "that resamples or reweights the rows (bagging with bootstrap, AdaBoost): a "
                "record repeated k times, or weights computed from other records, are not "
                "covered by a fit's guarantee, so its ledger's total is then no bound."
            )
    return steps


def _step_parameters(estimator):
    """``(epsilon, delta)`` parameters of every private step (see :func:`_private_steps`);
    ``delta`` is ``None`` where the step sets it from the training size."""
    out = []
    for _, step in _private_steps(estimator):
        params = step.get_params(deep=False)
        delta = params.get("delta", 0.0)
        out.append((float(params["epsilon"]), None if delta is None else float(delta)))
    return out


def _step_budgets(estimator, n_samples):
    """(epsilon, delta) of every private step (see :func:`_private_steps`)."""
    # delta=None (PrivateOLS / PrivateRandomProjection): delta = 1 / n^2
    return [PrivacyBudget(eps, 1.0 / float(n_samples) ** 2 if delta is None else delta)
            for eps, delta in _step_parameters(estimator)]


def fit_cost(estimator, n_samples):
    """Budget one ``fit`` of ``estimator`` (or a pipeline) on ``n_samples`` rows spends.

    The basic composition of its private steps' ``(epsilon, delta)``: the
    instances of :class:`skdp.base.PrivateEstimatorMixin` reached through
    Pipeline, ColumnTransformer and FeatureUnion, each fitted once. Any other
    wrapper of a private estimator (OneVsRestClassifier, BaggingClassifier,
    ...) may fit it several times and raises ``TypeError``. It is an upper
    bound: a step whose release turns out pure epsilon-DP (``mechanism="auto"``
    choosing the grid Laplace) is charged ``(epsilon, 0)`` by the fit, and is
    priced here at its ``delta``.
    """
    steps = _step_budgets(estimator, n_samples)
    return compose_basic(steps) if steps else PrivacyBudget.zero()


def search_cost(search, X, y=None, groups=None):
    """Total (epsilon, delta) a search will spend, computed before it runs.

    Every fit of a private estimator is a release charged to its ledger, so a
    scikit-learn search costs the basic composition of ``n_candidates x
    n_splits`` fits, plus one refit on all rows when ``refit`` is set (the
    largest epsilon and the largest delta of the candidates are counted, since
    which one wins is not known in advance). Like :func:`fit_cost` it may
    exceed what the ledger records (by the delta of pure releases). Check the price against the ledger before starting, and run the
    search with ``error_score="raise"``: otherwise a refused fit becomes a NaN
    score and the search goes on spending. One fit costs :func:`fit_cost`:
    a private estimator inside a wrapper that may fit it several times
    (OneVsRestClassifier, BaggingClassifier, ...) raises ``TypeError``.

    A ``RandomizedSearchCV`` is priced on its own candidates when its
    ``random_state`` is an int (drawn here with a generator seeded by it, as
    the search does). With ``None`` or a ``RandomState`` the candidates
    cannot be known in advance (and drawing them would advance the user's
    generator, which this function never does): the price is given only
    when every candidate costs the same (no distribution over a private
    step's ``epsilon`` or ``delta``; the same budgets for every combination
    of listed values), and ``ValueError`` is raised otherwise.

    A private step with ``delta=None`` spends ``1 / n_train^2`` on a fit of
    ``n_train`` rows: it is priced on the smallest training set of the
    splits, computed from the splitter and the number of rows alone (KFold,
    StratifiedKFold, whose fold sizes do not depend on the labels,
    ShuffleSplit, StratifiedShuffleSplit, TimeSeriesSplit, PredefinedSplit
    and explicit splits; y is not read for it). With other splitters (group
    splitters) ``ValueError``: give the private steps an explicit delta.
    Explicit splits that repeat a training row (a bootstrap) raise
    ``ValueError``: the calibration assumes every row is a distinct record.
    Successive-halving searches (``HalvingGridSearchCV``) refit candidates on
    growing resources and raise ``TypeError``.

    A :class:`PrivateGridSearchCV` costs its ``(epsilon, delta)`` whatever
    its strategy: the strategy only decides how that total is shared among
    the runs (see :func:`selection_run_budget`), and the total is charged
    once, before the data are read.

    Parameters
    ----------
    search : GridSearchCV, RandomizedSearchCV or PrivateGridSearchCV
        Unfitted search (only its parameters are read).
    X : array-like
        Only its number of rows is read (public).
    y, groups : array-like, default=None
        Passed to scikit-learn's ``check_cv`` and ``get_n_splits``, as the
        search does, to choose the splitter and count the splits.

    Returns
    -------
    PrivacyBudget

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import GridSearchCV
    >>> from skdp import BudgetLedger, PrivateLogisticRegression
    >>> from skdp.model_selection import search_cost
    >>> X, y = np.zeros((100, 2)), np.arange(100) % 2
    >>> gs = GridSearchCV(PrivateLogisticRegression(epsilon=0.5, delta=1e-6, data_norm=1.0,
    ...                                             classes=[0, 1]), {"C": [0.1, 1.0]}, cv=3)
    >>> search_cost(gs, X, y)   # 2 candidates x 3 folds + refit = 7 fits
    PrivacyBudget(epsilon=3.5, delta=7e-06)
    >>> BudgetLedger(3.0, 1e-5).remaining.covers(search_cost(gs, X, y))
    False
    """
    from ._search import PrivateGridSearchCV

    if isinstance(search, PrivateGridSearchCV):
        return PrivacyBudget(float(search.epsilon), float(search.delta))
    if any(c.__name__ == "BaseSuccessiveHalving" for c in type(search).__mro__):
        raise TypeError(
            f"search_cost: a {type(search).__name__} fits its candidates again at every "
            "iteration, on training sets whose sizes depend on its resource schedule, and is "
            "not priced (as n_candidates x n_splits it would be under-priced). Use "
            "GridSearchCV, RandomizedSearchCV or PrivateGridSearchCV.")
    n = _num_samples(X)
    estimator = search.estimator
    if hasattr(search, "param_grid"):
        candidates = list(ParameterGrid(search.param_grid))
    elif hasattr(search, "param_distributions"):
        candidates = _sampled_candidates(search)
    else:
        raise TypeError(f"cannot price a {type(search).__name__}: not a parameter search.")
    cv = check_cv(search.cv, y, classifier=is_classifier(estimator))
    n_splits = cv.get_n_splits(X, y, groups)
    # scikit-learn's splitters never repeat a training row; explicit splits and other
    # splitters may (a bootstrap): a record that appears k times in one fit moves its
    # statistic k times as far as the calibration assumes
    if isinstance(cv, _CVIterableWrapper) or not type(cv).__module__.startswith(
            "sklearn.model_selection"):
        for train, _ in cv.split(X, y, groups):
            train = np.asarray(train)
            if train.dtype == bool:  # a boolean mask (scikit-learn accepts them)
                continue
            if len(np.unique(train)) != len(train):
                raise ValueError(
                    "search_cost: a split repeats training rows (a bootstrap): a record that "
                    "appears k times moves the statistic k times as far as the calibration "
                    "assumes, so the fits are not (epsilon, delta)-DP for it. Use splits "
                    "without repeated rows.")
    fits = [clone(estimator).set_params(**cand) for cand in candidates]
    n_train = n
    if any(_budget_signature(est)[1] for est in fits):  # a delta set from the training size
        n_train = _smallest_training_set(cv, n)
    costs = [fit_cost(est, n_train) for est in fits]
    parts = [c for c in costs for _ in range(n_splits)]
    if search.refit:
        # the refit is one of the candidates, chosen by the data: the componentwise maximum
        # bounds each (the lexicographic one could pick a smaller delta: review 29, F1)
        refits = [fit_cost(est, n) for est in fits]
        parts.append(PrivacyBudget(max(b.epsilon for b in refits), max(b.delta for b in refits)))
    return compose_basic(parts) if parts else PrivacyBudget.zero()


def _budget_signature(estimator):
    """The private steps' ``(epsilon, delta)`` parameters (``delta=None``: set from the
    training size), sorted, and whether one of them is ``None``."""
    sig = _step_parameters(estimator)
    return sorted(sig, key=repr), any(d is None for _, d in sig)


#: more grid points than this in a randomized search's lists are not enumerated
_MAX_ENUMERATED = 10_000


def _sampled_candidates(search):
    """The candidates of a randomized search, or as many of the same cost.

    With an int ``random_state`` the search draws them with a generator of
    its own seeded by it, and so does this function: the same candidates.
    Otherwise they cannot be drawn here (``None``: fresh entropy when the
    search runs; a ``RandomState``: drawing would advance the user's
    generator, and the search would then draw others), so the price is exact
    only when every candidate costs the same: no sampled distribution sets a
    private step's ``epsilon`` or ``delta``, and every combination of the
    listed values gives the private steps the same budgets (checked over all
    of them). Otherwise ``ValueError``.
    """
    rs = search.random_state
    if isinstance(rs, Integral) and not isinstance(rs, bool):
        return list(ParameterSampler(search.param_distributions, search.n_iter,
                                     random_state=rs))
    n_draws = len(ParameterSampler(search.param_distributions, search.n_iter))  # draws nothing
    dists = search.param_distributions
    signatures, point = set(), {}
    for dist in dists if isinstance(dists, (list, tuple)) else [dists]:
        listed = {k: v for k, v in dist.items() if not hasattr(v, "rvs")}
        sampled = {k for k, v in dist.items() if hasattr(v, "rvs")}
        grid = ParameterGrid(listed)
        if len(grid) > _MAX_ENUMERATED:
            signatures.add(None)  # too many to check: refused below
            break
        for point in grid:
            est = clone(search.estimator).set_params(**point)
            budget_names = {prefix + key for prefix, _ in _private_steps(est)
                            for key in ("epsilon", "delta")}
            signatures.add(None if sampled & budget_names else repr(_budget_signature(est)[0]))
    if len(signatures) != 1 or None in signatures:
        how = ("None, so the search draws them afresh when it runs" if rs is None else
               f"a {type(rs).__name__}: drawing them here would advance that generator and "
               "the search would then draw others")
        raise ValueError(
            f"search_cost: the candidates of this {type(search).__name__} differ in privacy "
            "cost (a sampled parameter sets a private step's epsilon or delta, or replaces a "
            f"step), and they cannot be known in advance: random_state is {how}. Give the "
            "search an int random_state: search_cost then draws exactly its candidates."
        )
    return [point] * n_draws  # every candidate costs what this one costs


def _smallest_training_set(cv, n):
    """The fewest training rows of a split of ``cv`` on ``n`` rows (for ``delta=None``,
    ``1 / n_train^2``), from the splitter's parameters and ``n`` alone.

    The splitters listed split by the number of rows only: their splits are
    computed on a placeholder of ``n`` rows without columns (a copy of the
    splitter, so that a ``RandomState`` in it is not advanced). Stratified
    k-fold reads the labels but its fold sizes do not depend on them (the
    i-th test fold takes ``ceil((n - i) / k)`` rows, as k-fold's), and a
    stratified shuffle split trains on exactly ``train_size`` rows; both are
    priced as their unstratified twin, without reading y. Group splitters
    (and other splitters) train on a number of rows that depends on the
    groups or is not known here: ``ValueError``.
    """
    if type(cv) is StratifiedKFold:
        cv = KFold(cv.n_splits)
    elif type(cv) is RepeatedStratifiedKFold:  # keeps its split count in cvargs
        cv = KFold(cv.cvargs["n_splits"])
    elif type(cv) is StratifiedShuffleSplit:
        cv = ShuffleSplit(1, test_size=cv.test_size, train_size=cv.train_size)
    elif type(cv) in (KFold, RepeatedKFold, ShuffleSplit, TimeSeriesSplit, PredefinedSplit,
                      _CVIterableWrapper):
        cv = copy.deepcopy(cv)
    else:
        raise ValueError(
            f"search_cost: a private step has delta=None (1 / n_train^2, set from the number "
            f"of rows it is fitted on), and the training sets of {type(cv).__name__} do not "
            "follow from the number of rows alone. Give the private steps an explicit delta, "
            "or use KFold, StratifiedKFold, ShuffleSplit, TimeSeriesSplit or explicit splits."
        )
    return min(_n_rows(train) for train, _ in cv.split(np.empty((n, 0))))


def _n_rows(train):
    """Rows of a training index (a boolean mask counts its True entries)."""
    train = np.asarray(train)
    return int(np.count_nonzero(train)) if train.dtype == bool else len(train)
