"""The Tasks extension (``io.modelcontextprotocol/tasks``, SEP-2663): what a request declares,
what a task answer says, and a transport's memory of the tasks its calls created.

A client that declares the extension in a request's
``params._meta["io.modelcontextprotocol/clientCapabilities"].extensions`` may get, for
``tools/call``, a ``CreateTaskResult`` (``resultType: "task"``) instead of the tool's result:
the tool has not finished, the server runs it. The client then polls ``tasks/get`` (a read),
and may send ``tasks/update`` and ``tasks/cancel`` (acknowledgements); the terminal
``tasks/get`` carries what the ``tools/call`` would have returned (``completed``: its
``result``; ``failed``: its JSON-RPC ``error``) or says it was ``cancelled``.

The verdicts on those answers are the classifier's (``classify.py``); this module holds the
vocabulary, the reading of a request's declaration and task id, and ``TaskTable``: per
transport, which call created each task (so every poll's record names it) and whether a
poll saw it end.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs

__all__ = [
    "CLIENT_CAPABILITIES",
    "TASKS_EXTENSION",
    "TASK_METHODS",
    "TERMINAL",
    "TaskLink",
    "TaskOrigin",
    "TaskTable",
    "declares_tasks",
    "task_id_of",
]

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
TASK_METHODS = frozenset({"tasks/get", "tasks/update", "tasks/cancel"})
"""The extension's methods: each names its task in ``params.taskId`` (and ``Mcp-Name``)."""
TERMINAL = frozenset({"completed", "failed", "cancelled"})
"""Task statuses after which nothing changes (``working`` and ``input_required`` are not)."""


def declares_tasks(meta: object) -> bool:
    """Whether a request's ``params._meta`` declares the Tasks extension."""
    if not isinstance(meta, Mapping):
        return False
    capabilities = meta.get(CLIENT_CAPABILITIES)
    extensions = capabilities.get("extensions") if isinstance(capabilities, Mapping) else None
    return isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions


def task_id_of(message: Mapping[str, Any] | None) -> str | None:
    """The task a ``tasks/*`` request names (``params.taskId``), if it names one."""
    params = message.get("params") if message is not None else None
    task_id = params.get("taskId") if isinstance(params, Mapping) else None
    return task_id if isinstance(task_id, str) else None


@attrs.frozen
class TaskOrigin:
    """The ``tools/call`` that created a task: its request id, tool and start (wall-clock
    Unix time), as the records of the task's polls name it."""

    request_id: str | int | None  # a jsonrpc.RequestId (this module sits below jsonrpc)
    tool: str | None
    started_at: float

    def to_dict(self) -> dict[str, Any]:
        return {"requestId": self.request_id, "tool": self.tool, "startedAt": self.started_at}


@attrs.frozen
class TaskLink:
    """A record's task: its id, the status its answer gave (None: not known), and, for a
    ``tasks/*`` request, the call that created it (None: not seen by this transport)."""

    task_id: str
    status: str | None = None
    created_by: TaskOrigin | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdBy": None if self.created_by is None else self.created_by.to_dict(),
        }


@attrs.define
class _Task:
    origin: TaskOrigin
    status: str
    # An UNSAFE call's task: where the ledger holds its call while the task runs (server key,
    # digest, the claim's owner; core/guard.py), None once a poll saw it end.
    held: tuple[str, str, str] | None = None


class TaskTable:
    """A transport's memory of the tasks its ``tools/call`` requests created (the newest
    ``capacity``, safe across threads): who created each, and its last status seen."""

    def __init__(self, capacity: int = 1024) -> None:
        self._capacity = capacity
        self._tasks: OrderedDict[str, _Task] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._tasks)

    def created(
        self,
        task_id: str,
        origin: TaskOrigin,
        status: str,
        held: tuple[str, str, str] | None = None,
    ) -> None:
        """A ``tools/call`` was answered with a task (``status``: the one it came with;
        ``held``: where the ledger holds an UNSAFE call while its task runs)."""
        with self._lock:
            self._tasks[task_id] = _Task(origin, status, held)
            self._tasks.move_to_end(task_id)
            while len(self._tasks) > self._capacity:
                self._tasks.popitem(last=False)

    def origin(self, task_id: str | None) -> TaskOrigin | None:
        """The call that created ``task_id``, if this transport saw it."""
        if task_id is None or not self._tasks:
            return None
        with self._lock:
            task = self._tasks.get(task_id)
        return None if task is None else task.origin

    def status(self, task_id: str) -> str | None:
        """The last status seen for ``task_id`` (its creation's, or a poll's)."""
        with self._lock:
            task = self._tasks.get(task_id)
        return None if task is None else task.status

    def polled(self, task_id: str, status: str) -> tuple[str, str, str] | None:
        """A ``tasks/get`` answered with ``status`` for ``task_id``: where the ledger holds
        its call, if it held it and the task has now ended (to be forgotten there)."""
        with self._lock:
            task = self._tasks.get(task_id)
            if task is None:
                return None
            task.status = status
            held = task.held
            if held is None or status not in TERMINAL:
                return None
            task.held = None
            return held
