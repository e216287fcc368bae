"""Privacy ledgers: one budget shared by many fits, threads and processes.

A ledger holds a total (epsilon, delta) budget and the list of what was spent
from it. Every private estimator accepts a ledger as its ``accountant``
parameter and calls :meth:`spend` *before* it touches the data
(:meth:`skdp.base.PrivateEstimatorMixin._charge_budget`): the call checks that
the spend still fits in the budget and records it in one atomic step, or
raises :class:`~skdp.BudgetExceededError` and records nothing.

Two ledgers share one interface:

* :class:`BudgetLedger` lives in memory and is guarded by a
  :class:`threading.Lock` (threads of one process);
* :class:`SQLiteLedger` lives in a SQLite file that any number of processes
  open; check-and-spend is one ``BEGIN IMMEDIATE ... COMMIT`` transaction.

Both come back *as the same object* from :func:`sklearn.base.clone` and
:func:`copy.deepcopy`, so ``GridSearchCV`` (which clones its estimator for
every fit) charges every fit to the one ledger.

Composition
-----------
``composition="filter"`` (the default for new ledgers) enforces the privacy
filter of :mod:`skdp._filter`: Gaussian releases (which record their GDP
parameter ``mu``) compose as ``sqrt(sum mu_i^2)`` (Dong, Roth & Su 2022;
Smith & Thakurta 2022), the others by basic composition, and the rule is
valid under fully adaptive composition (fits and their budgets chosen after
seeing earlier results). 100 analytic-Gaussian fits at (0.1, 1e-7) fill
(10, 1e-5) under basic composition; under the filter 882 of them fit in
(3, 1e-5). A ledger whose spends carry no Gaussian curve behaves exactly
as under basic composition.

``composition="basic"`` enforces basic composition (Dwork & Roth 2014,
Theorem 3.16): spends ``(eps_i, delta_i)`` compose to
``(sum eps_i, sum delta_i)``, valid for any adaptive sequence.
:meth:`total` also *reports* the advanced (heterogeneous) composition bound;
see :func:`compose_heterogeneous`.
"""

import itertools
import math
import os
import sqlite3
import threading
import time
import urllib.parse
import uuid
import weakref
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ._budget import PrivacyBudget
from ._filter import _RTOL, FilterState, GaussianCurve, filter_charge, filter_replay, filter_spent
from ._validation import check_epsilon_delta, check_positive_finite
from .exceptions import BudgetExceededError, LedgerFileError

__all__ = [
    "SpendRecord",
    "BudgetLedger",
    "SQLiteLedger",
    "LedgerFileError",
    "compose_heterogeneous",
]

@dataclass(frozen=True)
class SpendRecord:
    """One spend recorded by a ledger.

    Attributes
    ----------
    who : str
        The source of the spend (estimator class name for fits).
    what : str
        Free-text description (``"fit"``, ``"PrivateGridSearchCV"``...).
    epsilon, delta : float
        The budget spent.
    when : float
        Unix timestamp of the spend.
    pid : int
        Id of the process that spent.
    serial : int
        Position of the spend in its ledger (0, 1, 2, ... in order of
        acceptance; ``-1`` if unknown). Unique within a ledger: estimators
        mix it into a seeded ``random_state`` so that two fits charged to one
        ledger never share a noise draw.
    mu, tv : float or None
        The spend's Gaussian curve (:class:`skdp._filter.GaussianCurve`):
        GDP parameter of the ideal release and the sampler's total
        variation; ``None`` for a spend known only by (epsilon, delta).
    """

    who: str
    what: str
    epsilon: float
    delta: float
    when: float
    pid: int
    serial: int = -1
    mu: float = None
    tv: float = None

    @property
    def budget(self):
        return PrivacyBudget(self.epsilon, self.delta)

    @property
    def curve(self):
        """The spend's :class:`~skdp._filter.GaussianCurve`, or ``None``."""
        return None if self.mu is None else GaussianCurve(self.mu, self.tv or 0.0)


