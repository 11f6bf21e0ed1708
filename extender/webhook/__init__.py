"""The extender service: the four verbs over HTTP (``app``), the core behind them (``service``)
and ``kube-extender serve`` (``cli``)."""
