"""Differentially private hyperparameter selection.

:class:`PrivateGridSearchCV` chooses hyperparameters from a grid with an
end-to-end (epsilon, delta) guarantee that covers the training runs, the
validation scores and the choice itself.

Why not GridSearchCV with private estimators? ``sklearn.model_selection.
GridSearchCV`` works with skdp estimators (and an ``accountant`` ledger
records every fit), but each of its ``n_candidates x n_folds + 1`` fits is a
separate release, and its validation scores are exact: choosing the argmax of
exact scores leaks. Its total cost is the basic composition of all fits and
its selection step is not covered at all.
"""

import contextlib
import functools
import math
import numbers
import threading
import warnings
from fractions import Fraction
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_regressor
from sklearn.model_selection import ParameterGrid
from sklearn.compose import ColumnTransformer
from sklearn.frozen import FrozenEstimator
from sklearn.pipeline import FeatureUnion, Pipeline
from sklearn.preprocessing import FunctionTransformer, Normalizer, OneHotEncoder
from sklearn.utils import get_tags
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted, indexable

from .._budget import PrivacyBudget
from .._ledger import _Capture, _Captured
from ..exceptions import PrivacyGuaranteeWarning, warn_at_caller
from .._stats import check_unit_sample_weight, check_weight_structure, rounding_gamma
from .._validation import (MAX_PUBLIC_BOUND, MIN_PUBLIC_BOUND, call_without_values,
                           check_classes, check_public_structure, check_sparse_structure,
                           declared_label_dtype, encode_labels, is_sparse_input, seed_entropy)
from .._dask import is_dask_collection
from ..base import (BOUND_PARAMETERS, PrivateEstimatorMixin, _estimators_in, _fits_nothing,
                    private_fit, walk_estimators, warn_large_delta)
from ..mechanisms import Query, calibrate
from ._cost import (_leaf_steps, _private_steps, selection_run_budget, truncated_negative_binomial_gamma,
                    truncated_negative_binomial_mean)

__all__ = ["PrivateGridSearchCV", "random_stopping_runs", "negative_binomial_runs"]

_PRIVACY_KEYS = ("epsilon", "delta", "accountant", "random_state")
#: a randomised search expecting more runs than this is refused before its charge
_MAX_MEAN_RUNS = 1e6


def _coins(p, size, rng):
    """``size`` independent exact Bernoulli(``p``) coins for a rational ``p`` in [0, 1] (a
    :class:`fractions.Fraction`).

    A uniform ``U`` in [0, 1) is compared with ``p`` by its binary digits: its first 62
    bits are a uniform word ``w`` (``rng.integers``), and ``U < p`` exactly when ``w`` is
    below ``p``'s first 62 bits ``top = floor(p 2^62)``, or equal to them (probability
    ``2^-62``) and the remaining digits, uniform on [0, 1), fall below ``p 2^62 - top``: an
    exact coin of that rational, drawn the same way. No floating-point sampler is involved.
    """
    top = (p.numerator << 62) // p.denominator
    w = rng.integers(0, 1 << 62, size=size, dtype=np.int64)
    out = w < top
    for i in np.flatnonzero(w == top):  # (ties: about one draw in 4.6e18)
        out[i] = _after_tie(p.numerator, p.denominator, top, rng)
    return out


def _after_tie(num, den, top, rng):
    """The coin of ``num / den`` once a word tied with its first 62 bits ``top``: the
    remaining digits decide, an exact coin of ``num / den * 2^62 - top`` in [0, 1)."""
    return _bernoulli(Fraction((num << 62) - top * den, den), rng)


def _bernoulli(p, rng):
    """One exact Bernoulli(``p``) coin (:func:`_coins`)."""
    return bool(_coins(p, 1, rng)[0])


