"""The informer's list/watch protocol and KubeClient's raw requests, against a tiny fake
apiserver (http.server in a thread) that plays scripted list and watch answers.

The fake speaks the wire format that matters here: JSON lists with ``metadata.
resourceVersion`` and ``continue``, watches as chunked streams of ``{"type", "object"}``
lines, ``Status`` bodies for errors.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import pytest
from kubernetes.client import ApiClient, Configuration

from extender.kube import ApiError, Conflict, EventRecorder, Gone, Informer, KubeClient


def node(name: str, rv: int, **labels: str) -> dict:
    return {"metadata": {"name": name, "resourceVersion": str(rv), "labels": labels}}


def status(code: int, reason: str, message: str) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }


GONE = status(410, "Expired", "too old resource version: 3 (9)")


class Hold:
    """In a watch script: keep the stream open until released (or the test ends)."""

    def __init__(self) -> None:
        self.released = threading.Event()


class Request:
    def __init__(self, method: str, path: str, query: dict[str, str], body: Any) -> None:
        self.method, self.path, self.query, self.body = method, path, query, body

    def __repr__(self) -> str:
        return f"{self.method} {self.path} {self.query}"


class FakeApiServer:
    """Answers from ``routes``: ``(method, path, is_watch) -> handler(request)``.

    A handler returns ``(status, body_dict)`` or, for a watch, a list of events (dicts) and
    :class:`Hold` markers streamed as chunks.
    """

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.routes: dict[tuple[str, str, bool], Callable[[Request], Any]] = {}
        self.holds: list[Hold] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                url = urlsplit(self.path)
                query = dict(parse_qsl(url.query, keep_blank_values=True))
                length = int(self.headers.get("Content-Length") or 0)
                body = orjson.loads(self.rfile.read(length)) if length else None
                request = Request(self.command, url.path, query, body)
                fake.requests.append(request)
                watch = query.get("watch") == "true"
                route = fake.routes.get((self.command, url.path, watch))
                answer = route(request) if route else (404, status(404, "NotFound", "no route"))
                if isinstance(answer, tuple):
                    code, payload = answer
                    data = orjson.dumps(payload)
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for item in answer:
                        if isinstance(item, Hold):
                            fake.holds.append(item)
                            item.released.wait(10)
                            continue
                        line = orjson.dumps(item) + b"\n"
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except OSError:
                    pass  # the client went away (informer stopped)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def route(self, method: str, path: str, *, watch: bool = False) -> Callable:
        def register(handler: Callable[[Request], Any]) -> Callable:
            self.routes[(method, path, watch)] = handler
            return handler

        return register

    def watches(self) -> list[Request]:
        return [r for r in self.requests if r.query.get("watch") == "true"]

    def close(self) -> None:
        for hold in self.holds:
            hold.released.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer()
    yield fake
    fake.close()


@pytest.fixture
def client(server: FakeApiServer) -> KubeClient:
    return KubeClient(ApiClient(Configuration(host=server.url)))


class Recorder:
    """Handlers that log what they saw, and let a test wait for a number of events."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []
        self.forgotten: list[tuple[str, str]] = []  # objects that left the store
        self._changed = threading.Condition()

    def _log(self, *entry: str) -> None:
        with self._changed:
            self.events.append(entry)
            self._changed.notify_all()

    def on_add(self, obj: dict) -> None:
        self._log("add", obj["metadata"]["name"], obj["metadata"]["resourceVersion"])

    def on_update(self, old: dict, new: dict) -> None:
        self._log("update", new["metadata"]["name"], new["metadata"]["resourceVersion"])

    def on_delete(self, obj: dict) -> None:
        self._log("delete", obj["metadata"]["name"], obj["metadata"]["resourceVersion"])

    def on_forget(self, obj: dict) -> None:
        self.forgotten.append((obj["metadata"]["name"], obj["metadata"]["resourceVersion"]))

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[str, str, str]]:
        with self._changed:
            self._changed.wait_for(lambda: len(self.events) >= count, timeout)
            return list(self.events)


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


