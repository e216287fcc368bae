"""Shared machinery of the private estimators.

Every private estimator inherits :class:`PrivateEstimatorMixin`, which

* declares the privacy parameters (``epsilon``, ``delta``, ``data_norm``,
  ``random_state``, ``accountant``) in ``_parameter_constraints`` so that
  scikit-learn validates them in ``fit`` (never in ``__init__``);
* runs the fit protocol below (:meth:`_start_fit`);
* sets ``privacy_spent_`` and the tags that differential privacy makes
  necessary (``non_deterministic``: fits are random by design).

The fit protocol
----------------
1. Parameters are validated (scikit-learn's ``_parameter_constraints``).
2. Every error decided by **public** inputs alone (parameters, ``n_samples``
   and ``n_features``, which are public under the replace-one relation, the
   number of dimensions of X, the length and width of y, the chunk sizes of
   a dask input) is raised:
   :meth:`_public_shape` and :meth:`_check_public`. Nothing has been charged
   yet.
3. The budget is charged to the accountant (check-and-spend, atomic). A fit
   that would overspend raises :class:`~skdp.BudgetExceededError` and
   spends nothing.
4. The noise generator is derived (:func:`skdp._validation.fit_generator`):
   fresh OS entropy for ``random_state=None``; a seeded fit charged to a
   ledger mixes the spend's serial number into the seed, so two fits on one
   ledger never share a noise draw.
5. Only now is the data read. From here on, whether the fit returns and the
   shape of what it returns depend on public inputs only; the errors left
   are format errors of the data (NaN, inf, wrong dtype, labels outside the
   declared ``classes``, sample weights outside ``[0, 1]``), which are messages to the data holder and carry no
   value computed from the data (every validation of the data goes through
   :func:`skdp._validation.call_without_values`). The charge is kept
   (conservative).

A fit that raises at any step leaves no fitted attribute behind
(:func:`private_fit`): ``check_is_fitted`` fails afterwards, also after a
failed refit of a previously fitted estimator.
"""

import functools
from numbers import Integral, Real

import numpy as np
from sklearn.frozen import FrozenEstimator
from sklearn.preprocessing import FunctionTransformer, Normalizer, OneHotEncoder
from sklearn.utils._param_validation import HasMethods, Interval

from ._budget import PrivacyBudget
from ._filter import PURE_RELEASE
from ._ledger import _LedgerMixin
from ._validation import (MAX_PUBLIC_BOUND, MIN_PUBLIC_BOUND, check_epsilon_delta,
                          check_public_structure, fit_generator)

__all__ = ["PrivateEstimatorMixin", "private_fit", "discard_fitted_state", "for_release"]

#: parameters whose ``None`` means "infer a public bound from the private data"
BOUND_PARAMETERS = ("data_norm", "label_bound", "classes", "bounds", "norm_range")

#: fitted attributes of scikit-learn meta-estimators that hold the seeds handed to their members
#: (:func:`for_release` clears them)
_SEED_ATTRIBUTES = frozenset({"_seeds"})


def _estimators_in(value, depth=0):
    """Estimators in a parameter or fitted attribute (lists, tuples, dicts: pipeline steps,
    column transformers' ``transformers_``, a search's ``best_estimator_``), and in the
    attributes of scikit-learn's helper objects that hold fitted members without being
    estimators (``CalibratedClassifierCV.calibrated_classifiers_``: review 23, F4)."""
    if hasattr(value, "get_params") and not isinstance(value, type):
        yield value
    elif depth < 4 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _estimators_in(item, depth + 1)
    elif depth < 4 and isinstance(value, dict):
        for item in value.values():
            yield from _estimators_in(item, depth + 1)
    elif (depth < 4 and not isinstance(value, type) and hasattr(value, "__dict__")
          and type(value).__module__.split(".")[0] == "sklearn"):
        for item in vars(value).values():
            yield from _estimators_in(item, depth + 1)