def compose_heterogeneous(epsilons, deltas, delta_slack):
    """Advanced composition of mechanisms with different (eps_i, delta_i).

    For an adaptive sequence of ``k`` mechanisms whose parameters
    ``(eps_i, delta_i)`` are fixed in advance (the mechanisms may depend on
    earlier outputs; their parameters may not: with parameters chosen
    adaptively this is not a valid bound, Rogers, Roth, Ullman & Vadhan
    2016), mechanism ``i`` being ``(eps_i, delta_i)``-DP, and any
    ``delta_slack > 0``, the composition is
    ``(eps_total, sum delta_i + delta_slack)``-DP with

        eps_total = sqrt(2 ln(1/delta_slack) sum eps_i^2) + sum eps_i (e^eps_i - 1).

    Derivation. This is the proof of Dwork, Rothblum & Vadhan (2010), Theorem
    III.3 (Dwork & Roth 2014, Theorem 3.20) with per-step constants: outside
    events of total probability ``sum delta_i`` the privacy loss ``L_i`` of
    step ``i`` satisfies ``|L_i| <= eps_i`` and ``E[L_i | past] <=
    eps_i (e^eps_i - 1)`` (Dwork & Roth, Lemma 3.18 / Prop. 3.21). The
    centred increments ``L_i - E[L_i | past]`` lie in an interval of length
    ``2 eps_i``, so the Azuma-Hoeffding inequality gives
    ``P(sum L_i > sum E[L_i|past] + t) <= exp(-t^2 / (2 sum eps_i^2))``;
    ``t = sqrt(2 ln(1/delta_slack) sum eps_i^2)`` makes this ``delta_slack``.
    With all ``eps_i = eps`` it is exactly Theorem 3.20
    (``eps sqrt(2 k ln(1/delta')) + k eps (e^eps - 1)``). It is implied by the
    heterogeneous composition theorem of Kairouz, Oh & Viswanath (2015,
    Theorem 3.5), whose third bound has the smaller drift term
    ``sum eps_i (e^eps_i - 1) / (e^eps_i + 1)`` and the smaller delta
    ``1 - (1 - delta_slack) prod (1 - delta_i) <= delta_slack + sum delta_i``.

    As in :func:`skdp.compose_advanced`, the basic composition
    ``(sum eps_i, sum delta_i)`` is returned when it is smaller.

    Parameters
    ----------
    epsilons, deltas : array-like of shape (k,)
    delta_slack : float in (0, 1)

    Returns
    -------
    PrivacyBudget

    References
    ----------
    C. Dwork, G. N. Rothblum, S. Vadhan. Boosting and differential privacy.
    FOCS 2010.
    P. Kairouz, S. Oh, P. Viswanath. The composition theorem for differential
    privacy. ICML 2015.

    Examples
    --------
    >>> from skdp._ledger import compose_heterogeneous
    >>> b = compose_heterogeneous([0.01] * 1000, [0.0] * 1000, 1e-6)
    >>> round(b.epsilon, 4)
    1.7672
    """
    _, delta_slack = check_epsilon_delta(1.0, delta_slack, require_delta=True)
    eps = np.asarray(epsilons, dtype=float).ravel()
    dl = np.asarray(deltas, dtype=float).ravel()
    if eps.shape != dl.shape:
        raise ValueError("epsilons and deltas must have the same length.")
    if np.any(~np.isfinite(eps)) or np.any(eps < 0) or np.any(~np.isfinite(dl)) or np.any(dl < 0):
        raise ValueError("epsilons and deltas must be finite and >= 0.")
    basic_eps = math.fsum(eps)
    basic_delta = math.fsum(dl)
    if eps.size == 0:
        return PrivacyBudget.zero()
    adv = math.sqrt(2.0 * math.log(1.0 / delta_slack) * math.fsum(eps**2)) + math.fsum(
        eps * np.expm1(eps)
    )
    if adv >= basic_eps:
        return PrivacyBudget(basic_eps, basic_delta)
    return PrivacyBudget(float(adv), basic_delta + delta_slack)


def _as_budget(budget):
    if isinstance(budget, PrivacyBudget):
        return budget
    if isinstance(budget, (tuple, list)) and len(budget) == 2:
        return PrivacyBudget(*budget)
    raise TypeError(f"budget must be a PrivacyBudget or an (epsilon, delta) pair, got {budget!r}.")


def _fits(spent_eps, spent_delta, budget, total_eps, total_delta):
    return (spent_eps + budget.epsilon <= total_eps * (1 + _RTOL)) and (
        spent_delta + budget.delta <= total_delta * (1 + _RTOL)
    )


_COMPOSITIONS = ("filter", "basic")


def _check_composition(composition):
    if composition not in _COMPOSITIONS:
        raise ValueError(f"composition must be one of {_COMPOSITIONS}, got {composition!r}.")
    return composition


def _as_curve(curve):
    if curve is None or isinstance(curve, GaussianCurve):
        return curve
    raise TypeError(f"curve must be a skdp._filter.GaussianCurve or None, got {curve!r}.")


def _replay(records, total_eps, total_delta):
    """The filter state after the ledger's records (:func:`skdp._filter.filter_replay`)."""
    return filter_replay(total_eps, total_delta, ((r.epsilon, r.delta, r.curve) for r in records))


def _accepts(composition, records, budget, curve, total_eps, total_delta, state=None):
    """The acceptance rule of a ledger for one more spend, given its records.

    Returns the filter state after the spend (``True`` under basic
    composition), or ``None`` if refused. ``state``: the filter state after
    ``records``, when the caller keeps it (else it is replayed).
    """
    if composition == "basic":
        spent_eps = math.fsum(r.epsilon for r in records)
        spent_delta = math.fsum(r.delta for r in records)
        return True if _fits(spent_eps, spent_delta, budget, total_eps, total_delta) else None
    if state is None:
        state = _replay(records, total_eps, total_delta)
    new, _ = filter_charge(state, budget.epsilon, budget.delta, curve, total_eps)
    return new


def _accepts_all(composition, records, charges, total_eps, total_delta, state=None):
    """Whether the ledger's rule accepts every ``(budget, curve)`` of ``charges``, in turn,
    after ``records`` (each accepted charge joins what the next one is checked against: the
    records' sums under basic composition, the filter's state under the filter, replayed
    once when the caller does not keep it)."""
    records = list(records)
    for budget, curve in charges:
        new = _accepts(composition, records, budget, curve, total_eps, total_delta, state)
        if new is None:
            return False
        if composition == "basic":
            records.append(SpendRecord("accepts", "planned", budget.epsilon, budget.delta, 0.0,
                                       0, -1))
        else:
            state = new
    return True


def _spent(composition, records, total_eps, total_delta):
    if composition == "basic":
        return PrivacyBudget(math.fsum(r.epsilon for r in records),
                             math.fsum(r.delta for r in records))
    state = _replay(records, total_eps, total_delta)
    basic = _spent("basic", records, total_eps, total_delta)
    if state.mu2_charged <= 0:  # every spend was charged to the basic pool: exact sums
        return basic
    filt = PrivacyBudget(*filter_spent(state, total_eps, total_delta))
    # both bound the recorded sequence; report the smaller epsilon (mixed Gaussian and
    # pure spends can compose better by basic composition)
    return basic if basic.epsilon <= filt.epsilon and basic.delta <= total_delta else filt


