"""The standalone scheduler's client for HTTP extenders listed in ``extenders:``.

It speaks the same wire protocol a real kube-scheduler does (``pkg/scheduler/extender.go``,
codec in :mod:`extender.wire`, shared with our webhook), so an extender built for
kube-scheduler, including our own webhook, works behind our scheduler too.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
import tempfile
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
import requests
from requests.adapters import HTTPAdapter

from extender import wire
from extender.config import ConfigError, SchedulerConfig
from extender.framework.node_info import NodeInfo
from extender.kube.duration import parse_duration

DEFAULT_HTTP_TIMEOUT = 5.0
T = TypeVar("T")


class ExtenderError(Exception):
    pass


class ExtenderConfigError(ConfigError):
    """An ``extenders:`` entry whose client cannot be built: a ``tlsConfig`` that does not
    load. The message names the field and, for a ``*File`` field, the file; the
    :class:`HTTPExtender` adds the extender (its urlPrefix) and :func:`build_extenders` the
    config file, so every command prints the same one line (kube-scheduler's
    ``couldn't build extenders: open FILE: ...`` names the file but not the field)."""


def _pem(value: str, field: str) -> bytes:
    """A ``*Data`` field: PEM bytes, base64-encoded in YAML/JSON as Go's ``[]byte`` is."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ExtenderConfigError(f"tlsConfig.{field}: not valid base64: {exc}") from exc


def _readable(path: str, field: str) -> str:
    """``path`` if it can be read; else which field names it and why not (``ssl`` would say
    only "No such file or directory", and for a certificate and key not which one)."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise ExtenderConfigError(
            f"tlsConfig.{field}: {path}: {(exc.strerror or str(exc)).lower()}"
        ) from None
    return path


def _what(cert_file: str, key_file: str) -> str:
    """The fields (and files) a client certificate was loaded from, for its error."""
    cert = f"tlsConfig.certFile {cert_file}" if cert_file else "tlsConfig.certData"
    key = f"tlsConfig.keyFile {key_file}" if key_file else "tlsConfig.keyData"
    return f"{cert}, {key}"


def tls_context(tls: dict, *, enable_https: bool = False) -> ssl.SSLContext:
    """An SSL context with every ``ExtenderTLSConfig`` field, as upstream's ``makeTransport``
    (``pkg/scheduler/extender.go``) feeds them to client-go's ``TLSConfigFor``:

    - ``caFile`` / ``caData``: the only roots trusted (else the system roots); with
      ``enableHTTPS`` and neither, upstream turns ``insecure`` on, and so do we;
    - ``insecure``: no verification at all (not allowed together with a CA);
    - ``certFile``+``keyFile`` / ``certData``+``keyData``: the client certificate. The
      ``*Data`` PEM is loaded from files in a private (0700) temporary directory that are
      removed as soon as the context holds the key (``ssl`` loads keys only from files);
    - ``serverName`` is applied per connection by :class:`TLSAdapter` (SNI and the name the
      server certificate must carry).
    """
    ca_file, ca_data = tls.get("caFile") or "", tls.get("caData") or ""
    insecure = bool(tls.get("insecure"))
    if enable_https and not (ca_file or ca_data):
        insecure = True
    if insecure and (ca_file or ca_data):
        raise ExtenderConfigError(
            "tlsConfig: specifying a root certificates file with the insecure flag is not allowed"
        )
    ctx = ssl.create_default_context(purpose=ssl.Purpose.SERVER_AUTH)
    if ca_file or ca_data:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # no system roots: only these
        if ca_file:
            try:
                ctx.load_verify_locations(cafile=_readable(ca_file, "caFile"))
            except ssl.SSLError as exc:
                raise ExtenderConfigError(
                    f"tlsConfig.caFile: {ca_file}: no PEM certificate loaded ({exc})"
                ) from None
        if ca_data:
            try:
                ctx.load_verify_locations(cadata=_pem(ca_data, "caData").decode())
            except (ssl.SSLError, UnicodeDecodeError) as exc:
                raise ExtenderConfigError(
                    f"tlsConfig.caData: no PEM certificate loaded ({exc})"
                ) from None
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    cert_file, key_file = tls.get("certFile") or "", tls.get("keyFile") or ""
    cert_data, key_data = tls.get("certData") or "", tls.get("keyData") or ""
    if bool(cert_file or cert_data) != bool(key_file or key_data):
        raise ExtenderConfigError(
            "tlsConfig: a client certificate needs both a certificate and a key"
        )
    if cert_file or cert_data:
        if cert_file:
            _readable(cert_file, "certFile")
        if key_file:
            _readable(key_file, "keyFile")
        with tempfile.TemporaryDirectory(prefix="kube-extender-tls-") as private:
            cert_path = cert_file or _private_file(private, "tls.crt", _pem(cert_data, "certData"))
            key_path = key_file or _private_file(private, "tls.key", _pem(key_data, "keyData"))
            try:
                ctx.load_cert_chain(cert_path, key_path)
            except ssl.SSLError as exc:
                raise ExtenderConfigError(
                    f"{_what(cert_file, key_file)}: not a PEM certificate and its key ({exc})"
                ) from None
    return ctx


