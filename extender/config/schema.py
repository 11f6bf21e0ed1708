"""marshmallow schemas for ``KubeSchedulerConfiguration`` (v1) and our ExtenderConfiguration.

Decoding is strict, as kube-scheduler's is: an unknown or mis-cased key is an error. Plugin
args stay dicts here; each plugin validates its own (see ``loader``).
"""

from __future__ import annotations

import re
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
EXTENDER_API_VERSION = "kube-extender.io/v1alpha1"
EXTENDER_KIND = "ExtenderConfiguration"

_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: str) -> float:
    """A Go duration string ("15s", "1m30s", "500ms") in seconds."""
    text = value.strip()
    if text in ("0", ""):
        return 0.0
    sign = -1.0 if text.startswith("-") else 1.0
    text = text.lstrip("+-")
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or pos == 0:
        raise ValueError(f"invalid duration {value!r} (use Go syntax such as 10s, 1m30s, 500ms)")
    return sign * total


class Duration(fields.Field):
    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> float:
        if not isinstance(value, str):
            raise ValidationError("must be a duration string such as 10s")
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc


class Strict(Schema):
    class Meta:
        unknown = RAISE


class PluginSchema(Strict):
    name = fields.String(required=True, validate=validate.Length(min=1))
    weight = fields.Integer(load_default=0, strict=True)


class PluginSetSchema(Strict):
    enabled = fields.List(fields.Nested(PluginSchema), load_default=list)
    disabled = fields.List(fields.Nested(PluginSchema), load_default=list)


POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
)


class PluginsSchema(Strict):
    multiPoint = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    preEnqueue = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    queueSort = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    preFilter = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    filter = fields.Nested(PluginSetSchema, load_default=dict)
    postFilter = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    preScore = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    score = fields.Nested(PluginSetSchema, load_default=dict)
    reserve = fields.Nested(PluginSetSchema, load_default=dict)
    permit = fields.Nested(PluginSetSchema, load_default=dict)
    preBind = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815
    bind = fields.Nested(PluginSetSchema, load_default=dict)
    postBind = fields.Nested(PluginSetSchema, load_default=dict)  # noqa: N815


class PluginConfigSchema(Strict):
    name = fields.String(required=True, validate=validate.Length(min=1))
    args = fields.Dict(load_default=dict, allow_none=True)


_PERCENT = validate.Range(0, 100, error="must be between 0 and 100")


class ProfileSchema(Strict):
    schedulerName = fields.String(load_default="default-scheduler")  # noqa: N815
    percentageOfNodesToScore = fields.Integer(  # noqa: N815
        load_default=None, allow_none=True, strict=True, validate=_PERCENT
    )
    plugins = fields.Nested(PluginsSchema, load_default=None, allow_none=True)
    pluginConfig = fields.List(  # noqa: N815
        fields.Nested(PluginConfigSchema), load_default=list, allow_none=True
    )


class ManagedResourceSchema(Strict):
    name = fields.String(required=True)
    ignoredByScheduler = fields.Boolean(load_default=False)  # noqa: N815


class TLSConfigSchema(Strict):
    insecure = fields.Boolean(load_default=False)
    serverName = fields.String(load_default="")  # noqa: N815
    certFile = fields.String(load_default="")  # noqa: N815
    keyFile = fields.String(load_default="")  # noqa: N815
    caFile = fields.String(load_default="")  # noqa: N815
    certData = fields.String(load_default="")  # noqa: N815
    keyData = fields.String(load_default="")  # noqa: N815
    caData = fields.String(load_default="")  # noqa: N815


class ExtenderSchema(Strict):
    urlPrefix = fields.String(required=True)  # noqa: N815
    filterVerb = fields.String(load_default="")  # noqa: N815
    prioritizeVerb = fields.String(load_default="")  # noqa: N815
    preemptVerb = fields.String(load_default="")  # noqa: N815
    bindVerb = fields.String(load_default="")  # noqa: N815
    weight = fields.Integer(load_default=0, strict=True)
    enableHTTPS = fields.Boolean(load_default=False)  # noqa: N815
    tlsConfig = fields.Nested(TLSConfigSchema, load_default=None, allow_none=True)  # noqa: N815
    httpTimeout = Duration(load_default=0.0)  # noqa: N815
    nodeCacheCapable = fields.Boolean(load_default=False)  # noqa: N815
    managedResources = fields.List(  # noqa: N815
        fields.Nested(ManagedResourceSchema), load_default=list, allow_none=True
    )
    ignorable = fields.Boolean(load_default=False)

    @validates_schema
    def _rules(self, data: dict, **kwargs: Any) -> None:
        if data.get("prioritizeVerb") and data.get("weight", 0) <= 0:
            raise ValidationError("must have a positive weight applied to it", "weight")
        tls = data.get("tlsConfig") or {}
        if tls.get("insecure") and (tls.get("caFile") or tls.get("caData")):
            raise ValidationError(
                "specifying a root certificates file with the insecure flag is not allowed",
                "tlsConfig",
            )


