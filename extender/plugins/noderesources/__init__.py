"""The node-resources plugins, split as upstream ``pkg/scheduler/framework/plugins/noderesources/``.

* :mod:`.fit`: NodeResourcesFit (``fit.go``);
* :mod:`.balanced_allocation`: NodeResourcesBalancedAllocation (``balanced_allocation.go``);
* :mod:`.resource_allocation`: the scorer machinery both share (``resource_allocation.go``);
* :mod:`.least_allocated`, :mod:`.most_allocated`, :mod:`.requested_to_capacity_ratio`: the
  scoring strategies of NodeResourcesFit;
* :mod:`.validation`: their args (upstream ``validation_pluginargs.go``).

Nothing is imported here, so that a profile loads only the modules its plugins need.
"""
