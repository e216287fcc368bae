"""Statistical privacy audits: certified lower bounds on a mechanism's delta.

See :func:`audit_spec` (audit a calibrated :class:`~skdp.mechanisms.NoiseSpec`
on a pair of neighbouring query values), :func:`audit_samples` (audit any
two sample arrays), :func:`audit_estimator` (audit a whole fit on two
neighbouring datasets: exceptions, shapes and values) and :func:`float_attack`
(the attack on the low bits of floating-point Gaussian noise). A failed audit is a certified violation at confidence
``1 - alpha``; a passed audit is evidence, not proof.
"""

from ._audit import AuditResult, audit_samples, audit_spec, clopper_pearson
from ._estimator import audit_estimator
from ._float_attack import (cancellation_event, float_attack, numpy_ziggurat_table,
                            ziggurat_lattice_member)

__all__ = ["AuditResult", "audit_spec", "audit_samples", "audit_estimator", "clopper_pearson",
           "float_attack", "numpy_ziggurat_table", "ziggurat_lattice_member", "cancellation_event"]