class ClientConnectionSchema(Strict):
    kubeconfig = fields.String(load_default="")
    acceptContentTypes = fields.String(load_default="")  # noqa: N815
    contentType = fields.String(load_default="")  # noqa: N815
    qps = fields.Float(load_default=50.0)
    burst = fields.Integer(load_default=100, strict=True)


class LeaderElectionSchema(Strict):
    leaderElect = fields.Boolean(load_default=True)  # noqa: N815
    leaseDuration = Duration(load_default=15.0)  # noqa: N815
    renewDeadline = Duration(load_default=10.0)  # noqa: N815
    retryPeriod = Duration(load_default=2.0)  # noqa: N815
    resourceLock = fields.String(  # noqa: N815
        load_default="leases", validate=validate.OneOf(["leases"])
    )
    resourceName = fields.String(load_default="kube-extender")  # noqa: N815
    resourceNamespace = fields.String(load_default="kube-system")  # noqa: N815


class KubeSchedulerConfigurationSchema(Strict):
    apiVersion = fields.String(  # noqa: N815
        required=True, validate=validate.Equal(API_VERSION, error=f"must be {API_VERSION}")
    )
    kind = fields.String(required=True, validate=validate.Equal(KIND, error=f"must be {KIND}"))
    parallelism = fields.Integer(
        load_default=16, strict=True, validate=validate.Range(min=1, error="must be positive")
    )
    percentageOfNodesToScore = fields.Integer(  # noqa: N815
        load_default=None, allow_none=True, strict=True, validate=_PERCENT
    )
    podInitialBackoffSeconds = fields.Integer(  # noqa: N815
        load_default=1, strict=True, validate=validate.Range(min=1, error="must be at least 1")
    )
    podMaxBackoffSeconds = fields.Integer(  # noqa: N815
        load_default=10, strict=True, validate=validate.Range(min=1, error="must be at least 1")
    )
    profiles = fields.List(fields.Nested(ProfileSchema), load_default=None, allow_none=True)
    extenders = fields.List(fields.Nested(ExtenderSchema), load_default=list, allow_none=True)
    clientConnection = fields.Nested(ClientConnectionSchema, load_default=dict)  # noqa: N815
    leaderElection = fields.Nested(LeaderElectionSchema, load_default=dict)  # noqa: N815
    delayCacheUntilActive = fields.Boolean(load_default=False)  # noqa: N815
    # Accepted (kube-scheduler accepts them) and unused by us.
    enableProfiling = fields.Boolean(load_default=None, allow_none=True)  # noqa: N815
    enableContentionProfiling = fields.Boolean(load_default=None, allow_none=True)  # noqa: N815

    @validates_schema
    def _backoff(self, data: dict, **kwargs: Any) -> None:
        if data.get("podMaxBackoffSeconds", 10) < data.get("podInitialBackoffSeconds", 1):
            raise ValidationError(
                "must be greater than or equal to podInitialBackoffSeconds", "podMaxBackoffSeconds"
            )


class ExtenderConfigurationSchema(Strict):
    apiVersion = fields.String(  # noqa: N815
        required=True,
        validate=validate.Equal(EXTENDER_API_VERSION, error=f"must be {EXTENDER_API_VERSION}"),
    )
    kind = fields.String(
        required=True, validate=validate.Equal(EXTENDER_KIND, error=f"must be {EXTENDER_KIND}")
    )
    profile = fields.String(load_default="")
    urlPrefix = fields.String(load_default="/")  # noqa: N815
    maxRequestBytes = fields.Integer(  # noqa: N815
        load_default=128 * 1024 * 1024,
        strict=True,
        validate=validate.Range(min=1024, error="must be at least 1024"),
    )
    nodeCacheCapable = fields.Boolean(load_default=True)  # noqa: N815
    filterUnresolvable = fields.Boolean(load_default=True)  # noqa: N815
    kubeconfig = fields.String(load_default=None, allow_none=True)
    watchPods = fields.Boolean(load_default=None, allow_none=True)  # noqa: N815
