"""Differentially private preprocessing and public-bound helpers."""

from ._bounds import data_norm_from_bounds, scale_by_bounds
from ._norm import PrivateRowNormScaler
from ._scaler import PrivateStandardScaler

__all__ = ["PrivateRowNormScaler", "PrivateStandardScaler", "data_norm_from_bounds",
           "scale_by_bounds"]
