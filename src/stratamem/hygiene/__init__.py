"""Memory hygiene: PII redaction, write gates, policies, health."""
