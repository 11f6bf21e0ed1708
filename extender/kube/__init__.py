"""The API layer: talking to the apiserver, and nothing else of the project.

Everything here uses only the standard library and third-party packages, never the rest of
``extender`` (``tests/unit/kube/test_layering.py`` checks it), so every other layer may
import it.

* :mod:`.duration`: :func:`parse_duration`, Go's ``time.ParseDuration``.
* :mod:`.errors`: :class:`ApiError` and its subclasses by HTTP status.
* :mod:`.client`: :class:`KubeClient` (raw JSON verbs).
* :mod:`.transport`: :class:`Transport`, the one HTTP path (requests and watch streams).
* :mod:`.watch`: :class:`WatchStream`, one watch request's events.
* :mod:`.events`: :class:`EventRecorder`, best-effort Events from a background thread.
* :mod:`.informer`: :class:`Informer`, list+watch of one resource into a store and handlers.
* :mod:`.kubeconfig`: :func:`api_client`, the one ``ApiClient`` of a process.
* :mod:`.leader_election`: :class:`LeaderElector` on a Lease, and its defaults.
"""

from .client import DEFAULT_TIMEOUT, MERGE_PATCH, STRATEGIC_MERGE_PATCH, KubeClient
from .duration import DurationError, parse_duration
from .errors import ApiError, Conflict, Gone, Invalid, NotFound, error_class
from .events import MAX_NOTE_BYTES, EventRecorder, micro_time, truncate
from .informer import Informer, object_key
from .kubeconfig import KubeconfigError, api_client, load_configuration
from .leader_election import LeaderElectionConfig, LeaderElector, LeaseClient
from .watch import WatchStream

__all__ = [
    "DEFAULT_TIMEOUT",
    "MAX_NOTE_BYTES",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "ApiError",
    "Conflict",
    "DurationError",
    "EventRecorder",
    "Gone",
    "Informer",
    "Invalid",
    "KubeClient",
    "KubeconfigError",
    "LeaderElectionConfig",
    "LeaderElector",
    "LeaseClient",
    "NotFound",
    "WatchStream",
    "api_client",
    "error_class",
    "load_configuration",
    "micro_time",
    "object_key",
    "parse_duration",
    "truncate",
]