def _exceeded_message(ledger, budget, records):
    s = _spent(ledger.composition, records, ledger.epsilon, ledger.delta)
    msg = (
        f"{type(ledger).__name__}: spending (epsilon={budget.epsilon:.6g}, "
        f"delta={budget.delta:.6g}) would exceed the budget (epsilon={ledger.epsilon:.6g}, "
        f"delta={ledger.delta:.6g}) under {ledger.composition} composition; already spent "
        f"(epsilon={s.epsilon:.6g}, delta={s.delta:.6g}). Nothing was spent."
    )
    if ledger.composition == "filter":
        b = _spent("basic", records, ledger.epsilon, ledger.delta)
        if _fits(b.epsilon, b.delta, budget, ledger.epsilon, ledger.delta):
            msg += (
                " Basic composition would have accepted this sequence of fits: at the first "
                "Gaussian fit the filter turned the whole epsilon budget (and most of delta) into "
                "Gaussian capacity, which pays many Gaussian fits (PCA, OLS, the output and "
                "gradient routes) far better than basic composition but other fits (objective "
                "perturbation, Laplace, pure epsilon) at a loss. For sequences that mix them, "
                "use a new ledger with composition='basic' (the choice must be made before the "
                "first fit)."
            )
    if ledger.delta == 0 and budget.delta > 0:
        msg += (
            f" This ledger has delta=0 (pure epsilon-DP) and the fit spends delta="
            f"{budget.delta:.3g}: the classifiers, PrivatePCA and the Gaussian scaler default to "
            "delta=1e-5. Give the ledger a delta (BudgetLedger(epsilon, delta)) or pass delta=0 "
            "to the estimator (its pure route, where it has one).")
    return msg


class _Captured(Exception):
    def __init__(self, budget, curve):
        super().__init__()
        self.budget, self.curve = budget, curve


class _Capture:
    """An accountant whose ``spend`` ends the fit with the charge it was given (and, as skdp's
    ledgers are, it is given the release's Gaussian curve)."""

    takes_curve = True

    def spend(self, budget, source="", description="", curve=None):
        raise _Captured(budget, curve)


def _planned_charges(estimator, X, y=None, **fit_params):
    """The ``(budget, curve, accountant)`` of every charge ``estimator.fit(X, y,
    **fit_params)`` would make, in order: one for a private estimator or a search
    (:func:`_planned_charge`; ``accountant`` None), one per private step of a Pipeline
    (with the step's own ``accountant``).

    A Pipeline's private steps are dry-run in turn up to their charge, each on zeros of the
    structure it would be given (the widths and formats that the search propagates through
    the steps it allows, :func:`skdp.model_selection._search._leaf_inputs`): what their
    public settings decide (a ``classes`` of one label, an unknown mechanism) is raised here,
    before any step is charged. A step whose input structure is not known before the data
    are read (after a non-private step that fits on them) is refused with a ``TypeError``.
    """
    from sklearn.pipeline import Pipeline

    from .base import PrivateEstimatorMixin
    from .model_selection import PrivateGridSearchCV

    if not isinstance(estimator, Pipeline):
        charge = _planned_charge(estimator, X, y, **fit_params)
        return [] if charge is None else [(*charge, None)]
    from .model_selection._search import _dry_fit_params, _dry_inputs, _leaf_inputs, _stand_in
    from ._validation import check_public_structure, is_sparse_input

    n, d = check_public_structure(X, y)
    if n is None or d is None:
        raise TypeError("accepts: the number of rows and columns of X must be known from its "
                        "structure (an array, a sparse matrix or a DataFrame).")
    dtype, y_in = _dry_inputs(X, y, n, n)
    charges = []
    for prefix, step, width, sparse in _leaf_inputs(estimator, d, is_sparse_input(X), X):
        if not isinstance(step, (PrivateEstimatorMixin, PrivateGridSearchCV)):
            continue
        if width is None:
            raise TypeError(
                f"accepts: the input structure of the private step {prefix[:-2]!r} is not "
                "known before the data are read (a step before it fits on them): check that "
                "step with ledger.accepts(step, X_step, y) on the structure it will be given.")
        charge = _planned_charge(step, _stand_in(n, width, sparse, dtype), y_in,
                                 **_dry_fit_params(fit_params, prefix, n, n))
        if charge is not None:
            charges.append((*charge, _own_ledger(step)))
    return charges


def _planned_charge(estimator, X, y=None, **fit_params):
    """``(budget, curve)`` that ``estimator.fit(X, y, **fit_params)`` would charge: its fit run
    up to the charge, which comes before any value is read (the fit protocol); ``None`` when
    the fit charges nothing."""
    from sklearn.base import clone
    from sklearn.pipeline import Pipeline

    from .base import PrivateEstimatorMixin
    from .model_selection import PrivateGridSearchCV

    if isinstance(estimator, Pipeline) or not isinstance(
            estimator, (PrivateEstimatorMixin, PrivateGridSearchCV)):
        raise TypeError(
            "accepts: pass a budget, an skdp estimator, a PrivateGridSearchCV or a Pipeline "
            "of them.")
    est, capture = clone(estimator), _Capture()
    if isinstance(estimator, PrivateGridSearchCV):
        # the search's own rule finds the ledger it would charge and raises what it raises
        # (two different ledgers), read on the original (a clone deep-copies each ledger
        # separately); the clone's dry run charges the probe in its place
        _own_ledger(estimator)
        est._ledger = lambda candidates=(): capture
    else:  # every ledger in it becomes the probe
        probes = {k: capture for k, v in est.get_params(deep=True).items()
                  if k.endswith("__accountant") and v is not None}
        est.set_params(**probes, accountant=capture)
    try:
        est.fit(X, y, **fit_params)
    except _Captured as charge:
        return _as_budget(charge.budget), charge.curve
    return None  # it completed without a charge: it spends nothing