def informer_for(client: KubeClient, recorder: Recorder, **kwargs: Any) -> Informer:
    return Informer(
        client,
        "/api/v1/nodes",
        on_add=recorder.on_add,
        on_update=recorder.on_update,
        on_delete=recorder.on_delete,
        on_forget=recorder.on_forget,
        watch_timeout=60,
        min_backoff=0.01,
        max_backoff=0.05,
        **kwargs,
    )


# -- the informer --------------------------------------------------------------------------------


def test_list_watch_bookmark_then_gone_relists_and_reconciles(
    server: FakeApiServer, client: KubeClient
) -> None:
    lists = queue.Queue()
    lists.put({"items": [node("a", 1), node("b", 2), node("c", 3)], "rv": "3"})
    # The cluster as the re-list finds it: b deleted, c changed, e new, a and d unchanged.
    lists.put(
        {"items": [node("a", 5), node("c", 7), node("d", 4), node("e", 8)], "rv": "9"},
    )

    @server.route("GET", "/api/v1/nodes")
    def list_nodes(request: Request) -> tuple[int, dict]:
        page = lists.get_nowait()
        return 200, {
            "kind": "NodeList",
            "metadata": {"resourceVersion": page["rv"]},
            "items": page["items"],
        }

    watches = queue.Queue()
    watches.put(
        [
            {"type": "ADDED", "object": node("d", 4)},
            {"type": "MODIFIED", "object": node("a", 5)},
            {"type": "BOOKMARK", "object": {"kind": "Node", "metadata": {"resourceVersion": "6"}}},
        ]
    )  # then the server ends the watch: the informer resumes from the bookmark
    watches.put([{"type": "ERROR", "object": GONE}])
    watches.put([Hold()])

    @server.route("GET", "/api/v1/nodes", watch=True)
    def watch_nodes(request: Request) -> list:
        return watches.get_nowait()

    recorder = Recorder()
    informer = informer_for(client, recorder).start()
    try:
        assert informer.wait_for_sync(5)
        events = recorder.wait_for(8)
        assert events == [
            ("add", "a", "1"),
            ("add", "b", "2"),
            ("add", "c", "3"),
            ("add", "d", "4"),
            ("update", "a", "5"),
            # the re-list after 410: only what changed
            ("update", "c", "7"),
            ("add", "e", "8"),
            ("delete", "b", "2"),
        ]
        wait_until(lambda: len(server.watches()) == 3)
        first, second, third = server.watches()
        assert first.query["resourceVersion"] == "3"  # from the list
        assert first.query["allowWatchBookmarks"] == "true"
        assert second.query["resourceVersion"] == "6"  # from the bookmark
        assert third.query["resourceVersion"] == "9"  # from the re-list
        assert sorted(informer.keys()) == ["a", "c", "d", "e"]
        assert informer.get("c")["metadata"]["resourceVersion"] == "7"
        assert informer.relists == 2
        assert informer.resource_version == "9"
        # Every stored object that left the store, the very dict readers had: a replaced by
        # the watch, then the re-list's (new dicts for all, unchanged a and d included).
        assert recorder.forgotten == [("a", "1"), ("a", "5"), ("b", "2"), ("c", "3"), ("d", "4")]
    finally:
        informer.stop()
    assert not informer._thread.is_alive()  # stop() interrupted the held watch
    assert len(recorder.events) == 8


def test_http_410_on_the_watch_request_relists(server: FakeApiServer, client: KubeClient) -> None:
    lists = queue.Queue()
    lists.put((node("a", 1),))
    lists.put((node("a", 1), node("b", 3)))

    @server.route("GET", "/api/v1/nodes")
    def list_nodes(request: Request) -> tuple[int, dict]:
        items = lists.get_nowait()
        return 200, {"metadata": {"resourceVersion": str(len(items))}, "items": list(items)}

    answers = queue.Queue()
    answers.put((410, GONE))
    answers.put([Hold()])

    @server.route("GET", "/api/v1/nodes", watch=True)
    def watch_nodes(request: Request) -> Any:
        return answers.get_nowait()

    recorder = Recorder()
    informer = informer_for(client, recorder).start()
    try:
        assert recorder.wait_for(2) == [("add", "a", "1"), ("add", "b", "3")]
        assert informer.relists == 2
    finally:
        informer.stop()


