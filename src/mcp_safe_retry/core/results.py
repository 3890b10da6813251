"""The result layer of an answer: what a ``tools/call`` result says (a tool success, a tool
error, or no valid tool result), and what a Tasks extension answer says (``core/tasks.py``): a
task created, and a ``tasks/get`` read as the outcome of the call whose task it reports. Pure,
total; ``classify.py`` reads the envelope and hands the result here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import attrs

from .outcomes import Classification, Outcome, verdict

__all__ = [
    "MESSAGE_LIMIT",
    "TOOL_SUCCESS",
    "Declared",
    "created_task",
    "first_text",
    "is_int",
    "polled_task",
    "tool_result",
]

MESSAGE_LIMIT = 500  # characters of a server's error text kept in a classification
TOOL_SUCCESS = verdict(Outcome.TOOL_SUCCESS, result_type="complete")
JSON: TypeAlias = Any
Declared: TypeAlias = bool | Callable[[], bool]
"""Whether the request declared the Tasks extension: known, or worked out when asked (a
request's ``RequestFacts.declares_tasks``, read only when a task answer needs it)."""


def tool_result(result: dict[str, JSON], result_type: str) -> Classification:
    """A ``CallToolResult`` (complete): a success, a tool error, or invalid."""
    invalid = Outcome.INVALID_TOOL_RESULT
    if not isinstance(result.get("content"), list):
        return verdict(invalid, detail="content is not an array", result_type=result_type)
    is_error = result.get("isError", False)
    if not isinstance(is_error, bool):
        return verdict(invalid, detail="isError is not a boolean", result_type=result_type)
    if is_error:
        return verdict(Outcome.TOOL_ERROR, message=first_text(result), result_type=result_type)
    return TOOL_SUCCESS


def _task_fields(result: dict[str, JSON]) -> tuple[str, str] | None:
    """A task's id and status: the result's own (SEP-2663: ``Result & Task``), or those of
    its ``task`` object (an earlier draft's shape); None when neither holds both as strings."""
    for holder in (result, result.get("task")):
        if isinstance(holder, dict):
            task_id, status = holder.get("taskId"), holder.get("status")
            if isinstance(task_id, str) and isinstance(status, str):
                return task_id, status
    return None


def created_task(result: dict[str, JSON], tasks: bool) -> Classification:
    """A ``tools/call`` answered ``resultType: "task"`` (a ``CreateTaskResult``): valid only
    for a request that declared the extension ("a client that receives CreateTaskResult in
    response to an unsupported request type MUST interpret this as an invalid response")."""
    invalid = Outcome.INVALID_TOOL_RESULT
    if not tasks:
        detail = "resultType 'task' answered a request that did not declare the Tasks extension"
        return verdict(invalid, detail=detail, result_type="task")
    fields = _task_fields(result)
    if fields is None:
        return verdict(
            invalid, detail="a task result without taskId and status", result_type="task"
        )
    task_id, status = fields
    return verdict(
        Outcome.TASK_CREATED, result_type="task", task_id=task_id[:200], task_status=status[:40]
    )


def polled_task(result: dict[str, JSON]) -> Classification:
    """A ``tasks/get`` answer, as the outcome of the tool call whose task it reports: a
    terminal one is that call's (completed: its tool result; failed: its JSON-RPC error;
    cancelled), ``working`` and ``input_required`` are neither its success nor its failure."""
    fields = _task_fields(result)
    if fields is None:
        return verdict(Outcome.INVALID_ENVELOPE, detail="a tasks/get result without a task")
    task_id, status = fields
    task: dict[str, Any] = {
        "task_id": task_id[:200],
        "task_status": status[:40],
        "result_type": "complete",
    }
    if status == "completed":
        inner = result.get("result")
        if not isinstance(inner, dict):
            return verdict(
                Outcome.INVALID_TOOL_RESULT, detail="completed task without a result", **task
            )
        return attrs.evolve(tool_result(inner, "complete"), **task)
    if status == "failed":
        error = result.get("error")
        if (
            not isinstance(error, dict)
            or not is_int(error.get("code"))
            or not isinstance(error.get("message"), str)
        ):
            return verdict(Outcome.INVALID_ENVELOPE, detail="failed task without an error", **task)
        message = error["message"][:MESSAGE_LIMIT]
        return verdict(
            Outcome.JSONRPC_ERROR, code=error["code"], message=message, detail="task failed", **task
        )
    if status == "cancelled":
        return verdict(Outcome.TASK_CANCELLED, detail="task cancelled", **task)
    if status in ("working", "input_required"):
        return verdict(Outcome.TASK_WORKING, detail=f"task {status}", **task)
    return verdict(Outcome.INVALID_ENVELOPE, detail=f"unknown task status {status[:40]!r}", **task)


def first_text(result: dict[str, JSON]) -> str | None:
    for item in result["content"]:
        if isinstance(item, dict) and isinstance(item.get("text"), str):
            return str(item["text"])[:MESSAGE_LIMIT]
    return None


def is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
