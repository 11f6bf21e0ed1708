"""NodeNumber: the seed's teaching plugin (mini-kube-scheduler), PreScore + Score + Permit.

* PreScore reads the last character of the pod's name once and keeps it in CycleState under
  ``"PreScoreNodeNumber"``; a name that does not end in a digit makes the plugin Skip, so its
  Score is not run for that pod (the seed failed the cycle instead).
* Score: ``100`` for a node whose name ends in the same digit as the pod's, ``0`` otherwise.
* Permit: a node whose name ends in digit *N* > 0 makes the pod Wait and is allowed after *N*
  seconds; the wait times out after ``permitTimeoutSeconds`` (default 10), which rejects the pod.

Mutates nothing but its own CycleState key and its timers.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.runtime import MAX_NODE_SCORE
from extender.framework.status import SKIP, Code, Status
from extender.framework.types import NodeInfo

NAME = "NodeNumber"
STATE_KEY = "PreScore" + NAME
DEFAULT_PERMIT_TIMEOUT_SECONDS = 10.0


@functools.lru_cache(maxsize=65536)
def last_digit(name: str) -> int | None:
    return int(name[-1]) if name and name[-1].isdigit() else None


class NodeNumber:
    name = NAME

    def __init__(self, args: dict, handle: Any) -> None:
        self.handle = handle
        self.timeout = float(args.get("permitTimeoutSeconds", DEFAULT_PERMIT_TIMEOUT_SECONDS))

    def pre_score(self, state: CycleState, pod: dict, nodes: list[NodeInfo]) -> Status | None:
        digit = last_digit((pod.get("metadata") or {}).get("name", ""))
        if digit is None:
            return SKIP
        state.write(STATE_KEY, digit)
        return None

    def score(self, state: CycleState, pod: dict, node_info: NodeInfo) -> tuple[int, Status | None]:
        try:
            pod_digit = state.read(STATE_KEY)
        except StateNotFound:
            return 0, Status.error(f"reading {STATE_KEY!r} from cycle state")
        return (MAX_NODE_SCORE if last_digit(node_info.name) == pod_digit else 0), None

    def score_extensions(self) -> None:
        return None

    def permit(self, state: CycleState, pod: dict, node_name: str) -> tuple[Status | None, float]:
        seconds = last_digit(node_name)
        if not seconds:
            return None, 0.0
        uid = (pod.get("metadata") or {}).get("uid", "")
        timer = threading.Timer(seconds, self._allow, args=(uid,))
        timer.daemon = True
        timer.start()
        return Status(Code.WAIT), self.timeout

    def _allow(self, uid: str) -> None:
        waiting = self.handle.get_waiting_pod(uid)
        if waiting is not None:
            waiting.allow(NAME)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, ActionType.ADD))]