def test_errors_back_off_and_resume_from_the_last_version(
    server: FakeApiServer, client: KubeClient
) -> None:
    @server.route("GET", "/api/v1/nodes")
    def list_nodes(request: Request) -> tuple[int, dict]:
        # The first list fails: the informer must retry it, and only then be synced.
        if sum(1 for r in server.requests if "watch" not in r.query) == 1:
            return 500, status(500, "InternalError", "etcd is sad")
        return 200, {"metadata": {"resourceVersion": "10"}, "items": [node("a", 10)]}

    answers = queue.Queue()
    answers.put((500, status(500, "InternalError", "try again")))
    answers.put(
        [
            {"type": "ADDED", "object": node("bad", 11)},
            {"type": "ADDED", "object": node("b", 12)},
        ]
    )
    answers.put([Hold()])

    @server.route("GET", "/api/v1/nodes", watch=True)
    def watch_nodes(request: Request) -> Any:
        return answers.get_nowait()

    recorder = Recorder()
    original = recorder.on_add

    def on_add(obj: dict) -> None:
        original(obj)
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")  # logged; the informer carries on

    informer = informer_for(client, recorder)
    informer.on_add = on_add
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        expected = [("add", "a", "10"), ("add", "bad", "11"), ("add", "b", "12")]
        assert recorder.wait_for(3) == expected
        wait_until(lambda: len(server.watches()) == 3)
        versions = [w.query["resourceVersion"] for w in server.watches()]
        assert versions == ["10", "10", "12"]  # no re-list for a 500: resume where it was
        assert informer.relists == 1
    finally:
        informer.stop()


def test_selectors_are_sent_on_list_and_watch(server: FakeApiServer, client: KubeClient) -> None:
    @server.route("GET", "/api/v1/pods")
    def list_pods(request: Request) -> tuple[int, dict]:
        return 200, {"metadata": {"resourceVersion": "1"}, "items": []}

    @server.route("GET", "/api/v1/pods", watch=True)
    def watch_pods(request: Request) -> list:
        return [Hold()]

    selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
    informer = Informer(client, "/api/v1/pods", field_selector=selector, label_selector="app=x")
    informer.start()
    try:
        assert informer.wait_for_sync(5)
        wait_until(lambda: len(server.watches()) == 1)
        listed, watched = server.requests[0], server.watches()[0]
        for request in (listed, watched):
            assert request.query["fieldSelector"] == selector
            assert request.query["labelSelector"] == "app=x"
    finally:
        informer.stop()


# -- KubeClient ----------------------------------------------------------------------------------


def test_list_follows_continue_tokens(server: FakeApiServer, client: KubeClient) -> None:
    @server.route("GET", "/api/v1/nodes")
    def pages(request: Request) -> tuple[int, dict]:
        if request.query.get("continue") == "page2":
            return 200, {"metadata": {"resourceVersion": "5"}, "items": [node("c", 3)]}
        return 200, {
            "metadata": {"resourceVersion": "5", "continue": "page2"},
            "items": [node("a", 1), node("b", 2)],
        }

    items, version = client.list("/api/v1/nodes", {"labelSelector": "x"}, page_size=2)
    assert [i["metadata"]["name"] for i in items] == ["a", "b", "c"]
    assert version == "5"
    assert [r.query for r in server.requests] == [
        {"labelSelector": "x", "limit": "2"},
        {"labelSelector": "x", "limit": "2", "continue": "page2"},
    ]


def test_expired_continue_token_lists_again_in_one_request(
    server: FakeApiServer, client: KubeClient
) -> None:
    @server.route("GET", "/api/v1/nodes")
    def pages(request: Request) -> tuple[int, dict]:
        if "continue" in request.query:
            return 410, status(410, "Expired", "continue token expired")
        if "limit" in request.query:
            return 200, {"metadata": {"resourceVersion": "5", "continue": "t"}, "items": []}
        return 200, {"metadata": {"resourceVersion": "6"}, "items": [node("a", 6)]}

    items, version = client.list("/api/v1/nodes")
    assert ([i["metadata"]["name"] for i in items], version) == (["a"], "6")


