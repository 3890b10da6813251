"""Observers of attempts and calls: the hook protocol, logging, JSON lines, redaction and
OpenTelemetry."""
