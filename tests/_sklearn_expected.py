"""Checks of scikit-learn's suite that differential privacy makes impossible, with the reason.

Shared by the ``parametrize_with_checks`` tests of every estimator (passed as
``expected_failed_checks``). Everything else in the suite must pass.
"""

_ABOVE_ONE = ("uses weights above 1 ({}); the sensitivity is derived for weights in the public "
              "range [0, 1] (a weight of 3 would move the statistic three times as far), so "
              "larger weights raise ValueError")
_ALL_ZERO = ("expects all-zero weights to raise; they are accepted on purpose: refusing them "
             "would be an error decided by the private weights")

#: every estimator that takes sample_weight
SAMPLE_WEIGHT = {
    "check_sample_weights_list": _ABOVE_ONE.format("sample_weight = 3"),
    "check_sample_weights_not_overwritten": _ABOVE_ONE.format("one weight of 10"),
    "check_sample_weight_equivalence_on_dense_data": _ABOVE_ONE.format(
        "integer weights as repetitions"),
    "check_sample_weight_equivalence_on_sparse_data": _ABOVE_ONE.format(
        "integer weights as repetitions"),
    "check_all_zero_sample_weights_error": _ALL_ZERO,
}

#: the classifiers (class_weight, an iterative solver)
CLASSIFIER = {
    **SAMPLE_WEIGHT,
    "check_class_weight_classifiers": _ABOVE_ONE.format("class_weight 1000"),
    "check_non_transformer_estimators_n_iter": (
        "the solver's iteration count depends on the private data and is not released"),
}


def sample_weight_failures(estimator):
    return SAMPLE_WEIGHT


def classifier_failures(estimator):
    return CLASSIFIER