def _private_file(directory: str, name: str, data: bytes) -> str:
    path = os.path.join(directory, name)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


class TLSAdapter(HTTPAdapter):
    """requests' transport for one extender: our SSL context on every HTTPS pool, and
    ``serverName`` as the SNI name and the name verified (instead of the URL's host)."""

    def __init__(self, tls: dict, *, enable_https: bool = False) -> None:
        self.ssl_context = tls_context(tls, enable_https=enable_https)
        self.server_name = tls.get("serverName") or None
        super().__init__()

    def build_connection_pool_key_attributes(
        self, request: Any, verify: Any, cert: Any = None
    ) -> tuple[dict, dict]:
        host_params, _ = super().build_connection_pool_key_attributes(request, verify, cert)
        verifying = self.ssl_context.verify_mode != ssl.CERT_NONE
        pool_kwargs: dict[str, Any] = {
            "ssl_context": self.ssl_context,
            "cert_reqs": "CERT_REQUIRED" if verifying else "CERT_NONE",
        }
        if self.server_name:
            pool_kwargs["server_hostname"] = self.server_name
            pool_kwargs["assert_hostname"] = self.server_name if verifying else False
        elif not verifying:
            pool_kwargs["assert_hostname"] = False
        return host_params, pool_kwargs

    def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
        """Nothing: the context decides (requests would add its own CA bundle here)."""


def build_extenders(config: SchedulerConfig) -> list[HTTPExtender]:
    """A client for each of the config's ``extenders:``, as upstream's ``buildExtenders``
    (``pkg/scheduler/scheduler.go``) at start-up; an :class:`ExtenderConfigError` names the
    config file, the extender, the field and the file."""
    try:
        return [HTTPExtender(entry) for entry in config.extenders]
    except ExtenderConfigError as exc:
        raise ExtenderConfigError(f"{config.source}: {exc}") from None