def walk_estimators(root, fitted=True, skip=None):
    """Every estimator reachable from ``root``, once each, as ``(estimator, frozen)``.

    Reached through each one's parameters (``get_params(deep=False)``: pipeline
    steps, column transformers' members, a meta-estimator's ``estimator``) and,
    with ``fitted=True``, its attributes too (the fitted clones a
    ColumnTransformer keeps in ``transformers_``, a search's
    ``best_estimator_``), through lists, tuples and dicts. ``frozen`` says
    that a :class:`~sklearn.frozen.FrozenEstimator` holds it (fitted elsewhere).
    An estimator for which ``skip(estimator)`` is true is neither yielded nor
    entered. The caller may change an estimator before the walk resumes: what
    it holds is read afterwards.
    """
    todo, seen = [(root, False)], set()
    while todo:
        obj, frozen = todo.pop()
        if id(obj) in seen or (skip is not None and skip(obj)):
            continue
        seen.add(id(obj))
        yield obj, frozen
        values = list(obj.get_params(deep=False).values())
        if fitted:
            values += list(vars(obj).values())
        inner_frozen = frozen or isinstance(obj, FrozenEstimator)
        todo.extend((e, inner_frozen) for value in values for e in _estimators_in(value))


def warn_large_delta(who, delta, n_samples):
    """:class:`~skdp.LargeDeltaWarning` when ``delta`` is at least ``1 / n`` for the public
    ``n_samples`` records a fit or a search reads (Dwork & Roth 2014, sec. 2.3)."""
    if (n_samples and isinstance(delta, Real) and not isinstance(delta, bool)
            and 0 < delta < 1 and delta * n_samples >= 1):
        from .exceptions import LargeDeltaWarning, warn_at_caller

        warn_at_caller(
            f"{who}: delta={delta:g} is at least 1/n for the n={n_samples} records it reads: "
            "(epsilon, delta)-DP then allows publishing some record outright. The guarantee "
            "holds as stated but is weak; choose delta well below 1/n (for example 1/n^2).",
            LargeDeltaWarning)


def for_release(estimator):
    """A copy of a fitted estimator that carries no seed and no ledger, fit to publish.

    A fitted estimator keeps its parameters: an int ``random_state`` (or a
    ``Generator``, whose state can be rewound) lets whoever holds the object
    regenerate the noise of its fit, and an ``accountant`` ledger carries the
    serial numbers from which seeded fits derived their streams. The copy
    (:func:`copy.deepcopy`) has every ``random_state`` and ``accountant``
    parameter, nested ones included (pipelines, column transformers,
    one-vs-rest and other meta-estimators, searches), set to ``None``, and
    every attribute that holds a generator, a seed sequence, a ledger or the
    seeds a bagging ensemble gave its members (``_seeds``) cleared; the
    release itself is unchanged, so the copy predicts and transforms exactly
    as the original. Publishing it reveals only the release, whatever seed
    the experiment used. A third-party meta-estimator that keeps derived
    seeds under another name is not known to it: check such a copy.

    A fitted step that is neither private nor stateless (a ``StandardScaler``
    fitted on the private rows keeps their mean and scale; a meta-estimator
    such as ``OneVsRestClassifier`` keeps the classes it saw) is copied as
    it is, with a :class:`~skdp.PrivacyLeakWarning` naming it: its fitted
    attributes were computed from the data without noise. Steps fitted on
    public data can be wrapped in ``sklearn.frozen.FrozenEstimator``.

    A scikit-learn search (``GridSearchCV``, ``RandomizedSearchCV``, any
    ``BaseSearchCV``), at the top or anywhere inside, is refused with a
    ``TypeError``: its ``cv_results_`` and ``best_score_`` are exact scores
    on the private validation folds, not a release. Publish its
    ``best_estimator_``, or search with
    :class:`~skdp.model_selection.PrivateGridSearchCV`, whose fitted
    attributes are the selected model, the selected grid point, noisy
    scores and public settings of the search.

    Parameters
    ----------
    estimator : fitted estimator (or Pipeline, or PrivateGridSearchCV)

    Returns
    -------
    estimator : a new object

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import PrivatePCA
    >>> from skdp import for_release
    >>> X = np.random.default_rng(0).normal(size=(500, 3)) / 3
    >>> pca = PrivatePCA(n_components=2, data_norm=1.0, random_state=0).fit(X)
    >>> published = for_release(pca)
    >>> published.random_state is None, np.array_equal(published.transform(X), pca.transform(X))
    (True, True)
    """
    import copy

    out = copy.deepcopy(estimator)
    from sklearn.model_selection._search import BaseSearchCV

    seedlike = (np.random.Generator, np.random.RandomState, np.random.SeedSequence,
                np.random.BitGenerator, _LedgerMixin)
    not_private = []
    for obj, frozen in walk_estimators(out):
        if isinstance(obj, BaseSearchCV):
            where = "the estimator is" if obj is out else "it holds"
            raise TypeError(
                f"for_release: {where} a scikit-learn {type(obj).__name__}, which keeps "
                "cv_results_ and best_score_: exact validation scores computed on the private "
                "data without noise, which the copy would publish. Release the selected model "
                "instead (for_release(search.best_estimator_)), or select with "
                "skdp.model_selection.PrivateGridSearchCV, whose scores are noised and covered "
                "by its guarantee."
            )
        if not frozen and _keeps_unprotected_fit(obj):  # (frozen: fitted on public data)
            not_private.append(type(obj).__name__)
        params = obj.get_params(deep=False)
        for key in ("random_state", "accountant"):
            if key in params and params[key] is not None:
                setattr(obj, key, None)  # as set_params would, without revalidation
        for key, value in list(vars(obj).items()):
            # any other attribute holding a generator, a seed sequence or a ledger, and the
            # seeds scikit-learn's bagging ensembles keep for their members (_seeds)
            if isinstance(value, seedlike) or key in _SEED_ATTRIBUTES:
                setattr(obj, key, None)
    if not_private:
        from .exceptions import PrivacyLeakWarning, warn_at_caller

        warn_at_caller(
            f"for_release: the copy holds fitted steps that are not private "
            f"({', '.join(sorted(set(not_private)))}): their fitted attributes were computed "
            "from the data they were fitted on without noise, and publishing the copy publishes "
            "them. Fit such steps on public data (sklearn.frozen.FrozenEstimator) or use "
            "skdp.preprocessing's private scalers.",
            PrivacyLeakWarning)
    return out


