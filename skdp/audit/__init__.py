"""Statistical privacy audits: certified lower bounds on a mechanism's delta.

See :func:`audit_spec` (audit a calibrated :class:`~skdp.mechanisms.NoiseSpec`
on a pair of neighbouring query values) and :func:`audit_samples` (audit any
two sample arrays). A failed audit is a certified violation at confidence
``1 - alpha``; a passed audit is evidence, not proof.
"""

from ._audit import AuditResult, audit_samples, audit_spec, clopper_pearson

__all__ = ["AuditResult", "audit_spec", "audit_samples", "clopper_pearson"]