class HTTPExtender:
    """One ``extenders:`` entry (camelCase keys as in KubeSchedulerConfiguration)."""

    def __init__(self, config: dict, session: requests.Session | None = None) -> None:
        self.url_prefix = str(config["urlPrefix"]).rstrip("/")
        self.name = self.url_prefix
        self.filter_verb = config.get("filterVerb") or ""
        self.prioritize_verb = config.get("prioritizeVerb") or ""
        self.preempt_verb = config.get("preemptVerb") or ""
        self.bind_verb = config.get("bindVerb") or ""
        self.weight = int(config.get("weight") or 1)
        self.node_cache_capable = bool(config.get("nodeCacheCapable"))
        self.ignorable = bool(config.get("ignorable"))
        # Seconds from the config loader, or a Go duration string; 0 means the default, as
        # upstream's NewHTTPExtender.
        timeout = config.get("httpTimeout") or 0
        if isinstance(timeout, str):
            timeout = parse_duration(timeout)
        self.timeout = float(timeout) or DEFAULT_HTTP_TIMEOUT
        self.managed = {m["name"] for m in config.get("managedResources") or ()}
        self.session = session or requests.Session()
        tls = config.get("tlsConfig")
        if tls is not None or config.get("enableHTTPS"):
            try:
                adapter = TLSAdapter(tls or {}, enable_https=bool(config.get("enableHTTPS")))
            except ExtenderConfigError as exc:
                raise ExtenderConfigError(f"extender {self.url_prefix}: {exc}") from None
            self.session.mount("https://", adapter)

    # -- protocol helpers ------------------------------------------------------------------

    def is_interested(self, pod: dict) -> bool:
        if not self.managed:
            return True
        spec = pod.get("spec") or {}
        for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
            resources = container.get("resources") or {}
            for kind in ("requests", "limits"):
                if self.managed & set(resources.get(kind) or {}):
                    return True
        return False

    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    def _post(self, verb: str, body: dict) -> object:
        url = f"{self.url_prefix}/{verb}"
        try:
            response = self.session.post(
                url,
                data=orjson.dumps(body),
                headers={"Content-Type": "application/json"},
                timeout=self.timeout,
            )
        except requests.RequestException as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: {exc}") from exc
        if response.status_code != 200:
            raise ExtenderError(
                f"failed {verb} with extender at URL {url}, code {response.status_code}"
            )
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise ExtenderError(f"failed {verb} with extender at URL {url}: {exc}") from exc

    # -- verbs ----------------------------------------------------------------------------

    def filter(
        self, pod: dict, nodes: list[NodeInfo]
    ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        reply = self._reply(
            "filter", wire.load_filter_result, self._post(self.filter_verb, self._args(pod, nodes))
        )
        if reply["error"]:
            raise ExtenderError(reply["error"])
        by_name = {n.name: n for n in nodes}
        kept: list[NodeInfo] = []
        if self.node_cache_capable and reply["node_names"] is not None:
            for name in reply["node_names"]:
                if name not in by_name:
                    raise ExtenderError(
                        f'extender "{self.name}" claims a filtered node "{name}" which is '
                        "not found in the input node list"
                    )
                kept.append(by_name[name])
        elif reply["nodes"] is not None:
            for item in reply["nodes"]:
                name = (item.get("metadata") or {}).get("name")
                if name in by_name:
                    kept.append(by_name[name])
        return kept, reply["failed"], reply["failed_unresolvable"]

    def prioritize(self, pod: dict, nodes: list[NodeInfo]) -> dict[str, int]:
        result = self._post(self.prioritize_verb, self._args(pod, nodes))
        scores: dict[str, int] = {}
        names = {n.name for n in nodes}
        for host, score in self._reply("prioritize", wire.load_host_priority_list, result):
            if host in names:
                scores[host] = scores.get(host, 0) + score
        return scores

    def process_preemption(
        self, pod: dict, node_to_victims: dict[str, tuple[list[dict], int]]
    ) -> dict[str, tuple[list[str], int]]:
        """Send candidates; returns node -> (victim UIDs, PDB violations) the extender kept."""
        body = wire.preemption_args(pod, node_to_victims, self.node_cache_capable)
        result = self._post(self.preempt_verb, body)
        return self._reply("preempt", wire.load_preemption_result, result)

    def bind(self, pod: dict, node_name: str) -> None:
        result = self._post(self.bind_verb, wire.binding_args(pod, node_name))
        error = self._reply("bind", wire.load_binding_result, result)
        if error:
            raise ExtenderError(error)

    def _args(self, pod: dict, nodes: list[NodeInfo]) -> dict:
        return wire.extender_args(pod, nodes, self.node_cache_capable)

    def _reply(self, verb: str, load: Callable[[Any], T], result: object) -> T:
        try:
            return load(result)
        except wire.ReplyError as exc:
            raise ExtenderError(f"extender {self.name}: {verb}: {exc}") from exc