def _keeps_unprotected_fit(obj):
    """Whether ``obj`` is a fitted scikit-learn estimator whose fitted attributes are neither a
    DP release nor public: not private, not a container that fits only its steps (Pipeline,
    ColumnTransformer, FeatureUnion, FrozenEstimator, PrivateGridSearchCV), not stateless."""
    from sklearn.base import BaseEstimator
    from sklearn.compose import ColumnTransformer
    from sklearn.exceptions import NotFittedError
    from sklearn.pipeline import FeatureUnion, Pipeline
    from sklearn.utils.validation import check_is_fitted

    from .model_selection import PrivateGridSearchCV

    containers = (Pipeline, ColumnTransformer, FeatureUnion, PrivateGridSearchCV, FrozenEstimator)
    if (not isinstance(obj, BaseEstimator) or isinstance(obj, (PrivateEstimatorMixin,) + containers)
            or _fits_nothing(obj)):
        return False
    try:
        check_is_fitted(obj)
    except (NotFittedError, TypeError):
        return False
    return True


def _fits_nothing(step):
    """Whether a non-private step keeps nothing computed from the rows it is fitted on.

    A short list of scikit-learn's stateless transformers (exact types: a
    subclass may learn in ``fit``): ``Normalizer`` (each row scaled by its own
    norm), and ``FunctionTransformer`` unless its ``fit`` round-trips private
    rows through ``inverse_func`` (``check_inverse`` with both functions
    given), which warns or not depending on their values. Both learn only
    the structure of X (``n_features_in_``, ``feature_names_in_``), which
    is public. And ``OneHotEncoder`` with explicit ``categories``, without
    infrequent categories (``min_frequency`` and ``max_categories`` None) and
    ignoring unknown ones (``handle_unknown`` "ignore" or
    "infrequent_if_exist"): its fitted categories are the given lists, and
    no value decides whether its fit raises.
    """
    if type(step) is Normalizer:
        return True
    if type(step) is OneHotEncoder:
        return (not isinstance(step.categories, str) and step.min_frequency is None
                and step.max_categories is None
                and step.handle_unknown in ("ignore", "infrequent_if_exist"))
    if type(step) is FunctionTransformer:
        return not (step.check_inverse and step.func is not None
                    and step.inverse_func is not None)
    return False


