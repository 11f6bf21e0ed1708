"""VolumeBinding, as upstream ``pkg/scheduler/framework/plugins/volumebinding``.

The plugin is :class:`VolumeBinding`.
"""

from __future__ import annotations

from .plugin import VolumeBinding

__all__ = ["VolumeBinding"]