def _all_coins(ratio, count, rng):
    """Whether the independent exact coins of ``ratio(l) = (num, den)`` (Python ints, each
    ratio in [0, 1]) for ``l = 1, ..., count`` all succeed: :func:`_coins`' comparison, one
    word per coin, in blocks of 64 coins doubling up to 4 096 (the ratios of a block are
    computed when it is drawn; stopped at the first block with a failure)."""
    first, size = 1, 64
    while first <= count:
        terms = [ratio(lv) for lv in range(first, min(first + size, count + 1))]
        tops = [(a << 62) // b for a, b in terms]
        w = rng.integers(0, 1 << 62, size=len(tops), dtype=np.int64)
        top = np.array(tops, dtype=np.int64)
        if np.any(w > top):
            return False
        for j in np.flatnonzero(w == top):
            j = int(j)  # (Python ints: an int64 index wrapped l b + a from l = 512)
            if not _after_tie(*terms[j], tops[j], rng):
                return False
        first, size = first + len(terms), min(2 * size, 4096)
    return True


def _failures_before(successes, p, rng):
    """Failures before the ``successes``-th success of exact Bernoulli(``p > 0``) trials: the
    coins are drawn in vectorised batches (about twice the expected number of trials, at most
    64, first; then doubling up to 65 536) and counted up to that success; the coins after it
    are not used (the trials are independent)."""
    k, need = 0, int(successes)
    size = min(64, math.ceil(Fraction(2 * need) / p)) if need else 0
    while need:
        hits = np.flatnonzero(_coins(p, size, rng))
        if hits.size >= need:
            return k + int(hits[need - 1]) - (need - 1)
        k += size - hits.size
        need -= hits.size
        size = min(2 * size, 1 << 16)
    return k


def _positive_negative_binomial(m, p, rng):
    """``NB(m, p)`` (failures before the ``m``-th success of Bernoulli(``p``) trials)
    conditioned on at least one failure, exactly.

    One failure occurs before the ``m``-th success exactly when the first failure comes at a
    trial ``J <= m``; given that, ``P(J = j) ∝ p^(j - 1)``, so ``P(J = j | j <= J <= m) = 1 /
    (1 + p + ... + p^(m - j))``: one exact coin per ``j``. The trials after it are
    unconstrained: ``m - j + 1`` successes are still needed, so ``k = 1 +`` the failures
    before them.
    """
    j = 1
    if m > 1 and p != 1:
        # 1 / (1 + p + ... + p^(m-j)) = (1 - p) / (1 - p^(m-j+1)), p = a / d, with the
        # powers kept as integers (the sums of Fractions grew like m^2 digits: review 31)
        a, d = p.numerator, p.denominator
        an, dn = a ** m, d ** m  # p^(m - j + 1) at j = 1
        while j < m and not _bernoulli(Fraction((d - a) * dn, d * (dn - an)), rng):
            j, an, dn = j + 1, an // a, dn // d
    return 1 + _failures_before(m - j + 1, p, rng)


def random_stopping_runs(stopping_probability, rng):
    """Number of runs of Liu & Talwar's random stopping: ``K ~ Geometric(gamma)``.

    ``P(K = k) = (1 - gamma)^(k - 1) gamma`` for ``k = 1, 2, ...`` (one coin
    flip with success probability ``gamma`` after every run; stop on
    success), so ``E[K] = 1 / gamma``. The coins do not depend on the data,
    so drawing them all before the first run gives the same joint
    distribution as flipping them one by one. Each coin is exact: ``gamma``
    (a double) is a rational, compared with a uniform integer
    (:func:`_bernoulli`); no floating-point sampler is involved.
    """
    return 1 + _failures_before(1, Fraction(float(stopping_probability)), rng)


def negative_binomial_runs(eta, gamma, rng):
    """Number of runs ``K ~ D_{eta, gamma}`` (Papernot & Steinke 2022).

    The truncated negative binomial law on ``k = 1, 2, ...`` (see
    :func:`skdp.model_selection.truncated_negative_binomial_mean`):

    * ``eta > 0``: a negative binomial ``NB(eta, gamma)`` draw (failures
      before ``eta`` successes, ``P(0) = gamma^eta``), redrawn while it is
      0: conditioning on ``K >= 1`` is exactly the truncation.
    * ``eta = 0``: the logarithmic (log-series) law with parameter
      ``1 - gamma``, ``P(K = k) = (1 - gamma)^k / (k log(1/gamma))``.
    * ``gamma = 1``: the limit ``K = 1``.

    ``rng`` is the search's own generator. This draw is the only randomness
    of the search outside :mod:`skdp.mechanisms`, and it leaks nothing: its
    law depends on the public ``eta`` and ``gamma`` only, it is drawn before
    the data are touched, and the privacy theorem is proved for exactly
    this law (with ``K`` kept secret).

    Sampling is exact, in integer and rational arithmetic (no floating-point
    sampler): with ``m = max(1, ceil(eta))``, propose ``k`` failures before
    ``m`` successes of exact Bernoulli(``gamma``) coins (the negative
    binomial ``NB(m, gamma)``, ``P(k) ∝ (1 - gamma)^k prod_{l<k} (l + m) /
    (l + 1)``) conditioned on ``k >= 1`` (:func:`_positive_negative_binomial`,
    without redrawing ``k = 0``, which took ``1 / (1 - gamma^m)`` proposals),
    and accept with probability ``r_k = prod_{0<l<k}
    (l + eta) / (l + m) <= 1`` (``eta = 0``: ``1 / k``, the log-series ratio),
    itself exact: the product of the independent exact Bernoulli coins of
    the rationals ``(l + eta) / (l + m)`` (``eta`` and ``gamma`` are doubles,
    hence rationals). The accepted ``k`` has the law above
    (rejection sampling: target over proposal is ``prod_{l<k} (l + eta) / (l
    + m)``, proportional to ``r_k`` since every ``k >= 1`` shares the factor
    ``eta / m`` of ``l = 0``; leaving it out keeps the expected number of
    proposals bounded as ``eta`` goes to 0, where it grew like ``1 / eta``).
    """
    if gamma == 1.0:
        return 1
    g, e = Fraction(float(gamma)), Fraction(float(eta))
    m = max(1, math.ceil(float(eta)))
    while True:
        k = _positive_negative_binomial(m, g, rng)
        if e == 0:
            accept = _bernoulli(Fraction(1, k), rng)
        else:  # (l = 0's factor eta / m is common to every k >= 1)
            # Bernoulli(r_k) as the k - 1 independent coins Bernoulli((l + eta) / (l + m)) all
            # succeeding, stopped at the first failure: the same law, in O(k) small rationals
            # (the product r_k's numerator and denominator grew with k: 73 s for E[K] = 5000)
            a, b = e.numerator, e.denominator  # (l + a/b) / (l + m) = (l b + a) / ((l + m) b)
            accept = _all_coins(lambda lv: (lv * b + a, (lv + m) * b), k - 1, rng)
        if accept:
            return k


def _privacy_param_names(estimator, key):
    """Names of the (possibly nested) parameters called ``key`` of ``estimator``."""
    return sorted(
        name for name in estimator.get_params(deep=True) if name == key or name.endswith("__" + key)
    )


def _with_budget(estimator, epsilon, delta):
    """Clone ``estimator`` so that its private steps together spend (epsilon, delta).

    The ``m`` private steps (:func:`~skdp.model_selection._cost._private_steps`:
    the skdp estimators reached through Pipeline, ColumnTransformer and
    FeatureUnion, each fitted once per fit) get ``epsilon / m`` and
    ``delta / m`` each (basic composition); their accountants are removed (the
    search charges the ledger once, with its total). Parameters of other
    steps are left alone, whatever their names.
    """
    est = clone(estimator)
    steps = _private_steps(est)
    m = len(steps)
    params = {}
    for prefix, step in steps:
        own = step.get_params(deep=False)
        params[prefix + "epsilon"] = epsilon / m
        if "delta" in own:
            params[prefix + "delta"] = delta / m
        if "accountant" in own:
            params[prefix + "accountant"] = None
    return est.set_params(**params)


def _check_steps(est):
    """Raise, before the charge, unless ``est`` has private steps and its other steps fit
    nothing from the data (:func:`_fits_nothing`)."""
    if not _private_steps(est):  # raises for a private estimator inside another wrapper
        raise ValueError(
            "estimator has no private step (an skdp estimator, alone or in a Pipeline, "
            "ColumnTransformer or FeatureUnion): it is not a private estimator, and "
            "PrivateGridSearchCV cannot bound its privacy cost."
        )
    for obj, _ in walk_estimators(est, fitted=False):
        params = obj.get_params(deep=False)
        if params.get("memory") is not None:
            raise TypeError(
                f"PrivateGridSearchCV: a {type(obj).__name__} with memory set caches every run's "
                "fitted steps on disk, with the generator that drew their noise (rewinding it "
                "recovers the statistic) and one entry per run (their number is private in "
                "the randomised strategies). Set memory=None.")
        if isinstance(obj, FrozenEstimator) and getattr(obj.estimator, "handle_unknown",
                                                        None) == "error":
            raise TypeError(
                f"PrivateGridSearchCV: the frozen {type(obj.estimator).__name__} raises on a "
                "category it does not know, so whether a run fails would depend on one record "
                "(after the charge). Refit it with handle_unknown='ignore' before freezing it.")
        if isinstance(obj, ColumnTransformer):
            from sklearn.compose import make_column_selector

            for _, _, cols in obj.transformers:
                if callable(cols) and not isinstance(cols, make_column_selector):
                    raise TypeError(
                        "PrivateGridSearchCV: a ColumnTransformer selects columns with a "
                        "callable, which reads the data to choose them: the choice (and the "
                        "released model's shape) could depend on the private values. Select by "
                        "names, positions or make_column_selector (which reads the column "
                        "names and dtypes only).")
        if params.get("verbose"):
            raise TypeError(
                f"PrivateGridSearchCV: a {type(obj).__name__} with verbose set prints a line per "
                "fit; one per run counts the runs, whose number is private in the randomised "
                "strategies. Set verbose=False (the search reports its own progress in "
                "cv_results_).")
    for prefix, step in _leaf_steps(est):
        if isinstance(step, PrivateEstimatorMixin) or _fits_nothing(step):
            continue
        where = f"the step {prefix[:-2]!r}" if prefix else "the estimator"
        why = ("its fit round-trips private rows through inverse_func and warns or not "
               "depending on their values (set check_inverse=False)"
               if isinstance(step, FunctionTransformer) else
               "it is not private and keeps values computed from the private rows it is "
               "fitted on (a StandardScaler's mean and scale): they would be released with "
               "the model, and since every record then moves every transformed row, the "
               "private step's sensitivity analysis no longer holds")
        raise TypeError(
            f"PrivateGridSearchCV: {where} is a {type(step).__name__}, and {why}. Non-private "
            "steps must fit nothing from the data: Normalizer, FunctionTransformer (applying "
            "a fixed function to each row), 'passthrough', or a transformer fitted on public "
            "data and frozen (sklearn.frozen.FrozenEstimator). To learn a scaling from the "
            "private data use skdp.preprocessing's private scalers (PrivateStandardScaler, "
            "PrivateRowNormScaler), which share the search's budget."
        )


def _fit_run(est, seed_seq, X, y, fit_params):
    """Fit one run with seeds from ``seed_seq``, then forget them.

    Every ``random_state`` (at any depth) gets its own child of the search's
    seed sequence for the duration of the fit and is reset to ``None``
    afterwards, so no released model carries a seed that would reproduce its
    noise. A private step gets the child as a ``Generator`` (all 128 bits of
    the root's entropy: an int seed would fit scikit-learn's ``random_state``
    range, 32 bits, and trying all 2^32 of them against a published model
    recovers its noise, and with it a record); another step (which fits
    nothing from the data) an int from the child.
    """
    names = _privacy_param_names(est, "random_state")
    children = seed_seq.spawn(len(names))
    params = est.get_params(deep=True)

    def seed(name, child):
        if isinstance(_param_owner(est, params, name), PrivateEstimatorMixin):
            return np.random.Generator(np.random.PCG64(child))
        return int(child.generate_state(1, np.uint32)[0] & 0x7FFFFFFF)

    est.set_params(**{name: seed(name, child) for name, child in zip(names, children)})
    try:
        # any step's error may quote a cell (numpy's conversion errors, an allowed
        # FunctionTransformer's lookup): every exception is re-raised without values
        call_without_values(est.fit, X, y, name=("X", "y"), catch=Exception, spent=True,
                            **fit_params)
    finally:
        _forget_seeds(est)  # the seeds set above, and the fitted copies that kept them
    return est


def _forget_seeds(est):
    """Set ``random_state`` to ``None`` on every estimator reachable from ``est``, its fitted
    attributes included: a ColumnTransformer fits clones of its members (``transformers_``),
    which keep the run's generator after the originals are reset, and a generator's state
    after the fit can be rewound to its noise. A frozen step is left alone: it was fitted on
    public data, and clone shares it with the caller (its parameters are not the search's)."""
    for obj, _ in walk_estimators(est, skip=lambda o: isinstance(o, FrozenEstimator)):
        if obj.get_params(deep=False).get("random_state") is not None:
            setattr(obj, "random_state", None)  # as set_params would, without revalidation


#: the spawn key of an unledgered seeded search's root: its children, ``(key, i)``, are
#: never the stream of a fit given the same seed (a ledgered fit's ``(serial,)``, an
#: unledgered fit's ``()``); with ``()`` here the score noise of a search seeded 5 was the
#: noise of a fit seeded 5 and charged at serial 3 (review 19, f5)
_UNLEDGERED_SEARCH_KEY = 2**62


def _search_seed_sequence(random_state, spend):
    """The search's root seed sequence (see :func:`skdp._validation.fit_generator`)."""
    if random_state is None:
        return np.random.SeedSequence()
    serial = getattr(spend, "serial", -1)
    if serial is not None and serial >= 0:  # every kind of seed: clones on one ledger differ
        return np.random.SeedSequence(seed_entropy(random_state), spawn_key=(int(serial),))
    # an int, or 4 x 63 bits drawn
    return np.random.SeedSequence(seed_entropy(random_state), spawn_key=(_UNLEDGERED_SEARCH_KEY,))


def _check_targets_and_weights(final, y, fit_params, X):
    """After the charge, before the runs: the final estimator's labels (its declared
    ``classes``) and every ``sample_weight`` (``[0, 1]``), on all rows, with the estimators'
    own value-free messages (review 18, F7)."""
    who = "PrivateGridSearchCV: "
    classes = final.get_params(deep=False).get("classes") if y is not None else None
    if classes is not None:
        y_arr = call_without_values(np.asarray, y, name="y", spent=True)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_arr = y_arr[:, 0]
        try:
            encode_labels(y_arr, check_classes(classes), final)
        except ValueError as exc:
            raise ValueError(who + str(exc)) from None
    for key, sw in fit_params.items():
        if sw is not None and (key == "sample_weight" or key.endswith("__sample_weight")):
            try:
                check_unit_sample_weight(sw, X, final)
            except ValueError as exc:
                raise ValueError(who + str(exc)) from None


def _sub_estimators(est):
    return [est] + [v for k, v in est.get_params(deep=True).items()
                    if hasattr(v, "get_params") and not isinstance(v, type)]


#: steps whose output has as many columns as their input, sparse if it is (the width and the
#: format stay public through them)
_WIDTH_PRESERVING = (Normalizer,)


def _output_structure(step, width, sparse, X=None):
    """``(width, sparse)`` of what ``step`` outputs for such an input, where its settings tell
    it (``None`` otherwise): width-preserving steps keep both, the private projections
    output ``n_components`` dense columns, a one-hot encoder with public categories its
    columns, a ColumnTransformer (:func:`_column_transformer_output`; ``X``: the search's
    input where it reads it as it is) the sum of its members'."""
    from ..decomposition import PrivatePCA
    from ..preprocessing import PrivateRowNormScaler, PrivateStandardScaler
    from ..random_projection import PrivateRandomProjection

    if step is None or isinstance(step, str):  # "passthrough"
        return width, sparse
    if isinstance(step, FunctionTransformer):
        if step.func is None or width is None:
            return width, sparse
        return _function_output(step, width, sparse)
    if isinstance(step, _WIDTH_PRESERVING + (PrivateRowNormScaler, PrivateStandardScaler)):
        return width, sparse
    if isinstance(step, OneHotEncoder) and _fits_nothing(step):
        return _one_hot_width(step), bool(step.sparse_output)
    if isinstance(step, (PrivatePCA, PrivateRandomProjection)):
        k = step.n_components
        if k is None:
            return width, False
        if isinstance(k, numbers.Integral) and not isinstance(k, bool):
            return int(k), False
    if isinstance(step, FrozenEstimator):
        return _frozen_output(step.estimator, width, sparse)
    if isinstance(step, ColumnTransformer):
        return _column_transformer_output(step, width, sparse, X)
    if isinstance(step, FeatureUnion):  # every part reads the input; stacked side by side,
        outs = [_output_structure(part, width, sparse, X)  # sparse if any part is
                for _, part in step.transformer_list if not (isinstance(part, str) and part == "drop")]
        widths, formats = [w for w, _ in outs], [f for _, f in outs]
        width_out = None if any(w is None for w in widths) else int(sum(widths))
        sparse_out = True if any(formats) else (None if None in formats else False)
        return width_out, sparse_out
    if isinstance(step, Pipeline):
        for i, (_, part) in enumerate(step.steps):
            width, sparse = _output_structure(part, width, sparse, X if i == 0 else None)
        return width, sparse
    return None, None


def _frozen_output(inner, width, sparse):
    """``(width, sparse)`` of a frozen (public) transformer: from its ``transform`` of two rows
    of zeros of the input's structure (never the data) where that works; else its output
    columns from its fitted feature names and its format from its ``sparse_output`` setting
    (``None`` where neither tells)."""
    if width is not None and hasattr(inner, "transform"):
        out = _on_zeros(inner.transform, width, sparse)
        if out is not None:
            return out
    out_width = None
    if width is not None and getattr(inner, "n_features_in_", None) == width:
        try:
            out_width = len(inner.get_feature_names_out())
        except Exception:  # (no feature names for it: unknown)
            out_width = None
    flag = getattr(inner, "sparse_output", None)
    return out_width, (bool(flag) if isinstance(flag, (bool, np.bool_)) else None)


def _column_transformer_inputs(ct, width, X):
    """``(name, part, input width)`` of a ColumnTransformer's members and, last, of its
    remainder (``None`` where the structure does not tell), from its column selections
    resolved on ``X``'s structure (:func:`_selected_columns`: a selection the input does not
    have raises here, before the charge)."""
    inputs, used = [], set()
    for name, part, cols in ct.transformers:
        sel = _selected_columns(cols, width, X)
        used = None if sel is None or used is None else used | {
            c % width if width else c for c in sel}
        inputs.append((name, part, None if sel is None else len(sel)))
    rest = None if used is None or width is None else width - len(used)
    return inputs + [("remainder", ct.remainder, rest)]


def _column_transformer_output(ct, width, sparse, X, inputs=None):
    """``(width, sparse)`` of a ColumnTransformer's output (``inputs``: its
    :func:`_column_transformer_inputs`, when already resolved); raises ``ValueError`` where its
    format would depend on the data: with ``sparse_threshold > 0`` and a member that may
    output a sparse matrix, scikit-learn stacks the output sparse or dense by its density, so
    one record can flip the format of what the next (private) step is given, and with it
    that step's calibration (its floating-point rounding bounds), which its release shows."""
    if inputs is None:
        inputs = _column_transformer_inputs(ct, width, X)
    outs = [_output_structure(part, w, sparse) for i, (_, part, w) in enumerate(inputs)
            if not (isinstance(part, str) and part == "drop")
            and not (i == len(inputs) - 1 and w == 0)]  # (an empty remainder outputs nothing)
    if ct.sparse_threshold > 0 and any(s is not False for _, s in outs):
        raise ValueError(
            "PrivateGridSearchCV: a ColumnTransformer with sparse_threshold > 0 and a member "
            "that may output a sparse matrix stacks its output sparse or dense by the density "
            "of the data, so one record can change the format the next step is given and with "
            "it that step's calibration, which its release shows. Set sparse_threshold=0 "
            "(dense output), or make the members dense (OneHotEncoder(sparse_output=False)).")
    widths = [w for w, _ in outs]
    return (None if any(w is None for w in widths) else int(sum(widths))), False


def _one_hot_width(enc):
    """Output columns of a OneHotEncoder with explicit categories (``None`` if its ``drop``
    does not tell): one per category, less one per feature that ``drop`` removes."""
    sizes = [len(c) for c in enc.categories]
    if enc.drop is None:
        dropped = 0
    elif isinstance(enc.drop, str):
        dropped = len(sizes) if enc.drop == "first" else sum(k == 2 for k in sizes)  # if_binary
    else:
        try:
            dropped = sum(v is not None for v in enc.drop)
        except TypeError:
            return None
    return sum(sizes) - dropped


def _function_output(step, width, sparse):
    """``(width, sparse)`` of an allowed FunctionTransformer's output, from its function applied
    to two rows of zeros of the input's structure (never the data; it is applied to each row on
    its own, as the search requires); ``(None, sparse)`` if that fails or is not 2-D."""
    out = _on_zeros(lambda Z: step.func(Z, **(step.kw_args or {})), width, sparse)
    return (None, sparse) if out is None else out


def _on_zeros(apply, width, sparse):
    """``(width, sparse)`` of ``apply``'s output on two rows of zeros of ``width`` columns
    (sparse where the input is; dense zeros writable, as a function may work in place): never
    the data. ``None`` where it fails or its output is not two rows of a 2-D array."""
    Z = _stand_in(2, width, True) if sparse else np.zeros((2, width))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = apply(Z)
    except Exception:  # (zeros may be refused, e.g. as unknown categories)
        return None
    shape = getattr(out, "shape", None)
    if shape is None or len(shape) != 2 or shape[0] != 2:
        return None
    return int(shape[1]), bool(sp.issparse(out))


def _readable_columns(X):
    """Whether the columns of ``X`` can be resolved from its structure alone."""
    return isinstance(X, np.ndarray) or sp.issparse(X) or (
        hasattr(X, "columns") and hasattr(X, "iloc") and not is_dask_collection(X))


def _selected_columns(cols, width, X):
    """The positions a ColumnTransformer member selects (a list: a repeated column counts
    twice), from the structure of its input ``X`` (shape, column names; the search's input
    where the transformer reads it as it is) or of a stand-in of ``width`` columns; ``None``
    where they cannot be told (a callable reads the data). A selection the search's input does
    not have is refused here, before the charge."""
    from sklearn.utils._indexing import _get_column_indices

    if callable(cols):
        return None
    if X is not None and _readable_columns(X):
        try:
            return list(_get_column_indices(X, cols))
        except (ValueError, IndexError, KeyError, TypeError) as exc:
            raise ValueError(
                f"PrivateGridSearchCV: a ColumnTransformer selects the columns {cols!r}, which "
                f"the input does not have ({type(exc).__name__}: {exc}).") from None
    if width is None:
        return None
    try:
        return list(_get_column_indices(np.broadcast_to(np.float64(0.0), (1, width)), cols))
    except Exception:  # names without a frame, or a bad selection: the run reports it
        return None


def _leaf_inputs(est, width, sparse=False, X=None, prefix=""):
    """``(parameter prefix, step, input width, sparse)`` of every step of ``est`` below
    Pipeline, ColumnTransformer and FeatureUnion (``"passthrough"``, ``"drop"`` and ``None``
    left out). The width is ``None`` where the structure does not tell it. ``X``: the search's
    input where ``est`` reads it as it is (only its structure is read: a ColumnTransformer's
    column selections)."""
    if isinstance(est, Pipeline):
        for i, (name, step) in enumerate(est.steps):
            yield from _leaf_inputs(step, width, sparse, X if i == 0 else None,
                                    f"{prefix}{name}__")
            width, sparse = _output_structure(step, width, sparse, X if i == 0 else None)
    elif isinstance(est, FeatureUnion):
        for name, part in est.transformer_list:
            yield from _leaf_inputs(part, width, sparse, X, f"{prefix}{name}__")
    elif isinstance(est, ColumnTransformer):
        inputs = _column_transformer_inputs(est, width, X)
        _column_transformer_output(est, width, sparse, X, inputs)  # (its format check)
        for name, part, part_width in inputs:
            yield from _leaf_inputs(part, part_width, sparse, None, f"{prefix}{name}__")
    elif est is not None and not isinstance(est, str):
        yield prefix, est, width, sparse


def _check_stateless_step(step, Xs):
    """Raise what an allowed non-private step (it fits nothing from the data) refuses on an
    input of this structure: its ``fit`` (a FunctionTransformer's or Normalizer's validation,
    its function left out), or a frozen step's width (a public model given another number of
    columns; its ``transform`` is not run on the zeros, which a frozen encoder would refuse as
    unknown categories). ``Xs``: zeros of the structure (:func:`_stand_in`); the messages quote
    nothing of the data."""
    if isinstance(step, FrozenEstimator):
        expected = getattr(step.estimator, "n_features_in_", None)
        if expected is not None and Xs.shape[1] != expected:
            raise ValueError(f"X has {Xs.shape[1]} features, but {type(step.estimator).__name__} "
                             f"is expecting {expected} features as input.")
        return
    if isinstance(step, OneHotEncoder):  # (its fit is not run on zeros: unknown categories)
        if Xs.shape[1] != len(step.categories):
            raise ValueError(f"OneHotEncoder has categories for {len(step.categories)} features, "
                             f"but its input has {Xs.shape[1]} columns.")
        # its own refusals of its settings (unsorted numeric categories, a drop value not
        # among them): its fit on a public table that lists the given categories
        cats = [list(c) for c in step.categories]
        m = max([len(c) for c in cats] + [1])
        cols = [[c[i % len(c)] for i in range(m)] if c else [0] * m for c in cats]
        numeric = all(isinstance(v, numbers.Real) for col in cols for v in col)
        # (numeric: int64 where they are all integers, so that ints above 2^53 stay distinct)
        clone(step).fit(np.array(cols).T if numeric else np.array(cols, dtype=object).T)
        return
    if isinstance(step, (FunctionTransformer, Normalizer)):
        clone(step).set_params(**({"func": None, "inverse_func": None}
                                  if isinstance(step, FunctionTransformer) else {})).fit(Xs)


def _param_owner(est, params, name):
    """The (sub-)estimator whose own parameter is the deep parameter ``name``."""
    return params[name.rsplit("__", 1)[0]] if "__" in name else est


def _check_fit_params(est, fit_params):
    """Raise, before the charge, for fit parameters the estimator's ``fit`` cannot take (its
    signature, or for a Pipeline without metadata routing the ``step__param`` form): public."""
    import inspect

    from sklearn import get_config

    def accepts(obj, key):
        sig = inspect.signature(type(obj).fit).parameters
        return key in sig or any(p.kind is p.VAR_KEYWORD for p in sig.values())

    if get_config().get("enable_metadata_routing", False):
        return  # routed by scikit-learn's own rules (checked by the estimators)
    steps = dict(est.steps) if isinstance(est, Pipeline) else None
    for key in fit_params:
        target, param = est, key
        if steps is not None:
            step_name, _, param = key.partition("__")
            target = steps.get(step_name)
        if isinstance(target, (ColumnTransformer, FeatureUnion)):
            raise ValueError(
                f"PrivateGridSearchCV: the fit parameter {key!r} would go to a "
                f"{type(target).__name__}, which takes none unless scikit-learn's metadata "
                "routing is enabled (sklearn.set_config(enable_metadata_routing=True)).")
        if steps is None:
            if not accepts(est, key):
                raise TypeError(f"PrivateGridSearchCV: {type(est).__name__}.fit() takes no fit "
                                f"parameter {key!r}.")
        elif not param or step_name not in steps:
            raise ValueError(
                f"PrivateGridSearchCV: the fit parameter {key!r} does not name a step of the "
                "Pipeline: pass it as '<step>__<parameter>' (for example "
                f"'{est.steps[-1][0]}__sample_weight').")
        elif target is not None and not isinstance(target, str) and not accepts(target, param):
            raise TypeError(f"PrivateGridSearchCV: the step {step_name!r} "
                            f"({type(target).__name__}) takes no fit parameter {param!r}.")


#: held while the search changes the process-wide warnings filters (the dry runs, the runs of
#: the randomised strategies), so that two searches in threads do not restore each other's
_WARNINGS_LOCK = threading.RLock()
#: searches in their run loop: while nonzero, every warning is dropped at the point
#: where Python shows it (:func:`_withheld_warnings`)
_WITHHOLDING = [0]


def _install_warning_gate():
    """Wrap ``warnings._showwarnmsg`` (once) so that it drops every warning while a
    search runs. The filters alone are not enough: any other thread's ``catch_warnings()`` (every
    scikit-learn ``check_array`` enters one) restores the process-wide filter list on exit,
    dropping the search's "ignore" mid-loop. ``_showwarnmsg``, through which Python and C code
    show every warning (``record=True`` included), is not saved or restored by them."""
    shown = warnings._showwarnmsg
    if getattr(shown, "_skdp_gate", False):
        return

    def _showwarnmsg(msg):
        if _WITHHOLDING[0]:
            return
        shown(msg)

    _showwarnmsg._skdp_gate = True
    warnings._showwarnmsg = _showwarnmsg


@contextlib.contextmanager
def _withheld_warnings(active=True):
    """Withhold every warning shown while the block runs (``active``), in every thread: a
    randomised search's runs would otherwise count K. Held under :data:`_WARNINGS_LOCK`."""
    with _WARNINGS_LOCK, warnings.catch_warnings():
        if not active:
            yield
            return
        warnings.simplefilter("ignore")
        _install_warning_gate()
        _WITHHOLDING[0] += 1
        try:
            yield
        finally:
            _WITHHOLDING[0] -= 1


def _stand_in(m, width, sparse, dtype=np.float64):
    """Zeros of the structure a step is given (``m`` rows, ``width`` columns, sparse or dense,
    ``dtype``) in no memory: a zero-strided view, or an empty sparse matrix."""
    if sparse:
        return sp.csr_matrix((m, width), dtype=dtype)
    return np.broadcast_to(np.zeros((), dtype=dtype), (m, width))


def _dry_inputs(X, y, m, n):
    """What a dry run is given in place of the data: the float dtype of its stand-ins, and zeros
    of ``y``'s structure for ``m`` rows (``None`` without ``y``), in no memory."""
    dtype = getattr(X, "dtype", None)
    if dtype not in (np.float32, np.float64) or is_dask_collection(X):
        dtype = np.float64
    if y is None:
        return dtype, None
    dt = declared_label_dtype(y)
    dt = dt if isinstance(dt, np.dtype) else np.dtype(object)
    tail = tuple(getattr(y, "shape", (n,))[1:])
    return dtype, np.broadcast_to(np.zeros((), dtype=dt), (m,) + tail)


def _dry_fit_params(fit_params, prefix, m, n):
    """The fit parameters of the step at ``prefix`` for a dry run on ``m`` stand-in rows: its
    own (``prefix`` stripped), those indexed by the ``n`` rows (weights) as 1/2 for each row,
    in no memory."""
    params = fit_params if not prefix else {
        k[len(prefix):]: v for k, v in fit_params.items()
        if k.startswith(prefix) and "__" not in k[len(prefix):]}
    return {k: (np.broadcast_to(0.5, (m,)) if _num_samples_or_none(v) == n else v)
            for k, v in params.items()}


def _dry_run(step, prefix, Xs, y_in, fit_params, m, n):
    """Run the part of the private ``step``'s fit before its charge on the stand-in ``Xs``: the
    errors its public inputs decide there (an epsilon too small for its samplers, a sketch
    without a floating-point-safe release, a delta it cannot use, sparse input it refuses) are
    raised before the search's charge, as when it is fitted alone.

    No value of the data is given to it: ``Xs`` and ``y_in`` are zeros of the input's structure
    (:func:`_stand_in`, :func:`_dry_inputs`), the row-indexed fit parameters zeros of their
    shapes (weights: 1/2). The fit stops at its charge (``skdp._ledger._Capture``, the accountant ``ledger.accepts`` uses too); a step whose
    fit makes no charge runs on the zeros and is thrown away. A step without an ``accountant``
    parameter is left to its run.
    """
    if "accountant" not in step.get_params(deep=False):
        return
    params = _dry_fit_params(fit_params, prefix, m, n)
    dry = clone(step).set_params(accountant=_Capture())
    try:
        dry.fit(Xs, **params) if y_in is None else dry.fit(Xs, y_in, **params)
    except _Captured:
        pass


def _check_candidate(est, m, n, n_features, X, y, fit_params):
    """Raise, before the charge, every error the candidate's public settings decide, for fits on
    ``m`` of the ``n`` rows: its parameters, its bounds, its fit parameters, and for every step
    of public input width (:func:`_leaf_inputs`) what the step refuses of that structure: a
    private step's ``_check_public`` and the part of its fit before its charge
    (:func:`_dry_run`), an allowed non-private step's validation
    (:func:`_check_stateless_step`), on zeros of the structure, never the data. Warnings of
    these checks are returned as ``(category, message)``, with those of the private steps'
    unverified mechanisms: every one was decided before a charge, by public settings, and the
    search shows each once before its own charge (the runs' warnings are withheld)."""
    for sub in _sub_estimators(est):
        if hasattr(sub, "_validate_params") and hasattr(type(sub), "_parameter_constraints"):
            sub._validate_params()
    params = est.get_params(deep=True)
    for key in BOUND_PARAMETERS:
        for name in _privacy_param_names(est, key):
            owner = _param_owner(est, params, name)
            if params[name] is None and key not in getattr(owner, "_unused_bounds", set)():
                raise ValueError(
                    f"PrivateGridSearchCV: the parameter {name!r} of the estimator is None, so "
                    "it would be inferred from the private data inside the search and the "
                    "search would not be differentially private. Pass it as a public input."
                )
    _check_fit_params(est, fit_params)
    dtype, y_in = _dry_inputs(X, y, m, n)
    with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for prefix, step, width, sparse in _leaf_inputs(est, n_features, is_sparse_input(X), X):
            private = isinstance(step, PrivateEstimatorMixin)
            if private:
                step._check_public(m, width)
            if width is None:
                continue
            Xs = _stand_in(m, width, sparse, dtype)
            if private:
                _dry_run(step, prefix, Xs, y_in, fit_params, m, n)
            else:
                _check_stateless_step(step, Xs)
    # every warning of these checks came before a charge: public settings decided it
    found = [(w.category, str(w.message)) for w in caught]
    return found + [(PrivacyGuaranteeWarning, m) for _, step in _private_steps(est)
                    if (m := _unverified_mechanism(step))]


def _unverified_mechanism(step):
    """The warning of a private step's ``mechanism`` parameter when it names a mechanism that
    is not verified (a public setting; the step itself warns only when it calibrates, which
    may come after its charge), else ``None``."""
    import sys

    from ..mechanisms import get_mechanism

    name = step.get_params(deep=False).get("mechanism")
    if not isinstance(name, str) or name == "auto":
        return None
    # an estimator's own names for core mechanisms (PrivatePCA's "analyze_gauss", ...)
    core = getattr(sys.modules[type(step).__module__], "_MECHANISMS", {}).get(name, name)
    try:
        mechanism = get_mechanism(core)
    except ValueError:
        return None  # (an unknown name is the step's own error)
    if mechanism.verified:
        return None
    return (f"{type(step).__name__}(mechanism={name!r}): mechanism {core!r} is NOT verified "
            f"differentially private: {mechanism.failure}")


def _estimator_has(attr):
    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, attr)
        return hasattr(self.estimator, attr)

    return check


