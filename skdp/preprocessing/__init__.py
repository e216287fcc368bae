"""Differentially private preprocessing and public-bound helpers."""

from ._bounds import data_norm_from_bounds, scale_by_bounds
from ._scaler import PrivateStandardScaler

__all__ = ["PrivateStandardScaler", "data_norm_from_bounds", "scale_by_bounds"]
