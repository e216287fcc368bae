"""Privacy-aware hyperparameter search.

:class:`PrivateGridSearchCV` selects hyperparameters with an end-to-end
differential-privacy guarantee (Papernot & Steinke 2022 truncated negative
binomial number of runs, Liu & Talwar 2019 random stopping, or all noisy
scores under basic composition). ``sklearn.model_selection.GridSearchCV``
also works with skdp estimators: give them a shared ledger
(:class:`skdp.BudgetLedger` / :class:`skdp.SQLiteLedger`) as ``accountant``
and every fit is recorded; :func:`search_cost` prices such a search before
it starts.
"""

from ._cost import (fit_cost, search_cost, selection_run_budget, truncated_negative_binomial_gamma,
                    truncated_negative_binomial_mean)
from ._search import PrivateGridSearchCV, negative_binomial_runs, random_stopping_runs

__all__ = ["PrivateGridSearchCV", "random_stopping_runs", "negative_binomial_runs", "search_cost",
           "fit_cost", "selection_run_budget", "truncated_negative_binomial_mean",
           "truncated_negative_binomial_gamma"]
