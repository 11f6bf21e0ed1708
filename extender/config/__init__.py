"""``KubeSchedulerConfiguration`` loading: profiles, plugin args, defaults, our own section.

See :mod:`extender.config.loader` for the merge rules and :mod:`extender.config.defaults` for
the default profile (and which upstream defaults it lacks).
"""

from .defaults import DEFAULT_MULTI_POINT, DEFAULT_SCHEDULER_NAME, default_args
from .errors import ConfigError
from .loader import (
    ExtenderSettings,
    SchedulerConfig,
    default_config,
    default_profile,
    load,
    loads,
)
from .profiles import build_profile, merge_plugin_set, plugin_points
from .schema import API_VERSION, EXTENDER_API_VERSION, EXTENDER_KIND, KIND

__all__ = [
    "API_VERSION",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENDER_API_VERSION",
    "EXTENDER_KIND",
    "KIND",
    "ConfigError",
    "ExtenderSettings",
    "SchedulerConfig",
    "build_profile",
    "default_args",
    "default_config",
    "default_profile",
    "load",
    "loads",
    "merge_plugin_set",
    "plugin_points",
]
