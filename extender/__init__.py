"""kube-extender: a Kubernetes scheduler in Python.

One plugin core (``extender.framework`` + ``extender.plugins``) served two ways: as a
scheduler extender over HTTP (``extender.webhook``) and as a standalone scheduler
(``extender.scheduler``).
"""

__version__ = "0.1.0"
