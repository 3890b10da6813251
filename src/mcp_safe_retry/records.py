"""What a call record says: the vocabulary of ``get_record(response)`` and of what hooks are
told.

A ``CallRecord`` holds the call's ``Attempt`` s; each attempt's ``Classification`` names its
``Outcome`` and the ``Layer`` that decided it, and its ``Decision`` (retry or stop, with a
``Reason``) what followed. ``RetryOrigin`` says who re-sent a call, ``Delivery`` whether its
request may have reached the server, ``AttemptKind`` how an attempt was sent and
``ErrorKind`` what kind of network error stood in for its response. A failure the transport
contained is answered as a JSON-RPC error with code ``CONTAINED_ERROR_CODE``.
"""

from .core.attempt_kinds import AttemptKind, ErrorKind
from .core.contain import CONTAINED_ERROR_CODE
from .core.decision import Decision, Reason
from .core.delivery import Delivery
from .core.outcomes import Classification, Layer, Outcome
from .core.records import Attempt, CallRecord, RetryOrigin

__all__ = [
    "CONTAINED_ERROR_CODE",
    "Attempt",
    "AttemptKind",
    "CallRecord",
    "Classification",
    "Decision",
    "Delivery",
    "ErrorKind",
    "Layer",
    "Outcome",
    "Reason",
    "RetryOrigin",
]
