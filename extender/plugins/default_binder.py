"""DefaultBinder (Bind): binds the pod through the API's ``pods/binding`` subresource (upstream
``pkg/scheduler/framework/plugins/defaultbinder``).

Calls ``handle.client.bind(pod, node_name)``, which creates the ``Binding`` (pod name, namespace
and UID; target node). The client raises on any failure; that becomes an Error status, and the
binding cycle then unreserves, forgets the assumed pod and requeues it. Mutates nothing itself.
"""

from __future__ import annotations

from extender.framework.cycle_state import CycleState
from extender.framework.handle import Handle
from extender.framework.status import Status

NAME = "DefaultBinder"


class DefaultBinder:
    name = NAME

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle

    def bind(self, state: CycleState, pod: dict, node_name: str) -> Status | None:
        client = self.handle.client
        if client is None:
            return Status.error("no API client to bind with", plugin=NAME)
        try:
            client.bind(pod, node_name)
        except Exception as exc:  # the API said no: that is the status, not a crash
            return Status.error(exc, plugin=NAME)
        return None