def _own_ledger(step):
    """The accountant a private step's fit charges: its ``accountant``, or for a search the
    one its own rule finds (on its estimator or on the estimators of its grid)."""
    from sklearn.model_selection import ParameterGrid

    from .model_selection import PrivateGridSearchCV

    if isinstance(step, PrivateGridSearchCV):
        return step._ledger(list(ParameterGrid(step.param_grid)))
    return step.get_params(deep=False).get("accountant")


class _LedgerMixin:
    """Reporting shared by both ledgers (needs ``_epsilon``, ``_delta``, ``spends``).

    The budget is fixed when a ledger is created: ``epsilon`` and ``delta``
    are read-only properties, and the attributes behind them cannot be
    rebound either (:meth:`__setattr__`).
    """

    _FROZEN = ("_epsilon", "_delta", "_ledger_id", "path", "_composition")

    @property
    def epsilon(self):
        """The ledger's total epsilon (read-only)."""
        return self._epsilon

    @property
    def delta(self):
        """The ledger's total delta (read-only)."""
        return self._delta

    @property
    def composition(self):
        """``"filter"`` or ``"basic"``: the rule the ledger enforces (read-only)."""
        return self._composition

    def __setattr__(self, name, value):
        if name in ("epsilon", "delta", "composition") or (name in self._FROZEN and name in self.__dict__):
            raise AttributeError(
                f"{type(self).__name__}.{name} is fixed when the ledger is created and cannot "
                "be changed (a ledger's budget can never be raised)."
            )
        object.__setattr__(self, name, value)

    @property
    def budget(self):
        """The ledger's total budget as a :class:`~skdp.PrivacyBudget`."""
        return PrivacyBudget(self.epsilon, self.delta)

    @property
    def spent(self):
        """Everything spent so far, under the ledger's composition rule.

        Under ``"basic"``: ``(sum eps_i, sum delta_i)``. Under ``"filter"``:
        the same when no spend carries a Gaussian curve; otherwise the
        composed cost of the recorded spends at the ledger's delta
        (:mod:`skdp._filter`, "What is reported"). :attr:`spent_basic` gives
        the basic-composition sum side by side.

        What this bounds: the recorded spends *as a fixed sequence*. The
        guarantee of an interaction in which each fit was chosen after seeing
        earlier results (fully adaptive composition) is the ledger's own
        ``(epsilon, delta)``, which the filter's rule enforces; a reported
        figure below it is not a guarantee for such an interaction (Rogers,
        Roth, Ullman & Vadhan 2016: realised parameters plugged into a
        composition bound do not give a valid odometer).
        """
        return self.total(self.composition)

    @property
    def spent_basic(self):
        """``(sum eps_i, sum delta_i)`` of the recorded spends (basic composition)."""
        return self.total("basic")

    def accepts(self, fit, X=None, y=None, **fit_params):
        """Whether the ledger would accept ``fit`` now; nothing is spent, no value is read.

        :attr:`remaining` does not tell it under the filter (a Gaussian fit may
        be accepted when it shows little epsilon left, another refused when it
        shows some); this applies the ledger's own rule to the charge the fit
        would make.

        Parameters
        ----------
        fit : PrivacyBudget, (epsilon, delta), or an unfitted private estimator
            A budget is checked as a spend without a Gaussian curve. A private
            estimator (an skdp estimator or
            :class:`~skdp.model_selection.PrivateGridSearchCV`) is fitted on
            ``X`` and ``y`` with an accountant that stops the fit at its charge,
            which comes before any value is read (the fit protocol: only the
            structure, the public settings and the public bounds decide it);
            that charge, with the Gaussian curve the filter composes, is
            checked. A fit that charges nothing is accepted. A Pipeline
            charges once per private step: each is dry-run in turn on zeros of
            the structure it would be given (the errors their public settings
            decide are raised here, before anything is spent), and the fit is
            accepted when every step's own accountant (usually this ledger)
            would accept its charges in turn; a step without one is charged
            nowhere.
        X, y : array-like
            What the estimator would be fitted on (its structure only).
        **fit_params
            Passed to ``fit`` (``sample_weight``: its structure only).

        Returns
        -------
        bool
        """
        if isinstance(fit, (PrivacyBudget, tuple, list)):
            return self._would_accept_all([(_as_budget(fit), None)])
        from sklearn.pipeline import Pipeline

        planned = _planned_charges(fit, X, y, **fit_params)
        if not isinstance(fit, Pipeline):  # this ledger's answer for this fit
            return self._would_accept_all([(_as_budget(b), _as_curve(c)) for b, c, _ in planned])
        # a Pipeline: every step's charges against the step's own accountant, in order
        groups = {}
        for b, c, accountant in planned:
            if accountant is None:
                continue  # (a step without an accountant is charged nowhere)
            groups.setdefault(id(accountant), (accountant, []))[1].append(
                (_as_budget(b), _as_curve(c)))
        for accountant, charges in groups.values():
            check = getattr(accountant, "_would_accept_all", None)
            if check is None:
                raise TypeError(f"accepts: a step's accountant ({type(accountant).__name__}) is "
                                "not an skdp ledger: its decision cannot be asked in advance.")
            if not check(charges):
                return False
        return True

    @property
    def remaining(self):
        """The ledger's budget minus :attr:`spent` (never negative).

        Under the filter a Gaussian fit may still be accepted when this shows
        little epsilon left (its cost is its ``mu``, not its epsilon), and a
        non-Gaussian fit may be refused when it shows some: the filter's
        rule, not this difference, decides. Like :attr:`spent`, it describes
        the recorded spends as a fixed sequence: do not budget it elsewhere
        when the fits were chosen adaptively (the ledger's ``(epsilon,
        delta)`` is the guarantee of that interaction).
        """
        s = self.spent
        return PrivacyBudget(max(0.0, self.epsilon - s.epsilon), max(0.0, self.delta - s.delta))

    def total(self, composition="basic", delta_slack=None):
        """Total privacy cost of all the recorded spends.

        Parameters
        ----------
        composition : {"basic", "advanced", "filter"}, default="basic"
            ``"basic"``: ``(sum eps_i, sum delta_i)`` (Dwork & Roth 2014,
            Thm 3.16). ``"advanced"``: the heterogeneous advanced composition
            of :func:`compose_heterogeneous` (never larger in epsilon than
            basic; it adds ``delta_slack``), valid for the recorded spends
            as a sequence fixed in advance, not for parameters chosen
            adaptively (Rogers et al. 2016). ``"filter"``: the cost reported by
            the privacy filter (:mod:`skdp._filter`).
        delta_slack : float in (0, 1), default=None
            The extra delta of advanced composition; required for it.

        Returns
        -------
        PrivacyBudget
        """
        records = self.spends
        if composition != "advanced" and delta_slack is not None:
            raise ValueError("delta_slack is only used with composition='advanced'.")
        if composition in _COMPOSITIONS:
            return _spent(composition, records, self.epsilon, self.delta)
        if composition == "advanced":
            if delta_slack is None:
                raise ValueError("composition='advanced' needs delta_slack in (0, 1).")
            return compose_heterogeneous([r.epsilon for r in records],
                                         [r.delta for r in records], delta_slack)
        raise ValueError(
            f"composition must be 'basic', 'advanced' or 'filter', got {composition!r}.")

    # A ledger is a handle on *one* budget: copies must not fork it.
    # sklearn.base.clone deep-copies non-estimator parameters, so this is what
    # keeps GridSearchCV's clones charging the same ledger.
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        records = self.spends
        s = _spent(self.composition, records, self.epsilon, self.delta)
        b = _spent("basic", records, self.epsilon, self.delta)
        return (
            f"{type(self).__name__}(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"composition={self.composition!r}; spent epsilon={s.epsilon:.6g}, "
            f"delta={s.delta:.6g} (basic: {b.epsilon:.6g}, {b.delta:.6g}) in {len(records)} spends)"
        )


