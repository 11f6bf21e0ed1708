"""``KubeSchedulerConfiguration`` loading: profiles, plugin args, defaults, our own section."""

from .loader import (
    ConfigError,
    ExtenderSettings,
    SchedulerConfig,
    build_profile,
    default_config,
    default_profile,
    load,
    loads,
)
from .schema import parse_duration

__all__ = [
    "ConfigError",
    "ExtenderSettings",
    "SchedulerConfig",
    "build_profile",
    "default_config",
    "default_profile",
    "load",
    "loads",
    "parse_duration",
]
