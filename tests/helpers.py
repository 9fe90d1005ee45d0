"""Builders for upload bodies."""

import json


def body(data) -> bytes:
    return json.dumps(data).encode()


def measurement(nodeid, n=200, fails=0, **extra):
    return {"nodeid": nodeid, "n": n, "fails": fails, **extra}


def record(node, prop="pass", lock="match", status="stable", **extra):
    return {"node": node, "property_check": prop, "fixture_lock": lock, "flake_status": status,
            **extra}