# in-memory ledgers alive in this process, by token: unpickling in the
# process that created the ledger gives back the very same object.
_LIVE_LEDGERS = weakref.WeakValueDictionary()
_TOKENS = itertools.count()


class BudgetLedger(_LedgerMixin):
    """In-memory privacy ledger shared by the fits of one process.

    ``spend`` checks and records under one :class:`threading.Lock`, so
    threads (including joblib's ``"threading"`` backend) share it safely.

    Parameters
    ----------
    epsilon : float
        Total epsilon, > 0.
    delta : float, default=0.0
        Total delta, in [0, 1).
    composition : {"filter", "basic"}, default="filter"
        The rule that accepts spends: the privacy filter of
        :mod:`skdp._filter` (Gaussian fits compose by their GDP parameter,
        valid under fully adaptive composition) or basic composition.

    Attributes
    ----------
    spends : list of SpendRecord
        Copy of the records (with their curves), oldest first.
    spent, remaining : PrivacyBudget
        The spends' cost under the ledger's rule, and what is left.
    spent_basic : PrivacyBudget
        The basic-composition sum of the spends.

    Notes
    -----
    **Processes.** An in-memory budget cannot be shared between processes. A
    ledger is bound to the process that created it:

    * pickled and unpickled *in that process* it comes back as the same
      object (so ``joblib.dump``/``load`` of a fitted estimator is harmless);
    * in *any other process* (unpickled by a joblib ``loky`` or
      ``multiprocessing`` worker, or inherited through ``fork``) it is a
      read-only snapshot: :meth:`spend` raises :class:`RuntimeError` instead
      of silently spending from a private copy of the budget, which would let
      ``n`` workers spend ``n`` times the budget.

    So ``GridSearchCV(..., n_jobs=2)`` with a ``BudgetLedger`` fails loudly
    with the default (process-based) joblib backend; run it under
    ``joblib.parallel_backend("threading")``, or use :class:`SQLiteLedger`,
    which is shared by processes.

    Examples
    --------
    >>> from skdp import BudgetLedger, PrivacyBudget
    >>> ledger = BudgetLedger(1.0, 1e-5)
    >>> ledger.spend(PrivacyBudget(0.25, 0.0), source="demo", description="first").epsilon
    0.25
    >>> ledger.remaining
    PrivacyBudget(epsilon=0.75, delta=1e-05)
    """

    def __init__(self, epsilon, delta=0.0, composition="filter"):
        eps, dl = check_epsilon_delta(epsilon, delta)
        object.__setattr__(self, "_epsilon", eps)
        object.__setattr__(self, "_delta", dl)
        object.__setattr__(self, "_composition", _check_composition(composition))
        self._lock = threading.Lock()
        self._records = []
        self._state = FilterState.start(eps, dl) if self._composition == "filter" else None
        self._pid = os.getpid()
        self._token = (self._pid, next(_TOKENS), id(self))
        self._detached = False
        _LIVE_LEDGERS[self._token] = self

    def _check_process(self):
        if self._detached or os.getpid() != self._pid:
            raise RuntimeError(
                "This BudgetLedger was created in another process (it reached this one by "
                "pickling or fork). An in-memory ledger cannot be shared between processes: "
                "spending here would fork the budget. Use skdp.SQLiteLedger for "
                "multi-process work, or run joblib with parallel_backend('threading')."
            )

    def spend(self, budget, source="", description="", curve=None):
        """Atomically check that ``budget`` fits and record it.

        Parameters
        ----------
        budget : PrivacyBudget or (epsilon, delta)
        source : str
            Who spends (estimator class name for fits).
        description : str
            What the spend is for.
        curve : GaussianCurve or None, default=None
            The release's Gaussian curve, when it is a Gaussian mechanism
            (estimators pass it; see :mod:`skdp._filter`).

        Returns
        -------
        SpendRecord

        Raises
        ------
        BudgetExceededError
            If the ledger's rule refuses the spend; nothing is recorded.
        RuntimeError
            If called in a process other than the one that created the ledger.
        """
        budget = _as_budget(budget)
        curve = _as_curve(curve)
        self._check_process()
        with self._lock:
            state = _accepts(self.composition, self._records, budget, curve, self.epsilon,
                             self.delta, self._state)
            if state is None:
                raise BudgetExceededError(_exceeded_message(self, budget, self._records))
            # the record first: nothing can fail between the state's update and the append
            record = SpendRecord(
                str(source), str(description), budget.epsilon, budget.delta, time.time(),
                os.getpid(), len(self._records),
                None if curve is None else curve.mu, None if curve is None else curve.tv,
            )
            self._state = state if self.composition == "filter" else None
            self._records.append(record)
            return record

    def _would_accept_all(self, charges):
        with self._lock:
            return _accepts_all(self.composition, self._records, charges, self.epsilon,
                                self.delta, self._state)

    @property
    def spends(self):
        with self._lock:
            return list(self._records)

    def __reduce__(self):
        return (
            _restore_budget_ledger,
            (self._token, self.epsilon, self.delta, tuple(self.spends), self.composition),
        )


