"""marshmallow schemas for ``KubeSchedulerConfiguration`` (v1) and our ``ExtenderConfiguration``.

Decoding is strict, as kube-scheduler's is: an unknown or mis-cased key is an error, and a value
of the wrong JSON type is not coerced (``"5"`` is not an integer, ``1`` is not a boolean).
Plugin args stay dicts here; the loader defaults them and each plugin validates its own.
The schemas only decode and check single fields; rules that span the document (plugin names,
merging, duplicates) live in :mod:`extender.config.loader`.
"""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from extender.framework.interfaces import EXTENSION_POINTS
from extender.kube.duration import parse_duration

from .defaults import (
    DEFAULT_CLIENT_CONNECTION,
    DEFAULT_LEADER_ELECTION,
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_POD_BUDGET,
)

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
EXTENDER_API_VERSION = "kube-extender.io/v1alpha1"
EXTENDER_KIND = "ExtenderConfiguration"

# The extension points a profile's ``plugins`` may name, in execution order.
POINTS = tuple(EXTENSION_POINTS)

# -- strict scalar fields ---------------------------------------------------------------------


class Duration(fields.Field):
    """A Go duration string, loaded as float seconds."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> float:
        if not isinstance(value, str):
            raise ValidationError("must be a duration string such as 10s or 1m30s")
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ValidationError(str(exc)) from exc


class Bool(fields.Field):
    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> bool:
        if not isinstance(value, bool):
            raise ValidationError("must be a boolean (true or false)")
        return value


class Int(fields.Field):
    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be an integer")
        return value


class Number(fields.Field):
    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("must be a number")
        return float(value)


def _range(low: int, high: int | None = None) -> validate.Range:
    if high is None:
        return validate.Range(min=low, error=f"must be at least {low}")
    return validate.Range(min=low, max=high, error=f"must be between {low} and {high}")


def _equal(value: str) -> validate.Equal:
    return validate.Equal(value, error=f'must be "{value}"')


class Strict(Schema):
    class Meta:
        unknown = RAISE


# -- profiles ---------------------------------------------------------------------------------


class PluginSchema(Strict):
    name = fields.String(required=True, validate=validate.Length(min=1, error="must not be empty"))
    # Range-checked by the loader, where it matters (score and multiPoint).
    weight = Int(load_default=0)


class PluginSetSchema(Strict):
    enabled = fields.List(fields.Nested(PluginSchema), load_default=list)
    disabled = fields.List(fields.Nested(PluginSchema), load_default=list)


def _plugin_set() -> fields.Nested:
    return fields.Nested(PluginSetSchema, load_default=dict)


class PluginsSchema(Strict):
    multiPoint = _plugin_set()
    preEnqueue = _plugin_set()
    queueSort = _plugin_set()
    preFilter = _plugin_set()
    filter = _plugin_set()
    postFilter = _plugin_set()
    preScore = _plugin_set()
    score = _plugin_set()
    reserve = _plugin_set()
    permit = _plugin_set()
    preBind = _plugin_set()
    bind = _plugin_set()
    postBind = _plugin_set()


class PluginConfigSchema(Strict):
    name = fields.String(required=True, validate=validate.Length(min=1, error="must not be empty"))
    args = fields.Dict(load_default=dict, allow_none=True)


class ProfileSchema(Strict):
    # None: omitted (upstream names a lone profile default-scheduler; see the loader).
    schedulerName = fields.String(load_default=None, allow_none=True)
    percentageOfNodesToScore = Int(load_default=None, allow_none=True, validate=_range(0, 100))
    plugins = fields.Nested(PluginsSchema, load_default=dict, allow_none=True)
    pluginConfig = fields.List(
        fields.Nested(PluginConfigSchema), load_default=list, allow_none=True
    )


# -- extenders (upstream ``pkg/scheduler/apis/config/v1/types.go``, ``Extender``) ----------


class ManagedResourceSchema(Strict):
    name = fields.String(required=True)
    ignoredByScheduler = Bool(load_default=False)


class TLSConfigSchema(Strict):
    insecure = Bool(load_default=False)
    serverName = fields.String(load_default="")
    certFile = fields.String(load_default="")
    keyFile = fields.String(load_default="")
    caFile = fields.String(load_default="")
    certData = fields.String(load_default="")
    keyData = fields.String(load_default="")
    caData = fields.String(load_default="")


class ExtenderSchema(Strict):
    urlPrefix = fields.String(required=True)
    filterVerb = fields.String(load_default="")
    prioritizeVerb = fields.String(load_default="")
    preemptVerb = fields.String(load_default="")
    bindVerb = fields.String(load_default="")
    weight = Int(load_default=0)
    enableHTTPS = Bool(load_default=False)
    tlsConfig = fields.Nested(TLSConfigSchema, load_default=None, allow_none=True)
    # 0 at load; the client treats it as 5s.
    httpTimeout = Duration(load_default=0.0)
    nodeCacheCapable = Bool(load_default=False)
    managedResources = fields.List(
        fields.Nested(ManagedResourceSchema), load_default=list, allow_none=True
    )
    ignorable = Bool(load_default=False)

    @validates_schema(skip_on_field_errors=True)
    def _rules(self, data: dict, **kwargs: Any) -> None:
        if data.get("prioritizeVerb") and data.get("weight", 0) <= 0:
            raise ValidationError("must have a positive weight applied to it", "weight")
        tls = data.get("tlsConfig") or {}
        if tls.get("insecure") and (tls.get("caFile") or tls.get("caData")):
            raise ValidationError(
                "specifying a root certificates file with the insecure flag is not allowed",
                "tlsConfig",
            )


# -- top level --------------------------------------------------------------------------------


class ClientConnectionSchema(Strict):
    kubeconfig = fields.String(load_default=DEFAULT_CLIENT_CONNECTION["kubeconfig"])
    acceptContentTypes = fields.String(load_default=DEFAULT_CLIENT_CONNECTION["acceptContentTypes"])
    contentType = fields.String(load_default=DEFAULT_CLIENT_CONNECTION["contentType"])
    qps = Number(load_default=DEFAULT_CLIENT_CONNECTION["qps"])
    burst = Int(load_default=DEFAULT_CLIENT_CONNECTION["burst"])


class LeaderElectionSchema(Strict):
    leaderElect = Bool(load_default=DEFAULT_LEADER_ELECTION["leaderElect"])
    leaseDuration = Duration(load_default=DEFAULT_LEADER_ELECTION["leaseDuration"])
    renewDeadline = Duration(load_default=DEFAULT_LEADER_ELECTION["renewDeadline"])
    retryPeriod = Duration(load_default=DEFAULT_LEADER_ELECTION["retryPeriod"])
    resourceLock = fields.String(
        load_default=DEFAULT_LEADER_ELECTION["resourceLock"],
        validate=validate.OneOf(["leases"], error='must be "leases"'),
    )
    resourceName = fields.String(
        load_default=DEFAULT_LEADER_ELECTION["resourceName"],
        validate=validate.Length(min=1, error="must not be empty"),
    )
    resourceNamespace = fields.String(
        load_default=DEFAULT_LEADER_ELECTION["resourceNamespace"],
        validate=validate.Length(min=1, error="must not be empty"),
    )

    @validates_schema(skip_on_field_errors=True)
    def _timing(self, data: dict, **kwargs: Any) -> None:
        # As component-base's ValidateLeaderElectionConfiguration (only when electing).
        if not data["leaderElect"]:
            return
        for key in ("leaseDuration", "renewDeadline", "retryPeriod"):
            if data[key] <= 0:
                raise ValidationError("must be greater than zero", key)
        if data["leaseDuration"] <= data["renewDeadline"]:
            raise ValidationError("must be greater than renewDeadline", "leaseDuration")


class KubeSchedulerConfigurationSchema(Strict):
    apiVersion = fields.String(required=True, validate=_equal(API_VERSION))
    kind = fields.String(required=True, validate=_equal(KIND))
    parallelism = Int(load_default=16, validate=_range(1))
    percentageOfNodesToScore = Int(load_default=None, allow_none=True, validate=_range(0, 100))
    podInitialBackoffSeconds = Int(load_default=1, validate=_range(1))
    podMaxBackoffSeconds = Int(load_default=10, validate=_range(1))
    profiles = fields.List(fields.Nested(ProfileSchema), load_default=list, allow_none=True)
    extenders = fields.List(fields.Nested(ExtenderSchema), load_default=list, allow_none=True)
    clientConnection = fields.Nested(
        ClientConnectionSchema, load_default=lambda: dict(DEFAULT_CLIENT_CONNECTION)
    )
    leaderElection = fields.Nested(
        LeaderElectionSchema, load_default=lambda: dict(DEFAULT_LEADER_ELECTION)
    )
    # Accepted because kube-scheduler accepts them; unused by us.
    delayCacheUntilActive = Bool(load_default=False)
    enableProfiling = Bool(load_default=None, allow_none=True)
    enableContentionProfiling = Bool(load_default=None, allow_none=True)

    @validates_schema(skip_on_field_errors=True)
    def _backoff(self, data: dict, **kwargs: Any) -> None:
        if data["podMaxBackoffSeconds"] < data["podInitialBackoffSeconds"]:
            raise ValidationError(
                "must be greater than or equal to podInitialBackoffSeconds", "podMaxBackoffSeconds"
            )


DEFAULT_BIND = {"enabled": False, "assume": True, "assumeTTL": 30.0}


class BindSchema(Strict):
    # Off unless asked for: a binding skips kube-scheduler's own filters.
    enabled = Bool(load_default=False)
    # Count a pod this process bound in its cache at once, before its watch reports it.
    assume = Bool(load_default=DEFAULT_BIND["assume"])
    # How long such an assumption the watch never confirms lasts.
    assumeTTL = Duration(
        load_default=DEFAULT_BIND["assumeTTL"],
        validate=validate.Range(min=0, min_inclusive=False, error="must be a positive duration"),
    )


class ExtenderConfigurationSchema(Strict):
    apiVersion = fields.String(required=True, validate=_equal(EXTENDER_API_VERSION))
    kind = fields.String(required=True, validate=_equal(EXTENDER_KIND))
    # "": the first profile (the loader fills it in).
    profile = fields.String(load_default="")
    urlPrefix = fields.String(
        load_default="/",
        validate=validate.Regexp(r"^/", error='must be a path starting with "/"'),
    )
    # A full-Node filter request for 5000 nodes of ~17 KB is ~85 MB: the default leaves room.
    maxRequestBytes = Int(load_default=DEFAULT_MAX_REQUEST_BYTES, validate=_range(1024))
    filterUnresolvable = Bool(load_default=True)
    kubeconfig = fields.String(load_default=None, allow_none=True)
    watchPods = Bool(load_default=None, allow_none=True)
    # Certificate subject CNs / SANs that may call the verbs (with serve --ca-certs).
    allowedClients = fields.List(
        fields.String(validate=validate.Length(min=1, error="must not be empty")),
        load_default=list,
    )
    bind = fields.Nested(BindSchema, load_default=lambda: dict(DEFAULT_BIND))
    # Out-of-tree plugins that are not installed packages: "module:Class" or "file.py:Class".
    pluginModules = fields.List(fields.String(), load_default=list)
    # Plugin name -> extension point -> Go duration: a call that takes longer is an Error.
    pluginTimeouts = fields.Dict(
        keys=fields.String(),
        values=fields.Dict(
            keys=fields.String(validate=validate.OneOf(POINTS)),
            values=Duration(validate=validate.Range(min=0, min_inclusive=False)),
        ),
        load_default=dict,
    )
    # The most time one scheduling attempt of one pod may take (extender.framework.budget).
    podBudget = Duration(
        load_default=DEFAULT_POD_BUDGET,
        validate=validate.Range(min=0, error="must not be negative (0s: no budget)"),
    )
