"""Differentially private matrix decompositions."""

from ._pca import PrivatePCA

__all__ = ["PrivatePCA"]
