"""A plain-HTTP reverse proxy to the test apiserver that delays the events of pod watches.

It stands for a busy apiserver whose watch reports a binding seconds after it was written:
a process given :meth:`SlowWatchProxy.kubeconfig` lists and writes at once, but learns of
pod changes ``delay`` seconds late. Everything else (nodes, the pod list that syncs the
informer, GETs and POSTs) passes unchanged, with the admin's client certificate.
"""

from __future__ import annotations

import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import urllib3
import yaml

from extender.controlplane import ControlPlane

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "host"}


class SlowWatchProxy:
    def __init__(self, cp: ControlPlane, delay: float, path: str = "/api/v1/pods") -> None:
        self.delay = delay
        self.path = path
        self.upstream = cp.server
        self.pool = urllib3.PoolManager(
            cert_reqs="CERT_REQUIRED",
            ca_certs=str(cp.certs.ca_cert),
            cert_file=str(cp.certs.admin_cert),
            key_file=str(cp.certs.admin_key),
            maxsize=16,
        )
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                proxy.forward(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def kubeconfig(self, directory: Path) -> Path:
        path = directory / "slow-watch.kubeconfig"
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [{"name": "slow", "cluster": {"server": self.url}}],
                    "users": [{"name": "slow", "user": {}}],
                    "contexts": [{"name": "slow", "context": {"cluster": "slow", "user": "slow"}}],
                    "current-context": "slow",
                }
            )
        )
        return path

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def forward(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        watch = parse_qs(url.query).get("watch", [""])[0] in ("true", "1")
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in HOP_BY_HOP}
        response = self.pool.request(
            handler.command,
            self.upstream + handler.path,
            body=body,
            headers=headers,
            preload_content=False,
            retries=False,
            timeout=urllib3.Timeout(connect=5, read=None if watch else 30),
        )
        handler.send_response(response.status)
        for key, value in response.headers.items():
            if key.lower() not in HOP_BY_HOP and key.lower() != "content-length":
                handler.send_header(key, value)
        if not watch:
            data = response.read(decode_content=False)
            response.release_conn()
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            return
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        delay = self.delay if url.path == self.path else 0.0
        chunks: queue.Queue[tuple[float, bytes]] = queue.Queue()

        def read() -> None:
            try:
                for chunk in response.stream(65536, decode_content=False):
                    chunks.put((time.monotonic() + delay, chunk))
            except Exception:
                pass
            chunks.put((0.0, b""))

        threading.Thread(target=read, daemon=True).start()
        try:
            while True:
                due, chunk = chunks.get()
                if not chunk:
                    break
                time.sleep(max(0.0, due - time.monotonic()))
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client went away
        finally:
            response.release_conn()
