"""The floor for ``bench/extender_overhead.py``: an extender that decides nothing.

A Flask app served by gunicorn (gthread worker, the same workers x threads as ``kube-extender
serve`` in the benchmark), registered the same way (filter + prioritize, nodeCacheCapable):
filter returns the node names it got, prioritize scores each 0. What kube-scheduler pays for it
is the cost of the extender protocol itself (two HTTP round trips per pod, JSON both ways).

    gunicorn -k gthread -w 1 --threads 4 -b 127.0.0.1:PORT bench.null_extender:app
"""

from __future__ import annotations

import orjson
from flask import Flask, Response, request

app = Flask(__name__)


def _names(args: dict) -> list[str]:
    names = args.get("NodeNames") or args.get("nodenames")
    if names is not None:
        return list(names)
    nodes = (args.get("Nodes") or args.get("nodes") or {}).get("items") or []
    return [n["metadata"]["name"] for n in nodes]


def _json(body: object) -> Response:
    return Response(orjson.dumps(body), mimetype="application/json")


@app.post("/filter")
def filter_() -> Response:
    names = _names(orjson.loads(request.get_data()))
    return _json({"NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}})


@app.post("/prioritize")
def prioritize() -> Response:
    names = _names(orjson.loads(request.get_data()))
    return _json([{"Host": name, "Score": 0} for name in names])


@app.get("/readyz")
def readyz() -> Response:
    return Response(b"ok", mimetype="text/plain")
