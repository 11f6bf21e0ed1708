"""NodeNumber: the seed's teaching plugin (mini-kube-scheduler), PreScore + Score + Permit.

* PreScore reads the last character of the pod's name once and keeps it in CycleState under
  ``"PreScoreNodeNumber"``; a name that does not end in a digit makes the plugin Skip, so its
  Score is not run for that pod (the seed failed the cycle instead).
* Score: ``100`` for a node whose name ends in the same digit as the pod's, ``0`` otherwise;
  ``score_batch`` is the same rule for all nodes at once (an example of a batch form).
* Permit: a node whose name ends in digit *N* > 0 makes the pod Wait and is allowed after *N*
  seconds; the wait times out after ``permitTimeoutSeconds`` (default 10), which rejects the pod.

Mutates nothing but its own CycleState key and its timers.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from extender.framework.columns import NodeTable
from extender.framework.cycle_state import CycleState, StateNotFound
from extender.framework.events import ActionType, ClusterEvent, ClusterEventWithHint, Resource
from extender.framework.handle import Handle
from extender.framework.node_info import NodeInfo
from extender.framework.normalize import MAX_NODE_SCORE
from extender.framework.status import SKIP, Code, Status

NAME = "NodeNumber"
STATE_KEY = "PreScore" + NAME
DIGITS_KEY = NAME + "/digits"
DEFAULT_PERMIT_TIMEOUT_SECONDS = 10.0


@functools.lru_cache(maxsize=65536)
def last_digit(name: str) -> int | None:
    return int(name[-1]) if name and name[-1].isdigit() else None


def _node_digits(table: NodeTable) -> np.ndarray:
    return np.array([-1 if (d := last_digit(n)) is None else d for n in table.names])


def _same_digits(digits: np.ndarray, parent_infos: list[NodeInfo], table: NodeTable) -> np.ndarray:
    return digits  # a derived table has the same nodes: names, hence digits, are unchanged


def _permit_timeout(args: dict) -> float:
    return float(args.get("permitTimeoutSeconds", DEFAULT_PERMIT_TIMEOUT_SECONDS))


class NodeNumber:
    name = NAME

    @classmethod
    def validate_args(cls, args: dict) -> None:
        """``permitTimeoutSeconds`` must be a number (``ValueError``/``TypeError`` if not)."""
        _permit_timeout(args)

    def __init__(self, args: dict, handle: Handle) -> None:
        self.handle = handle
        self.timeout = _permit_timeout(args)

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

    def score_batch(
        self, state: CycleState, pod: dict, table: NodeTable, rows: np.ndarray
    ) -> np.ndarray | None:
        """:meth:`score` for ``rows`` (the batch form, :mod:`extender.framework.columns`): the
        nodes' last digits are read once per table (-1: none), then compared in one step."""
        pod_digit = state.get(STATE_KEY)
        if pod_digit is None:
            return None  # score reports the missing state
        digits = table.derived(DIGITS_KEY, _node_digits, _same_digits)
        return np.where(digits[rows] == pod_digit, MAX_NODE_SCORE, 0).astype(np.int64)

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