class PrivateGridSearchCV(MetaEstimatorMixin, BaseEstimator):
    """Differentially private hyperparameter search over a grid.

    The data are split once, at random but independently of their values,
    into a training part and a validation part. A *base run* trains the
    private ``estimator`` with one grid point on the training part and
    scores it on the validation part with a noisy score. Runs are combined
    by one of three strategies with a proven total guarantee; the accountant
    is charged the total *before* the data are touched.

    Parameters
    ----------
    estimator : estimator object
        A private estimator (an skdp estimator), or a Pipeline,
        ColumnTransformer or FeatureUnion of steps. Its private steps (the
        skdp estimators, :class:`skdp.base.PrivateEstimatorMixin`, reached
        through those compositions, which fit every step once) share each
        run's budget equally: the search sets their ``epsilon`` and
        ``delta``, and leaves other steps' parameters alone whatever their
        names. A private estimator inside any other wrapper
        (OneVsRestClassifier, BaggingClassifier, MultiOutputRegressor, ...)
        may be fitted several times per run, each time at the full share, and
        is refused (``TypeError``) before anything is charged. Its
        public bounds (``data_norm``, ``label_bound``, ``classes``) must be
        given: a bound left to be inferred from the data raises before
        anything is charged (a bound the route never reads, such as
        ``data_norm`` for ``PrivateOLS(method="mean")``, may stay None). Every
        candidate's settings are validated before the charge too: every
        private step's, wherever it sits (a step after others is given its
        input width where their settings tell it: the private scalers,
        ``Normalizer`` and ``"passthrough"`` keep it, the private projections
        set it to ``n_components``; a ColumnTransformer member gets the length
        of its column list, its remainder what is left), the fit parameters
        against the signature of the ``fit`` they go to, and for every private
        step of public input width the part of its fit before its own charge
        is run on the run's row count and stopped at that charge, on zeros of
        its input's structure that take no memory (never on the data), so
        that what it decides from public inputs (an
        epsilon too small for the samplers, a sketch without a
        floating-point-safe release) is refused before the search's charge,
        as for a fit on its own; the allowed non-private steps are checked on
        the same zeros (their validation, a frozen model's width). After the charge, the runs' errors are
        reported without their messages, keeping only the phrases that name
        the structure of the input ("Input y contains NaN"): a step's error
        may quote the data it was given.
        Non-private steps must fit nothing from the data, and are refused
        (``TypeError``, before the charge) otherwise: ``Normalizer``,
        ``FunctionTransformer`` applying a fixed function to each row
        (without ``check_inverse`` on an ``inverse_func``, which round-trips
        private rows in ``fit``; that the function treats each row on its
        own, unlike ``lambda A: A - A.mean(0)``, cannot be checked and is the
        caller's to ensure), ``"passthrough"``, or a transformer fitted
        on public data and frozen (``sklearn.frozen.FrozenEstimator``). A
        fitted ``StandardScaler`` would keep the private training rows' mean
        and scale, and through them every record would move every
        transformed row, beyond the private step's sensitivity analysis: use
        :mod:`skdp.preprocessing`'s private scalers instead. Every grid point
        is checked, and a step a grid point puts in place is a step of the
        run like the others.
    param_grid : dict or list of dicts
        As in :class:`sklearn.model_selection.GridSearchCV`. Must not contain
        privacy parameters (``epsilon``, ``delta``, ``accountant``,
        ``random_state``).
    epsilon : float
        Total epsilon of the whole search (selection, plus refit if any).
    delta : float, default=0.0
        Total delta. With ``strategy="random_stopping"`` or
        ``"negative_binomial"`` base runs are pure (delta = 0) and delta may
        only be spent by the refit.
    strategy : {"negative_binomial", "random_stopping", "exhaustive"}, \
            default="negative_binomial"
        How runs are combined (see Notes). ``"negative_binomial"``
        (Papernot & Steinke 2022) costs ``(2 + eta)`` times a run instead of
        the 3 times of Liu & Talwar's (2019) ``"random_stopping"``.
    stopping_probability : float in (0, 1], default=None
        ``gamma`` of the law of the number of runs: the stopping probability
        of random stopping, the ``gamma`` of the truncated negative binomial
        ``D_{eta, gamma}``. ``None`` means: on average as many runs as grid
        points (``E[K] = n_candidates``; ``1 / n_candidates`` for random
        stopping). Ignored by "exhaustive". A value that makes ``E[K]``
        exceed a million runs is refused before the charge.
    eta : float >= 0, default=0.5
        Shape ``eta`` of ``D_{eta, gamma}`` for
        ``strategy="negative_binomial"`` (ignored otherwise): the selection
        costs ``(2 + eta)`` times one run. ``eta = 0`` is the logarithmic
        law (cheapest, heaviest tail: more single-run searches at the same
        mean), ``eta = 1`` the geometric law of random stopping.
    validation_fraction : float in (0, 1), default=0.25
        Share of the rows used for validation scores.
    scoring : "accuracy" or callable, default="accuracy"
        ``"accuracy"``: the fraction of correctly classified validation rows
        (classifiers; a regressor is refused before the charge). A callable
        ``scoring(estimator, X, y)`` must return one score per validation
        row; the rows' scores are clipped to ``score_bounds`` and averaged.
    score_bounds : (low, high), default=None
        Public bounds of the per-row scores; required with a callable
        ``scoring`` (``"accuracy"`` uses (0, 1)). Like every public bound,
        their magnitudes stay below ``2^128`` and their width above
        ``2^-128``.
    refit : bool, default=False
        ``False``: ``best_estimator_`` is the selected run's model (trained on
        the training part), which costs nothing beyond the selection.
        ``True``: refit the best parameters on all the data with a budget of
        its own, ``refit_fraction`` of the total (basic composition).
    refit_fraction : float in (0, 1), default=0.5
        Share of ``epsilon`` given to the refit when ``refit=True``; the refit
        also gets all of ``delta`` (random stopping, negative binomial) or
        half of it (exhaustive).
    accountant : ledger, default=None
        Charged once, with the total, before the data are touched. A ledger
        set on the inner estimator instead is charged the same way (the
        search never lets it be bypassed); two different ledgers raise.
    random_state : int, Generator or None, default=None
        Seeds the split, the grid draws, the runs and the score noise, through
        independent spawned seed sequences (with a ledger, an int seed is
        mixed with the spend's serial number, so two searches on one ledger
        never share noise). The runs' seeds are forgotten after each fit: the
        returned models have ``random_state=None``.

    Attributes
    ----------
    best_params_ : dict
    best_score_ : float
        The selected run's *noisy* validation score.
    best_estimator_ : estimator
    privacy_spent_ : PrivacyBudget
        The total (epsilon, delta) of the search (= (epsilon, delta)).
    run_budget_ : PrivacyBudget
        The budget of one base run (its training and its score each).
    score_noise_ : NoiseSpec
        The calibrated noise of one validation score.
    cv_results_ : dict
        Only with ``strategy="exhaustive"``: ``params``, ``param_<name>``,
        ``noisy_score`` and ``rank_noisy_score`` of every grid point (all
        covered by the guarantee). The randomised strategies cannot publish
        their runs (see Notes).
    n_candidates_ : int
        Number of grid points.
    stopping_law_ : dict or None
        The public law of the number of runs: ``{"eta", "gamma", "mean"}``
        (``eta = 1`` for random stopping); ``None`` for "exhaustive". The
        number of runs itself is never stored.

    Notes
    -----
    **Neighbours and the split.** Replace-one neighbours, n public. The
    split is a random permutation drawn from ``random_state`` and ``n``
    only (never stratified by labels, which would depend on the data), so a
    replaced record sits at the same position, in the same part, in both
    neighbouring data sets.

    **One base run is (eps_r, delta_r)-DP.** A run outputs
    ``(theta, h, s)``: a grid point ``theta`` drawn independently of the
    data, a model ``h`` trained on the training part at (eps_r, delta_r),
    and ``s = score(h, validation part) + Lap(Delta / eps_r)``. If the
    replaced record is in the training part, ``h`` is (eps_r, delta_r)-DP
    and ``s`` is a post-processing of ``h`` (fixed validation rows, fresh
    noise). If it is in the validation part, ``h`` is unchanged and ``s`` is
    the Laplace mechanism: the mean of per-row scores in ``[a, b]`` moves
    by at most ``Delta = (b - a) / n_val`` (``1 / n_val`` for accuracy, where
    one row flips at most one prediction's correctness), and
    ``Lap(Delta / eps_r)`` gives eps_r-DP (Dwork & Roth 2014, Thm 3.6). The
    two parts are disjoint, so the run is (eps_r, delta_r)-DP (parallel
    composition: every neighbouring pair differs in one part only).

    **strategy="random_stopping"** (Liu & Talwar 2019, Section 3.3, random
    stopping; Theorem 3.4): repeat base runs (each with a fresh uniformly
    drawn grid point); after each run stop with probability ``gamma``;
    output the run with the highest noisy score. If every run is
    eps_r-DP (pure), the output is ``3 eps_r``-DP for every ``gamma`` in
    (0, 1]. Papernot & Steinke (2022, Theorem 2 with ``eta = 1``, the
    geometric case of their truncated negative binomial) give the same
    ``3 eps_r``. So ``eps_r = epsilon_selection / 3`` and runs are pure
    (delta_r = 0). The number of runs ``K`` is *not* released: conditioned
    on ``K = k`` the output is only ``k eps_r``-DP, so ``cv_results_`` (which
    would reveal ``K``) is not available, the runs' warnings are withheld
    (one warning per run would count ``K``; which warnings appear would
    tell which grid points ran; the refit's warnings are withheld too; while the
    runs go, warnings of every thread are withheld where Python shows them,
    since another thread's ``catch_warnings`` restores the process-wide
    filters), and the
    run time is a side channel on ``K`` that the guarantee assumes hidden.
    To see a candidate's warnings, fit it on its own or search with
    ``strategy="exhaustive"``. ``E[K] = 1/gamma``;
    ``P(K > t / gamma) <= e^-t``.

    **strategy="negative_binomial"** (Papernot & Steinke 2022, Theorem 2):
    draw ``K ~ D_{eta, gamma}``, the truncated negative binomial law
    ``P(K = k) ∝ (1 - gamma)^k prod_{l<k} (l + eta) / (l + 1)`` on
    ``k >= 1`` (``eta = 0``: logarithmic law; ``eta = 1``: geometric, i.e.
    random stopping), run ``K`` i.i.d. base runs and output the run with the
    highest noisy score. Theorem 2: if one run is (lambda, e)- and
    (lambda_hat, e_hat)-RDP, the output is (lambda, e')-RDP with
    ``e' = e + (1 + eta)(1 - 1/lambda_hat) e_hat + (1 + eta) log(1/gamma) /
    lambda_hat + log E[K] / (lambda - 1)``. The theorem is stated for any
    neighbouring relation (the runs' privacy is its only input), so it holds
    for replace-one. Our runs are pure eps_r-DP (delta_r = 0: skdp's own
    estimator at (eps_r, 0) plus the Laplace score, see above), hence
    (lambda, eps_r)-RDP for every order; letting lambda and lambda_hat go to
    infinity (Renyi divergence of order infinity is the max divergence) the
    selection is ``(2 + eta) eps_r``-DP for every ``gamma`` in (0, 1).
    Calibration: ``eps_r = epsilon_selection / (2 + eta)``, delta_r = 0;
    ``gamma`` solves ``E[K] = eta (1 - gamma) / (gamma (1 - gamma^eta))``
    (``(1 - gamma) / (gamma log(1/gamma))`` at ``eta = 0``) ``= n_candidates``
    unless given. The Renyi bound does not beat this pure bound when a
    ``delta > 0`` is allowed: with runs' RDP ``min(eps_r, lambda eps_r^2/2)``
    and the standard RDP-to-(epsilon, delta) conversion, the largest eps_r
    for a total of (0.5, 1 or 3; 1e-5) equals ``epsilon / (2 + eta)`` for
    ``eta`` in {0, 0.5, 1} and ``E[K]`` in {4, 20} (computed with
    ``dp_accounting``'s implementation of Theorem 2), so the pure
    calibration is used. As with random stopping, ``K`` is not released (no
    ``cv_results_``; the run time is a side channel that the guarantee
    assumes hidden). Ties between noisy scores (they lie on a discrete grid)
    go to the earliest run; the runs are i.i.d., so this has the law of a
    uniformly random choice among the tied runs, i.e. of the theorem's
    "best output" under a total order refined by an independent uniform
    tie-breaker (a data-independent extension of the run). ``K`` is drawn
    from the search's generator by :func:`negative_binomial_runs`; its law
    is public (``eta``, ``gamma``), so the draw itself reveals nothing about
    the data; it is sampled exactly, in integer and rational arithmetic, as
    the geometric draw of random stopping.

    **strategy="exhaustive"**: every grid point is run once at
    ``eps_r = epsilon_selection / n_candidates``,
    ``delta_r = delta_selection / n_candidates``; all noisy scores are
    released (``cv_results_``) and the argmax is post-processing. Basic
    composition (Dwork & Roth 2014, Thm 3.16): the selection is
    (epsilon_selection, delta_selection)-DP. Better than the randomised
    strategies for grids of at most ``2 + eta`` points (each run then gets
    at least as much budget) and the only strategy for estimators that need
    delta > 0.

    **Total.** Without refit the total is the selection budget. With refit,
    the refit (all rows, best parameters, ``refit_fraction * epsilon``)
    composes with the selection by basic composition; ``privacy_spent_`` is
    always (epsilon, delta).

    References
    ----------
    J. Liu, K. Talwar. Private selection from private candidates. STOC 2019
    (arXiv:1811.07971).
    N. Papernot, T. Steinke. Hyperparameter tuning with Renyi differential
    privacy. ICLR 2022 (arXiv:2110.03620).
    C. Dwork, A. Roth. The algorithmic foundations of differential privacy.
    2014.

    Examples
    --------
    See ``examples/plot_gridsearch_ledger.py``.
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"])],
        "param_grid": [dict, list],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="left")],
        "strategy": [StrOptions({"random_stopping", "negative_binomial", "exhaustive"})],
        "stopping_probability": [None, Interval(Real, 0, 1, closed="right")],
        "eta": [Interval(Real, 0, None, closed="left")],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "scoring": [StrOptions({"accuracy"}), callable],
        "score_bounds": [None, tuple, list],
        "refit": ["boolean"],
        "refit_fraction": [Interval(Real, 0, 1, closed="neither")],
        "accountant": [None, HasMethods(["spend"])],
        "random_state": ["random_state", np.random.Generator],
    }

    def __init__(self, estimator, param_grid, epsilon, delta=0.0, *,
                 strategy="negative_binomial", stopping_probability=None, eta=0.5,
                 validation_fraction=0.25, scoring="accuracy", score_bounds=None,
                 refit=False, refit_fraction=0.5, accountant=None, random_state=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.epsilon = epsilon
        self.delta = delta
        self.strategy = strategy
        self.stopping_probability = stopping_probability
        self.eta = eta
        self.validation_fraction = validation_fraction
        self.scoring = scoring
        self.score_bounds = score_bounds
        self.refit = refit
        self.refit_fraction = refit_fraction
        self.accountant = accountant
        self.random_state = random_state

    # ------------------------------------------------------------------
    def _score_range(self):
        if self.scoring == "accuracy":
            if self.score_bounds is not None:
                raise ValueError("score_bounds is fixed to (0, 1) for scoring='accuracy'.")
            return 0.0, 1.0
        from sklearn.metrics._scorer import _BaseScorer, _MultimetricScorer, _PassthroughScorer

        scoring = self.scoring
        while isinstance(scoring, functools.partial):
            scoring = scoring.func
        if isinstance(scoring, (_BaseScorer, _PassthroughScorer, _MultimetricScorer)) or (
                getattr(scoring, "__module__", "") or "").startswith("sklearn.metrics"):
            # (a public setting: refused before the charge; a metric function takes
            # (y_true, y_pred), not (estimator, X, y), and returns one number too)
            raise ValueError(
                "scoring is a scikit-learn scorer or metric (make_scorer, get_scorer, "
                "check_scoring, sklearn.metrics), which returns one number for all the "
                "validation rows; the search needs one score per row (their "
                "clipped mean has the public sensitivity (high - low) / n_val). Pass a callable "
                "such as scoring=lambda est, X, y: -(est.predict(X) - y) ** 2 with public "
                "score_bounds=(-4, 0) for labels in [-1, 1].")
        if self.score_bounds is None:
            raise ValueError("a callable scoring needs public score_bounds=(low, high).")
        lo, hi = (float(v) for v in self.score_bounds)
        if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
            raise ValueError(f"score_bounds must be finite with low < high, got {self.score_bounds!r}.")
        # the width is the scores' sensitivity: held to the public range of every bound
        # (beyond it the calibration over- or underflows)
        if max(abs(lo), abs(hi)) > MAX_PUBLIC_BOUND or hi - lo < MIN_PUBLIC_BOUND:
            raise ValueError(f"score_bounds must lie within [-{MAX_PUBLIC_BOUND:.3g}, "
                             f"{MAX_PUBLIC_BOUND:.3g}] and be at least {MIN_PUBLIC_BOUND:.3g} wide, "
                             f"got {self.score_bounds!r}.")
        return lo, hi

    def _plan(self):
        """Everything decided before the data are touched (public inputs only)."""
        candidates = list(ParameterGrid(self.param_grid))
        if not candidates:
            raise ValueError("param_grid is empty.")
        for cand in candidates:
            bad = [k for k in cand if k.split("__")[-1] in _PRIVACY_KEYS]
            if bad:
                raise ValueError(
                    f"param_grid must not contain privacy parameters {bad}: the search sets them."
                )
        for cand in candidates:  # a grid point may replace steps: check every one
            est = clone(self.estimator).set_params(**cand)
            _check_steps(est)
            if self.scoring == "accuracy" and not hasattr(est, "predict"):
                raise ValueError(
                    f"scoring='accuracy' compares predictions with y, and {type(est).__name__} "
                    "(at some grid point) has no predict: pass a scoring callable returning one "
                    "score per validation row, with public score_bounds.")
            if self.scoring == "accuracy" and is_regressor(est):
                raise ValueError(
                    f"scoring='accuracy' counts exact matches of predictions with y, and "
                    f"{type(est).__name__} (at some grid point) is a regressor: every score "
                    "would be about 0 and the search would select on its noise. Pass a scoring "
                    "callable returning one score per validation row (for example the negative "
                    "squared error clipped to a public range) with those score_bounds.")
        eps, delta = float(self.epsilon), float(self.delta)
        if self.refit:
            eps_refit = eps * self.refit_fraction
            eps_sel = eps - eps_refit
        else:
            eps_refit, eps_sel = 0.0, eps
        if self.strategy != "exhaustive":
            if delta > 0 and not self.refit:
                raise ValueError(
                    f"strategy={self.strategy!r} uses pure (delta=0) base runs (Liu & Talwar "
                    "2019, Thm 3.4; Papernot & Steinke 2022, Thm 2), so delta > 0 could only "
                    "be spent by a refit: set refit=True, delta=0, or strategy='exhaustive'."
                )
            delta_sel, delta_refit = 0.0, delta
        else:
            delta_sel = delta / 2 if self.refit else delta
            delta_refit = delta - delta_sel
        run = selection_run_budget(self.strategy, eps_sel, delta_sel, len(candidates),
                                   eta=self.eta)
        refit_budget = PrivacyBudget(eps_refit, delta_refit) if self.refit else None
        return candidates, run, refit_budget

    def _run_estimator(self, candidate, budget):
        """The estimator of one run (or the refit): the grid point is set first, so that a
        step it puts in place is one of the private steps sharing ``budget``."""
        return _with_budget(clone(self.estimator).set_params(**candidate), budget.epsilon,
                            budget.delta)

    def _stopping_law(self, n_candidates):
        """The public law of the number of runs (None for "exhaustive")."""
        if self.strategy == "exhaustive":
            return None
        eta = 1.0 if self.strategy == "random_stopping" else float(self.eta)
        if self.stopping_probability is None:
            mean = float(n_candidates)
            gamma = 1.0 / mean if eta == 1.0 else truncated_negative_binomial_gamma(eta, mean)
        else:
            gamma = float(self.stopping_probability)
        return {"eta": eta, "gamma": gamma, "mean": truncated_negative_binomial_mean(eta, gamma)}

    def _noisy_score(self, est, X_val, y_val, spec, rng):
        # predicting validates the private validation rows (an allowed Normalizer quotes a bad
        # cell in its message): errors are re-raised without values, as in the runs' fits
        if self.scoring == "accuracy":
            pred = call_without_values(est.predict, X_val, name="X", catch=Exception, spent=True)
            pred, labels = np.asarray(pred), np.asarray(y_val)
            if pred.shape != labels.shape or labels.shape != (_num_samples(X_val),):
                # (a column of labels against a vector of predictions broadcast to an
                # n_val x n_val matrix, whose mean one record moves by 2 / n_val: review 28)
                raise ValueError("accuracy scoring needs one prediction and one label per "
                                 "validation row.")
            per_row = (pred == labels).astype(float)
        else:
            scores = call_without_values(self.scoring, est, X_val, y_val, name=("X", "y"),
                                         catch=Exception, spent=True)
            # a score that is not a number would be quoted by numpy's message: masked too
            per_row = call_without_values(np.asarray, scores, dtype=float,
                                          name="the scoring's output").ravel()
            if per_row.shape != (_num_samples(X_val),):  # (y is None for a transformer)
                raise ValueError("scoring must return one score per validation row (an array "
                                 "of n_val numbers). This search's budget counts as spent.")
            lo, hi = self._score_range()
            per_row = np.clip(np.nan_to_num(per_row, nan=lo), lo, hi)
        return float(spec.privatize(np.float64(per_row.mean()), random_state=rng))

    def _ledger(self, candidates=()):
        """The one ledger to charge: the search's, or one set on the inner estimator or on an
        estimator that a grid point puts in place (``{"clf": [ledgered_clf]}``: the runs'
        accountants are removed, so such a ledger had been bypassed, never charged)."""
        ledgers = [] if self.accountant is None else [self.accountant]
        holders = [self.estimator] + [est for cand in candidates for value in cand.values()
                                      for est in _estimators_in(value)]
        for holder in holders:
            params = holder.get_params(deep=True)
            for name in _privacy_param_names(holder, "accountant"):
                led = params[name]
                if led is not None and all(led is not other for other in ledgers):
                    ledgers.append(led)
        if len(ledgers) > 1:
            raise ValueError(
                "PrivateGridSearchCV: the search, its estimator and the estimators of its grid "
                "are given different accountants; the search charges one ledger once with its "
                "total. Set the ledger on the search (or on the estimators) only."
            )
        return ledgers[0] if ledgers else None

    @private_fit
    def fit(self, X, y=None, **fit_params):
        """Run the private search (charges the accountant first).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : passed to every ``estimator.fit``; those indexed by the
            rows (array-likes of length ``n_samples``, such as ``sample_weight``)
            are split like ``X``: the runs get their training rows, the refit
            all of them.

        Returns
        -------
        self
        """
        self._validate_params()
        # -- everything public, before the charge ---------------------------
        candidates, run, refit_budget = self._plan()
        lo, hi = self._score_range()
        ledger = self._ledger(candidates)
        # structure only, before the charge; the final estimator's tags say whether y is
        # required and whether it may have several columns (a Pipeline's own tags do not)
        final = self.estimator
        if isinstance(final, Pipeline) and isinstance(final.steps[-1][1], BaseEstimator):
            final = final.steps[-1][1]
        if is_dask_collection(X) and hasattr(X, "iloc"):
            # the split takes rows by position, which a dask DataFrame cannot do: refused from
            # its type alone, before its row count (computed from its partitions) is read
            raise TypeError("PrivateGridSearchCV: a dask DataFrame cannot be split by rows; pass "
                            "a dask array (X.to_dask_array(lengths=True)), or pandas / numpy.")
        n, d = check_public_structure(X, y, estimator=final,
                                      requires_y=get_tags(final).target_tags.required)
        if self.scoring == "accuracy" and y is None:
            raise ValueError("scoring='accuracy' needs y: pass the labels, or a scoring callable.")
        if n is None:
            X, y = indexable(X, y)
            n = len(y) if y is not None else X.shape[0]
        for key, sw in fit_params.items():  # public: the structure of the weights
            if key == "sample_weight" or key.endswith("__sample_weight"):
                check_weight_structure(sw, n, self)
        n_val = int(round(self.validation_fraction * n))
        if n_val < 1 or n - n_val < 2:
            raise ValueError(f"{n} rows are too few for validation_fraction={self.validation_fraction}.")
        unverified = []
        for cand in candidates:
            try:
                unverified += _check_candidate(self._run_estimator(cand, run), n - n_val, n, d,
                                               X, y, fit_params)
            except ValueError as exc:  # (a public check's message: no value of the data)
                if run.delta > 0 or self.strategy == "exhaustive" or "delta" not in str(exc):
                    raise
                raise ValueError(
                    f"{exc} (PrivateGridSearchCV: strategy={self.strategy!r} runs every "
                    "candidate with delta=0, pure base runs (Liu & Talwar 2019; Papernot & "
                    "Steinke 2022); for candidates that need delta use strategy='exhaustive' "
                    "with delta > 0.)") from None
        if self.refit:
            for cand in candidates:
                unverified += _check_candidate(self._run_estimator(cand, refit_budget), n, n, d,
                                               X, y, fit_params)
        for category, message in dict.fromkeys(unverified):  # (the runs' own are withheld)
            what = ("some candidates are not verified: "
                    if issubclass(category, PrivacyGuaranteeWarning) else "a candidate: ")
            warn_at_caller(f"PrivateGridSearchCV, {what}{message}", category)
        warn_large_delta("PrivateGridSearchCV", float(self.delta), n)
        law = self._stopping_law(len(candidates))
        if law is not None and not law["mean"] <= _MAX_MEAN_RUNS:  # (a public setting)
            raise ValueError(
                f"stopping_probability={self.stopping_probability!r} makes the search fit about "
                f"{law['mean']:.3g} models on average (more than {_MAX_MEAN_RUNS:.0e}): it would "
                "not finish after its charge. Choose a stopping probability for the number of "
                "runs you can afford (on average 1 / gamma for random stopping).")
        total = PrivacyBudget(float(self.epsilon), float(self.delta))
        # Laplace mechanism on the mean score (public inputs: calibrated before the charge):
        # sensitivity (hi - lo) / n_val, plus twice the rounding error of the computed mean of
        # n_val scores in [lo, hi] (any summation order, then one division: gamma_{n_val + 1}
        # max(|lo|, |hi|), Higham 2002, eq. (3.5))
        rounding = rounding_gamma(n_val + 1) * max(abs(lo), abs(hi))
        score_noise = calibrate(
            Query(shape=(), l1_sensitivity=(hi - lo) / n_val + 2.0 * rounding), run.epsilon, 0.0,
            mechanism="laplace",
        )

        # -- charge before touching the data ---------------------------
        record = None
        if ledger is not None:
            record = ledger.spend(total, source=type(self).__name__,
                                  description=f"{self.strategy} search over "
                                              f"{len(candidates)} candidates")
        self.privacy_spent_ = total
        self.run_budget_ = run
        self.n_candidates_ = len(candidates)
        self.stopping_law_ = law
        root = _search_seed_sequence(self.random_state, record)
        split_seq, pick_seq, run_seq, noise_seq, refit_seq = root.spawn(5)
        if self.strategy != "exhaustive":
            pick_rng = np.random.default_rng(pick_seq)
            if self.strategy == "random_stopping":
                n_runs = random_stopping_runs(law["gamma"], pick_rng)
            else:
                n_runs = negative_binomial_runs(law["eta"], law["gamma"], pick_rng)
            picks = pick_rng.integers(0, len(candidates), size=n_runs)
        else:
            picks = np.arange(len(candidates))

        # -- data ----------------------------------------------------------
        if sp.issparse(X):  # (indexable converts formats: scipy trusts the structure)
            check_sparse_structure(X, spent=True)
        X, y = indexable(X, y)
        perm = np.random.default_rng(split_seq).permutation(n)  # depends on n and the seed only
        val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        # (taking rows computes a dask input: its workers' errors may quote a cell)
        X_tr, X_val = (call_without_values(_take, X, idx, name="X", catch=Exception)
                       for idx in (train_idx, val_idx))
        y_tr, y_val = (None if y is None else call_without_values(_take, y, idx, name="y",
                                                                  catch=Exception)
                       for idx in (train_idx, val_idx))
        y_val = _as_vector(y_val)  # the scores compare labels row by row
        params_tr = _split_fit_params(fit_params, n, train_idx)
        # the labels and weights of every row are checked once, here (a run checks its
        # training rows only, and the scores read the validation rows unchecked): whether the
        # search refuses a bad record no longer depends on the part the split put it in
        _check_targets_and_weights(final, y, fit_params, X)
        self.score_noise_ = score_noise
        noise_rng = np.random.default_rng(noise_seq)
        best, scores = None, []
        # the number of runs is not releasable under the randomised strategies (see Notes), and
        # an allowed non-private step may warn on private values (an encoder with drop meeting
        # an unknown category, a function making a NaN): the runs' and the refit's warnings are
        # withheld in every strategy; the ones that public settings decide were shown before
        # the charge
        with _withheld_warnings():
            for j, seq in zip(picks, run_seq.spawn(len(picks))):
                est = self._run_estimator(candidates[j], run)
                _fit_run(est, seq, X_tr, y_tr, params_tr)
                s = self._noisy_score(est, X_val, y_val, self.score_noise_, noise_rng)
                scores.append(s)
                if best is None or s > best[0]:
                    best = (s, int(j), est)

            self.best_score_, best_j, model = best
            self.best_index_ = best_j
            self.best_params_ = dict(candidates[best_j])
            if self.refit:
                model = self._run_estimator(self.best_params_, refit_budget)
                _fit_run(model, refit_seq, X, y, fit_params)
        self.best_estimator_ = model
        if self.strategy == "exhaustive":
            scores = np.asarray(scores)
            results = {"params": candidates, "noisy_score": scores,
                       "rank_noisy_score": _rank_desc(scores)}
            for name in sorted({k for c in candidates for k in c}):
                col = np.ma.masked_all(len(candidates), dtype=object)
                for i, c in enumerate(candidates):
                    if name in c:
                        col[i] = c[name]
                results[f"param_{name}"] = col
            self.cv_results_ = results
        if hasattr(model, "classes_"):
            self.classes_ = model.classes_
        if hasattr(model, "n_features_in_"):
            self.n_features_in_ = model.n_features_in_
        return self

    # -- delegation -------------------------------------------------------
    # (the selected model may be a Pipeline whose scikit-learn steps quote a cell in their
    # errors: the delegations re-raise them without values, as the skdp estimators do)
    @available_if(_estimator_has("predict"))
    def predict(self, X):
        check_is_fitted(self)
        return call_without_values(self.best_estimator_.predict, X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        check_is_fitted(self)
        return call_without_values(self.best_estimator_.predict_proba, X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        check_is_fitted(self)
        return call_without_values(self.best_estimator_.decision_function, X)

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        check_is_fitted(self)
        return call_without_values(self.best_estimator_.transform, X)

    def score(self, X, y=None):
        """``best_estimator_.score`` (exact: for *public* test data only)."""
        check_is_fitted(self)
        return call_without_values(self.best_estimator_.score, X, y, name=("X", "y"))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        inner = self.estimator.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        return tags


def _as_vector(y):
    """A one-column ``y`` (public structure: the runs' fits flatten it too) as a vector."""
    if y is None or getattr(y, "ndim", None) == 1:
        return y
    if hasattr(y, "iloc"):
        return y.iloc[:, 0] if y.shape[1] == 1 else y
    arr = np.asarray(y)
    return arr[:, 0] if arr.ndim == 2 and arr.shape[1] == 1 else arr


def _take(a, idx):
    if hasattr(a, "iloc"):
        return a.iloc[idx]
    return np.asarray(a)[idx] if not hasattr(a, "tocsr") else a[idx]


def _split_fit_params(fit_params, n, idx):
    """The fit parameters with the row-indexed ones (array-likes of ``n`` entries) restricted
    to the rows ``idx``; the others as they are (scikit-learn's rule for fit parameters)."""
    out = {}
    for key, value in fit_params.items():
        rows = (value is not None and not np.isscalar(value) and not isinstance(value, dict)
                and hasattr(value, "__len__") and _num_samples_or_none(value) == n)
        out[key] = _take(value, idx) if rows else value
    return out


def _num_samples_or_none(value):
    try:
        return _num_samples(value)
    except TypeError:
        return None


def _rank_desc(scores):
    order = np.argsort(-scores, kind="stable")
    ranks = np.empty(len(scores), dtype=int)
    ranks[order] = np.arange(1, len(scores) + 1)
    return ranks