def test_api_errors_carry_the_status(server: FakeApiServer, client: KubeClient) -> None:
    @server.route("POST", "/api/v1/namespaces/ns/pods/p/binding")
    def bind(request: Request) -> tuple[int, dict]:
        return 409, status(409, "Conflict", 'pod p is already assigned to node "x"')

    with pytest.raises(ApiError) as caught:
        client.bind({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}, "n1")
    assert (caught.value.status, caught.value.reason) == (409, "Conflict")
    assert str(caught.value) == 'pod p is already assigned to node "x"'
    assert server.requests[0].body == {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    }

    assert client.get_pod("ns", "missing") is None  # 404 -> None
    with pytest.raises(ApiError) as caught:
        client.delete_pod("ns", "missing", uid="u2", grace_period_seconds=0)
    assert caught.value.status == 404 and caught.value.code == 404
    assert server.requests[-1].body == {
        "apiVersion": "v1",
        "kind": "DeleteOptions",
        "preconditions": {"uid": "u2"},
        "gracePeriodSeconds": 0,
    }


def test_watch_error_events_raise(server: FakeApiServer, client: KubeClient) -> None:
    answers = queue.Queue()
    answers.put([{"type": "ADDED", "object": node("a", 1)}, {"type": "ERROR", "object": GONE}])
    answers.put([{"type": "ERROR", "object": status(500, "InternalError", "boom")}])

    @server.route("GET", "/api/v1/nodes", watch=True)
    def watch_nodes(request: Request) -> list:
        return answers.get_nowait()

    stream = client.watch("/api/v1/nodes", "1", 30)
    assert next(stream) == ("ADDED", node("a", 1))
    with pytest.raises(Gone) as caught:
        next(stream)
    assert caught.value.status == 410
    with pytest.raises(ApiError) as caught:
        list(client.watch("/api/v1/nodes", "1", 30))
    assert (caught.value.status, caught.value.message) == (500, "boom")
    assert server.watches()[0].query["timeoutSeconds"] == "30"


def test_connection_refused_is_an_api_error() -> None:
    client = KubeClient(ApiClient(Configuration(host="http://127.0.0.1:9")), timeout=(1, 1))
    client.api.configuration.retries = 0
    with pytest.raises(ApiError) as caught:
        client.get_pod("ns", "p")
    assert caught.value.status == 0


def test_leases_raise_conflict(server: FakeApiServer, client: KubeClient) -> None:
    path = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"

    @server.route("POST", path)
    def create(request: Request) -> tuple[int, dict]:
        return 409, status(409, "AlreadyExists", "leases ... already exists")

    @server.route("PUT", path + "/sched")
    def update(request: Request) -> tuple[int, dict]:
        return 200, request.body

    assert client.get_lease("kube-system", "sched") is None
    with pytest.raises(Conflict):
        client.create_lease("kube-system", {"metadata": {"name": "sched"}})
    body = {"metadata": {"name": "sched", "resourceVersion": "3"}, "spec": {}}
    assert client.update_lease("kube-system", "sched", body) == body


def test_record_event_and_patch_status(server: FakeApiServer) -> None:
    posted = threading.Event()

    @server.route("POST", "/apis/events.k8s.io/v1/namespaces/ns/events")
    def events(request: Request) -> tuple[int, dict]:
        posted.set()
        return 201, request.body

    @server.route("PATCH", "/api/v1/namespaces/ns/pods/p/status")
    def patch(request: Request) -> tuple[int, dict]:
        return 200, {}

    client = KubeClient(ApiClient(Configuration(host=server.url)))
    recorder = EventRecorder(client, instance="test-1")
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": "4"}}
    recorder.record_event(pod, "Warning", "FailedScheduling", "Scheduling", "é" * 1000)
    assert posted.wait(5) and recorder.flush(5)
    event = server.requests[0].body
    assert event["metadata"]["name"].startswith("p.")
    assert event["reportingController"] == "kube-extender"
    assert event["reportingInstance"] == "test-1"
    assert (event["type"], event["reason"], event["action"]) == (
        "Warning",
        "FailedScheduling",
        "Scheduling",
    )
    assert event["regarding"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": "p",
        "namespace": "ns",
        "uid": "u1",
        "resourceVersion": "4",
    }
    assert len(event["note"].encode()) <= 1024 and event["note"].endswith(" ...")
    assert event["eventTime"].endswith("Z") and "." in event["eventTime"]

    # A failing event is logged, never raised.
    recorder.async_events = False
    recorder.record_event({"metadata": {"name": "x", "namespace": "other"}}, "Normal", "R", "A", "")

    patch_body = {"status": {"conditions": [{"type": "PodScheduled", "status": "False"}]}}
    client.patch_pod_status("ns", "p", patch_body)
    assert server.requests[-1].body == patch_body