def _restore_budget_ledger(token, epsilon, delta, records, composition="basic"):
    if token[0] == os.getpid():
        live = _LIVE_LEDGERS.get(token)
        if live is not None:
            return live
    ledger = BudgetLedger(epsilon, delta, composition)
    ledger._records = list(records)  # a read-only snapshot (spend refuses: _detached)
    if ledger.composition == "filter":  # accepts() reads the filter's state (review 26, F2)
        ledger._state = _replay(ledger._records, ledger.epsilon, ledger.delta)
    ledger._detached = True
    del _LIVE_LEDGERS[ledger._token]
    return ledger


_SCHEMA = """
CREATE TABLE IF NOT EXISTS skdp_budget (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    created REAL NOT NULL,
    ledger_id TEXT,
    composition TEXT
);
CREATE TABLE IF NOT EXISTS skdp_spends (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    who TEXT NOT NULL,
    what TEXT NOT NULL,
    epsilon REAL NOT NULL,
    delta REAL NOT NULL,
    at REAL NOT NULL,
    pid INTEGER NOT NULL,
    mu REAL,
    tv REAL
);
"""


class SQLiteLedger(_LedgerMixin):
    """Privacy ledger stored in a SQLite file shared by processes.

    The file stores the total budget and every spend. Any process (a joblib
    worker, another script) that opens the same path shares the budget.

    Parameters
    ----------
    path : str or os.PathLike
        The database file. Created (with the given budget) if it does not
        exist or holds no budget yet.
    epsilon, delta : float, default=None
        The total budget. For an existing ledger file they may be omitted
        (the stored budget is used); if given they must equal the stored
        budget exactly, otherwise :class:`ValueError` is raised: a ledger's
        budget is fixed when it is created and never silently changed.
    timeout : float, default=60.0
        Seconds to wait for another process's transaction before failing
        with :class:`sqlite3.OperationalError` ("database is locked").
    journal_mode : {"wal", "delete"}, default="wal"
        SQLite journal. Both are crash-safe (a transaction is committed
        whole or not at all); use ``"delete"`` on network file systems,
        where WAL's shared memory does not work.
    composition : {"filter", "basic"} or None, default=None
        The acceptance rule (see :class:`BudgetLedger`), stored in the file
        when it is created. ``None``: ``"filter"`` for a new ledger, the
        stored rule for an existing one (``"basic"`` for files written before
        the filter existed); a rule different from the stored one raises.

    Notes
    -----
    **Atomicity.** :meth:`spend` runs ``BEGIN IMMEDIATE`` (which takes the
    database's write lock, waiting up to ``timeout``), sums the recorded
    spends, checks the new spend fits, inserts it and commits. Two processes
    can therefore never both pass the check on the same remaining budget.
    ``synchronous=FULL`` makes a committed spend durable. A process killed
    inside the transaction leaves no trace: its lock dies with it and SQLite
    rolls its uncommitted write back (hot journal / uncommitted WAL frames)
    on the next access.

    **Copies and pickling.** The object holds only the path and budget; every
    operation opens its own short-lived connection (connections are never
    shared between threads or carried across ``fork``). ``copy``/``deepcopy``
    /``clone`` return the same object, and a pickled ledger (sent to a joblib
    worker) reopens the same file, checking its budget.

    Examples
    --------
    >>> import os, tempfile
    >>> from skdp import SQLiteLedger, PrivacyBudget
    >>> path = os.path.join(tempfile.mkdtemp(), "budget.sqlite")
    >>> ledger = SQLiteLedger(path, epsilon=1.0, delta=1e-6)
    >>> _ = ledger.spend(PrivacyBudget(0.5), source="doc", description="example")
    >>> SQLiteLedger(path).remaining   # another handle on the same file
    PrivacyBudget(epsilon=0.5, delta=1e-06)
    """

    def __init__(self, path, epsilon=None, delta=None, *, timeout=60.0, journal_mode="wal",
                 composition=None):
        object.__setattr__(self, "path", os.fspath(path))
        self.timeout = check_positive_finite(timeout, "timeout")
        if journal_mode not in ("wal", "delete"):
            raise ValueError(f"journal_mode must be 'wal' or 'delete', got {journal_mode!r}.")
        self.journal_mode = journal_mode
        if epsilon is None and delta is not None:
            raise ValueError("give epsilon together with delta (or neither, to open a ledger).")
        if epsilon is not None:
            epsilon, delta = check_epsilon_delta(epsilon, 0.0 if delta is None else delta)
        if composition is not None:
            _check_composition(composition)
        if not os.path.exists(self.path):
            if epsilon is None:
                raise FileNotFoundError(
                    f"no ledger file at {self.path!r}. Create a ledger explicitly by giving its "
                    "budget: SQLiteLedger(path, epsilon, delta)."
                )
            self._create(epsilon, delta, composition or "filter")
        stored_eps, stored_delta, ledger_id, stored_comp = self._read_budget()
        if composition is not None and composition != stored_comp:
            raise ValueError(
                f"the ledger {self.path!r} was created with composition={stored_comp!r}, not "
                f"{composition!r}; a ledger's rule cannot be changed.")
        if epsilon is not None and (epsilon, delta) != (stored_eps, stored_delta):
            raise ValueError(
                f"the ledger {self.path!r} was created with budget (epsilon={stored_eps!r}, "
                f"delta={stored_delta!r}), not (epsilon={epsilon!r}, delta={delta!r}). A "
                "ledger's budget cannot be changed; open it without epsilon/delta or use "
                "a new file."
            )
        object.__setattr__(self, "_epsilon", stored_eps)
        object.__setattr__(self, "_delta", stored_delta)
        object.__setattr__(self, "_ledger_id", ledger_id)
        object.__setattr__(self, "_composition", stored_comp)

    # -- connection -----------------------------------------------------
    def _connect(self, create=False):
        """A short-lived connection; never creates the file unless ``create``."""
        if create:
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        else:
            uri = "file:" + urllib.parse.quote(os.path.abspath(self.path)) + "?mode=rw"
            try:
                conn = sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)
            except sqlite3.OperationalError as exc:
                raise self._not_a_ledger("the file is missing or cannot be opened") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
            if self.journal_mode == "wal":
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if mode.lower() != "wal":  # e.g. a file system without shared memory
                    raise sqlite3.OperationalError(f"could not enable WAL journal (got {mode!r}).")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise self._not_a_ledger("it is not a readable SQLite database") from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def _not_a_ledger(self, why):
        return LedgerFileError(
            f"{self.path!r} is not a usable skdp ledger: {why}. A ledger whose file vanished, "
            "was truncated or replaced refuses to spend (it never starts over with a full "
            "budget). Restore the file from a backup (SQLiteLedger.backup) or create a new "
            "ledger explicitly with SQLiteLedger(new_path, epsilon, delta)."
        )

    @contextmanager
    def _transaction(self, create=False):
        """``BEGIN IMMEDIATE`` ... ``COMMIT`` (rollback on any error)."""
        conn = self._connect(create=create)
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                raise self._not_a_ledger("it is not a readable SQLite database") from exc
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()

    def _create(self, epsilon, delta, composition):
        """Create a new ledger file (only for a path that does not exist)."""
        with self._transaction(create=True) as conn:
            tables = conn.execute("SELECT name FROM sqlite_master").fetchall()
            if tables:  # someone else created it between our check and now
                raise FileExistsError(f"{self.path!r} already exists; open it instead.")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(
                "INSERT INTO skdp_budget (id, epsilon, delta, created, ledger_id, composition) "
                "VALUES (1, ?, ?, ?, ?, ?)",
                (epsilon, delta, time.time(), uuid.uuid4().hex, composition),
            )

    def _budget_row(self, conn):
        """``(epsilon, delta, ledger_id, composition)`` stored in the file (migrating older files)."""
        try:
            cols = {r[1] for r in conn.execute("PRAGMA table_info(skdp_budget)").fetchall()}
            if not cols or "epsilon" not in cols:
                raise self._not_a_ledger("it holds no skdp budget table (a foreign file?)")
            spend_cols = {r[1] for r in conn.execute("PRAGMA table_info(skdp_spends)").fetchall()}
            if "epsilon" not in spend_cols:
                raise self._not_a_ledger("it holds no skdp spends table (a foreign file?)")
            if "ledger_id" not in cols:  # files written before ledger ids: migrate in place
                conn.execute("ALTER TABLE skdp_budget ADD COLUMN ledger_id TEXT")
                conn.execute("UPDATE skdp_budget SET ledger_id = ? WHERE id = 1",
                             (uuid.uuid4().hex,))
            if "composition" not in cols:  # files written before the filter: basic, as created
                conn.execute("ALTER TABLE skdp_budget ADD COLUMN composition TEXT")
                conn.execute("UPDATE skdp_budget SET composition = 'basic' WHERE id = 1")
            if "mu" not in spend_cols:  # spends recorded before curves: (epsilon, delta) only
                conn.execute("ALTER TABLE skdp_spends ADD COLUMN mu REAL")
                conn.execute("ALTER TABLE skdp_spends ADD COLUMN tv REAL")
            row = conn.execute(
                "SELECT epsilon, delta, ledger_id, composition FROM skdp_budget WHERE id = 1"
            ).fetchone()
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise
            raise self._not_a_ledger("the database is damaged (truncated?)") from exc
        if row is None:
            raise self._not_a_ledger("it holds no budget")
        if row[3] not in _COMPOSITIONS:
            raise self._not_a_ledger(f"its composition rule {row[3]!r} is unknown")
        return float(row[0]), float(row[1]), str(row[2]), str(row[3])

    def _read_budget(self):
        with self._transaction() as conn:
            return self._budget_row(conn)

    def _checked_budget(self, conn):
        """The file's budget, after checking that it is still *this* ledger's file."""
        eps, delta, ledger_id, comp = self._budget_row(conn)
        if ledger_id != self._ledger_id or (eps, delta, comp) != (
                self._epsilon, self._delta, self._composition):
            raise self._not_a_ledger(
                "the file at this path is a different ledger from the one this handle opened "
                "(it was replaced)")
        return eps, delta

    # -- spending -------------------------------------------------------
    @staticmethod
    def _records(conn):
        rows = conn.execute(
            "SELECT who, what, epsilon, delta, at, pid, id, mu, tv FROM skdp_spends ORDER BY id"
        ).fetchall()
        return [SpendRecord(r[0], r[1], float(r[2]), float(r[3]), float(r[4]), int(r[5]), int(r[6]),
                            None if r[7] is None else float(r[7]),
                            None if r[8] is None else float(r[8]))
                for r in rows]

    def _before_commit(self, conn, record):
        """Hook between the insert and the commit (tests kill a process here)."""

    def spend(self, budget, source="", description="", curve=None):
        """Atomically check that ``budget`` fits and record it (one transaction).

        The budget is read from the file inside the same transaction as the
        check and the insert (never from this Python object), and the file
        must still be the ledger this handle opened.

        Parameters
        ----------
        budget : PrivacyBudget or (epsilon, delta)
        source : str
        description : str
        curve : GaussianCurve or None, default=None
            The release's Gaussian curve (see :meth:`BudgetLedger.spend`).

        Returns
        -------
        SpendRecord

        Raises
        ------
        BudgetExceededError
            If the ledger's rule (stored in the file) refuses the spend
            given every recorded spend; the transaction is rolled back and
            nothing is recorded.
        LedgerFileError
            If the file is missing, truncated, foreign or was replaced.
        """
        budget = _as_budget(budget)
        curve = _as_curve(curve)
        mu, tv = (None, None) if curve is None else (curve.mu, curve.tv)
        with self._transaction() as conn:
            total_eps, total_delta = self._checked_budget(conn)
            records = self._records(conn)
            if _accepts(self._composition, records, budget, curve, total_eps, total_delta) is None:
                raise BudgetExceededError(_exceeded_message(self, budget, records))
            when, pid = time.time(), os.getpid()
            cur = conn.execute(
                "INSERT INTO skdp_spends (who, what, epsilon, delta, at, pid, mu, tv) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (str(source), str(description), budget.epsilon, budget.delta, when, pid, mu, tv),
            )
            record = SpendRecord(str(source), str(description), budget.epsilon, budget.delta,
                                 when, pid, int(cur.lastrowid), mu, tv)
            self._before_commit(conn, record)
        return record

    def _would_accept_all(self, charges):
        with self._transaction() as conn:
            total_eps, total_delta = self._checked_budget(conn)
            return _accepts_all(self._composition, self._records(conn), charges, total_eps,
                                total_delta)

    @property
    def spends(self):
        with self._transaction() as conn:
            self._checked_budget(conn)
            return self._records(conn)

    def backup(self, path):
        """Write a consistent copy of the ledger to ``path`` (SQLite's online backup API).

        Copying the database file alone is **not** a backup in WAL mode: the
        committed spends may still sit in the ``-wal`` file beside it, and a
        copy of the main file without it silently loses them. This method
        copies the whole committed state, whatever the journal mode, while
        other processes keep spending (they wait for the copy's read lock).

        Restoring a backup puts the ledger back to the moment of the backup:
        spends recorded after it are forgotten and their budget counted as
        unspent. Only restore a backup after a loss of the file, and only one
        taken after the last spend.

        Parameters
        ----------
        path : str or os.PathLike
            Destination file; must not exist.

        Returns
        -------
        SQLiteLedger
            A handle on the copy.
        """
        dest = os.fspath(path)
        if os.path.exists(dest):
            raise FileExistsError(f"{dest!r} already exists; back up to a new file.")
        src = self._connect()
        try:
            self._checked_budget(src)
            out = sqlite3.connect(dest)
            try:
                src.backup(out)
            finally:
                out.close()
        finally:
            src.close()
        return SQLiteLedger(dest, timeout=self.timeout, journal_mode=self.journal_mode,
                            composition=self._composition)

    # -- pickling: reopen the same file ---------------------------------
    def __getstate__(self):
        return {
            "path": self.path,
            "epsilon": self._epsilon,
            "delta": self._delta,
            "ledger_id": self._ledger_id,
            "composition": self._composition,
            "timeout": self.timeout,
            "journal_mode": self.journal_mode,
        }

    def __setstate__(self, state):
        object.__setattr__(self, "path", state["path"])
        self.timeout = state["timeout"]
        self.journal_mode = state["journal_mode"]
        object.__setattr__(self, "_epsilon", state["epsilon"])
        object.__setattr__(self, "_delta", state["delta"])
        object.__setattr__(self, "_ledger_id", state.get("ledger_id"))
        # reopen without ever creating: the file must still be this very ledger
        if not os.path.exists(self.path):
            raise self._not_a_ledger("the file is missing")
        with self._transaction() as conn:
            eps, delta, ledger_id, comp = self._budget_row(conn)
        if comp != state.get("composition", comp):
            raise self._not_a_ledger("the file's composition rule differs from this handle's")
        object.__setattr__(self, "_composition", comp)
        if (eps, delta) != (state["epsilon"], state["delta"]):
            raise ValueError(
                f"the ledger {self.path!r} now holds budget (epsilon={eps!r}, delta={delta!r}), "
                f"not (epsilon={state['epsilon']!r}, delta={state['delta']!r}): its budget "
                "cannot be changed, so this handle refuses to reopen it."
            )
        if self._ledger_id is not None and ledger_id != self._ledger_id:
            raise self._not_a_ledger("the file at this path is a different ledger (replaced)")
        object.__setattr__(self, "_ledger_id", ledger_id)

    def __repr__(self):
        return f"{super().__repr__()[:-1]}; path={self.path!r})"
