"""Operations: audit log (here), metrics and tracing (added by the server surfaces)."""

from .audit import AuditLog, AuditRecord

__all__ = ["AuditLog", "AuditRecord"]
