"""The runner: one :class:`Framework` per profile runs its plugins at every extension point
(upstream ``pkg/scheduler/framework/runtime``). Internal: plugins use the names of
:mod:`extender.framework`.

* :mod:`.framework`: the :class:`Framework` (also the plugins' Handle), point by point;
* :mod:`.calls`: the failure contract at the call site (answer checks, recorded failures);
* :mod:`.batch`: the batch forms over the node table and the per-node memos;
* :mod:`.waiting_pods`: pods held at Permit.
"""

from .framework import Framework, ProfileError

__all__ = ["Framework", "ProfileError"]