def discard_fitted_state(estimator):
    """Delete every fitted attribute (``name_``, as ``check_is_fitted`` sees them)."""
    for name in [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]:
        delattr(estimator, name)


def fixed_float_state(method):
    """Decorator: ``method`` runs with every floating-point error ignored, whatever the
    process's ``np.seterr``.

    Code that reads private data must not let the error state decide what it does: under
    an application's ``np.seterr(under="raise")`` a denormal record made a fit raise
    ``FloatingPointError`` after its charge (and ``"warn"`` made it warn) while its
    neighbour fitted silently. Non-finite results are checked explicitly where they matter
    (the statistics' finiteness checks), never signalled.
    """

    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with np.errstate(all="ignore"):
            return method(*args, **kwargs)

    return wrapper


def private_fit(fit):
    """Decorator: a fit that raises leaves nothing that looks fitted.

    Wrap it outside ``sklearn.base._fit_context``. A fit starts from nothing
    fitted: the attributes of a previous fit are removed first (an attribute
    that only some routes set, such as ``PrivateOLS``'s ``float_safe_``, had
    survived a refit by another route). On any exception every fitted attribute
    is removed before the exception propagates. The fit runs in a fixed
    floating-point error state (:func:`fixed_float_state`).
    """
    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        discard_fitted_state(self)
        try:
            with np.errstate(all="ignore"):  # (fixed_float_state, inline)
                return fit(self, *args, **kwargs)
        except BaseException:
            discard_fitted_state(self)
            raise

    return wrapper


class ValueFreeScoreMixin:
    """``score`` of the scikit-learn mixin after it in the bases, its ``ValueError`` /
    ``TypeError`` re-raised without values (:func:`~skdp._validation.call_without_values`).

    Scoring reads data that may be private too (held-out rows): scikit-learn's accuracy
    quoted labels ("Mix of label input types ... Got ['<label>' ...]", review 23), while
    ``predict`` already masked its own errors.
    """

    def score(self, X, y, sample_weight=None):
        """Return the score of ``predict`` on ``(X, y)`` (scikit-learn's: accuracy for a
        classifier, R^2 for a regressor); errors carry no value of the data."""
        import scipy.sparse as sp

        from ._validation import call_without_values

        for name, value in (("y", y), ("sample_weight", sample_weight)):
            if sp.issparse(value):  # scipy's and scikit-learn's messages count stored values
                raise ValueError(f"{name} must be dense for score, not a scipy sparse matrix or "
                                 "array (decided by its type).")
        return call_without_values(super().score, X, y, sample_weight=sample_weight,
                                   name=("X", "y"))


