"""The mechanism core: every noise distribution in skdp is calibrated here.

Estimators describe their statistic as a :class:`Query` (shape and
sensitivity under replace-one neighbours); :func:`calibrate` returns a
:class:`NoiseSpec` that says which mechanism answers, what it guarantees, how
much error it adds, and samples the noise.
"""

from ._base import Mechanism, NoiseSpec, available_mechanisms, get_mechanism, register
from ._query import Query
from . import gaussian  # noqa: F401  (registers mechanisms)
from . import matrix  # noqa: F401  (registers mechanisms)
from . import laplace  # noqa: F401  (registers mechanisms)
from . import spherical  # noqa: F401  (registers mechanisms)
from .selection import calibrate, candidates, select

__all__ = [
    "Query",
    "NoiseSpec",
    "Mechanism",
    "calibrate",
    "select",
    "candidates",
    "register",
    "get_mechanism",
    "available_mechanisms",
]