def test_managed_fields_are_trimmed_from_listed_and_watched_objects(
    server: FakeApiServer, client: KubeClient
) -> None:
    """As client-go informers with a trimming transform: no managedFields in the store or in
    what the handlers get (they are most of a small object's size); other metadata kept."""
    fields = [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]

    def managed(obj: dict) -> dict:
        obj["metadata"]["managedFields"] = list(fields)
        return obj

    @server.route("GET", "/api/v1/nodes")
    def list_nodes(request: Request) -> tuple[int, dict]:
        return 200, {"metadata": {"resourceVersion": "2"}, "items": [managed(node("a", 1, x="1"))]}

    @server.route("GET", "/api/v1/nodes", watch=True)
    def watch_nodes(request: Request) -> list:
        return [{"type": "ADDED", "object": managed(node("b", 3))}, Hold()]

    seen: list[dict] = []
    informer = Informer(
        client, "/api/v1/nodes", on_add=seen.append, watch_timeout=60, min_backoff=0.01
    )
    informer.start()
    try:
        wait_until(lambda: len(seen) == 2)
        assert all("managedFields" not in obj["metadata"] for obj in seen)
        assert all("managedFields" not in obj["metadata"] for obj in informer.list())
        assert informer.get("a")["metadata"]["labels"] == {"x": "1"}
    finally:
        informer.stop()
    kept: list[dict] = []
    untrimmed = Informer(
        client, "/api/v1/nodes", on_add=kept.append, watch_timeout=60, transform=None
    )
    untrimmed.start()
    try:
        wait_until(lambda: len(kept) == 2)
        assert all(obj["metadata"]["managedFields"] == fields for obj in kept)
    finally:
        untrimmed.stop()


class _GatedClient:
    """Lists answered when their path is released; watches silent until closed."""

    def __init__(self, *paths: str) -> None:
        self.asked = {path: threading.Event() for path in paths}
        self.release = {path: threading.Event() for path in paths}

    def list(self, path: str, query: Any = None, *, page_size: int = 500) -> tuple[list, str]:
        self.asked[path].set()
        self.release[path].wait(5)
        return [node(path.strip("/"), 1)], "1"

    def watch(self, *args: Any, **kwargs: Any) -> Any:
        class Silent:
            def __init__(self) -> None:
                self.closed = threading.Event()

            def __iter__(self) -> Iterator:
                self.closed.wait(5)
                return iter(())

            def close(self) -> None:
                self.closed.set()

        return Silent()


def test_an_informer_started_after_another_lists_at_once_but_delivers_after_it() -> None:
    """Informers started together fetch their lists concurrently (as client-go's factory
    starts them); ``start(after=...)`` only holds the delivery to the handlers."""
    client = _GatedClient("/a", "/b")
    delivered: list[str] = []
    a = Informer(client, "/a", on_add=lambda obj: delivered.append("a"))
    b = Informer(client, "/b", on_add=lambda obj: delivered.append("b"))
    try:
        a.start()
        b.start(after=a)
        assert client.asked["/b"].wait(5)  # b lists while a's list is still on its way
        client.release["/b"].set()
        time.sleep(0.2)
        assert not b.has_synced() and delivered == []
        client.release["/a"].set()
        assert a.wait_for_sync(5) and b.wait_for_sync(5)
        assert delivered == ["a", "b"]
    finally:
        a.stop()
        b.stop()