class PrivateEstimatorMixin:
    """Mixin for skdp estimators: privacy parameters, the fit protocol, tags."""

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "data_norm": [None, Interval(Real, 0, None, closed="neither")],
        "random_state": ["random_state", np.random.Generator],
        "accountant": [None, HasMethods(["spend"])],
    }

    def _privacy_budget(self):
        """The (epsilon, delta) one fit spends (validated)."""
        eps, delta = check_epsilon_delta(self.epsilon, self.delta)
        return PrivacyBudget(eps, delta)

    def _check_public(self, n_samples, n_features):
        """Raise every error decided by public inputs alone (before the charge).

        ``n_samples`` / ``n_features`` are ``None`` when the structure of X
        does not tell them. Subclasses extend this; the base checks the
        sample count.
        """
        if n_samples is not None and n_samples < self._min_samples:
            raise ValueError(
                f"{type(self).__name__} needs at least {self._min_samples} samples; got "
                f"n_samples={n_samples}."
            )
        for name in ("data_norm", "label_bound", "clip_norm"):
            value = getattr(self, name, None)
            if isinstance(value, Real) and not isinstance(value, bool) and value > MAX_PUBLIC_BOUND:
                raise ValueError(
                    f"{name}={value!r} is above {MAX_PUBLIC_BOUND:.3g}: the calibrations raise "
                    "it to powers in float64, which overflow. Rescale the data by a public "
                    f"factor so that {name} is moderate (the release scales back exactly)."
                )
            if isinstance(value, Real) and not isinstance(value, bool) and 0 < value < MIN_PUBLIC_BOUND:
                raise ValueError(
                    f"{name}={value!r} is below {MIN_PUBLIC_BOUND:.3g}: the squares of the "
                    "statistics' entries can underflow in float64, which the floating-point "
                    "error bounds do not cover. Rescale the data by a public factor so that "
                    f"{name} is moderate."
                )

    _min_samples = 1

    def _warn_large_delta(self, n_samples, budget=None):
        """:func:`warn_large_delta` for the fit's delta (its budget's: a route may spend none)."""
        delta = budget.delta if budget is not None else getattr(self, "delta", None)
        warn_large_delta(type(self).__name__, delta, n_samples)

    def _public_shape(self, X, y=None, *, requires_y=False):
        """``(n_samples, n_features)`` of X from its structure, after the structural errors.

        Step 2 starts here: X that is not 2-D, X without features, a dask X
        or ``y`` with unknown chunk sizes, a missing ``y`` (``requires_y``), a
        ``y`` whose length differs from X's or, for a single-output
        estimator, a ``y`` of several columns raise before the charge
        (:func:`skdp._validation.check_public_structure`: no value is read).
        Either entry is ``None`` when the structure does not tell it.
        """
        return check_public_structure(X, y, estimator=self, requires_y=requires_y)

    @staticmethod
    def _check_charged_shape(charged, validated):
        """The release calibrated before the charge is only used for the shape it was calibrated
        for: a validated shape that differs from the public one read before the charge (an
        internal inconsistency, never seen) raises instead of silently recalibrating, since a
        filtering ledger has already composed the charged release's curve."""
        if tuple(charged) != tuple(validated):
            raise RuntimeError(
                f"{tuple(validated)} rows and features were validated after the charge, "
                f"{tuple(charged)} were read from the input's structure before it; nothing was "
                "released. Please report this as a bug.")

    def _charge_budget(self, budget=None, description="fit", curve=None):
        """Check-and-spend ``budget`` on the accountant, then record it.

        Must be called before any private data is touched. ``curve`` is the
        release's :class:`skdp._filter.GaussianCurve` when the fit's whole
        release is Gaussian (computed from public inputs only), so that a
        filtering ledger composes it by its GDP parameter; it is passed only
        to skdp's own ledgers (other accountants get ``spend(budget, source=,
        description=)``). Returns the budget and the ledger's spend record
        (``None`` without a ledger), and stores the budget in
        ``privacy_spent_``.
        """
        budget = self._privacy_budget() if budget is None else budget
        accountant = getattr(self, "accountant", None)
        record = None
        if accountant is not None:
            kwargs = {"source": type(self).__name__, "description": description}
            if curve is not None and (isinstance(accountant, _LedgerMixin)
                                      or getattr(accountant, "takes_curve", False)):
                kwargs["curve"] = curve
            record = accountant.spend(budget, **kwargs)
        self.privacy_spent_ = budget
        return budget, record

    def _start_fit(self, n_samples, n_features, budget=None, curve=None):
        """Steps 2-4 of the fit protocol: public checks, charge, generator.

        ``curve``: see :meth:`_charge_budget`; a callable is called after the
        public checks (it may calibrate from public inputs) and must return a
        curve, ``None`` or :data:`skdp._filter.PURE_RELEASE` (the release
        calibrated from public inputs is pure epsilon-DP: the ledger and
        ``privacy_spent_`` get ``(epsilon, 0)``, whatever ``delta`` was
        given; :func:`skdp._filter.release_charge`).

        Returns
        -------
        budget : PrivacyBudget
            The budget the release is calibrated for (the delta it was given,
            also when its pure release is charged none).
        rng : numpy.random.Generator
            The only source of this fit's noise.
        """
        self._check_public(n_samples, n_features)
        if callable(curve):
            curve = curve()
        budget = self._privacy_budget() if budget is None else budget
        charged = budget
        if curve is PURE_RELEASE:  # (no delta is spent: no warning about a large one)
            charged, curve = PrivacyBudget(budget.epsilon, 0.0), None
        else:
            self._warn_large_delta(n_samples, budget)
        _, record = self._charge_budget(charged, curve=curve)
        return budget, fit_generator(self.random_state, record)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags


def is_integral(value):
    return isinstance(value, Integral) and not isinstance(value, bool)
