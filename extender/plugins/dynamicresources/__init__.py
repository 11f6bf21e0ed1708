"""DynamicResources: ResourceClaims get devices as part of scheduling (upstream
``pkg/scheduler/framework/plugins/dynamicresources``). The plugin is in
``dynamic_resources.py``; the claim helpers, the claim tracker and the bridge to the structured
allocator (``extender.dra.structured``) are beside it.
"""
