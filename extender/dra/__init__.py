"""Dynamic Resource Allocation (resource.k8s.io/v1): the parts below the DynamicResources plugin.

``extender.dra.cel`` is the DRA CEL environment (device selectors); ``extender.dra.structured`` is
the structured allocator. Layering: plugins import this package; it may import
``extender.framework`` and nothing above it.
"""
