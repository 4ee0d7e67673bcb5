"""Raw HTTP cases against examples/a2a-agent, with httpx (from the SDK's virtualenv).

usage: raw_http.py BASE_URL MAX_BODY
The agent runs with --max-body MAX_BODY. Prints "ok <check>" per check; exits non-zero on
the first failure.
"""

import json
import sys

import httpx

BASE, MAX_BODY = sys.argv[1], int(sys.argv[2])
URL = BASE + "/"
V1 = {"A2A-Version": "1.0"}


def ok(name):
    print(f"ok {name}", flush=True)


def rpc(method, params, headers=V1, id=1):
    body = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
    r = httpx.post(URL, json=body, headers=headers)
    assert r.status_code == 200, (r.status_code, r.text)
    return r.json()


def error_of(answer, code, reason):
    e = answer["error"]
    assert e["code"] == code, answer
    info = e["data"][0]
    assert info["@type"] == "type.googleapis.com/google.rpc.ErrorInfo", answer
    assert info["reason"] == reason and info["domain"] == "a2a-protocol.org", answer


def jsonrpc_error(answer, code):
    """A JSON-RPC error of the protocol's own (not A2A's): the specification (section 9.5)
    asks an ErrorInfo of A2A-specific errors only, and the Python SDK's server sends none
    with -32700 and -32601 either."""
    assert answer["error"]["code"] == code, answer


def message(text):
    return {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": text}]}}


# An unsupported A2A-Version, and none at all (read as 0.3).
a = rpc("GetTask", {"id": "x"}, headers={"A2A-Version": "2.0"}, id="v")
assert a["id"] == "v"
error_of(a, -32009, "VERSION_NOT_SUPPORTED")
error_of(rpc("GetTask", {"id": "x"}, headers={}), -32009, "VERSION_NOT_SUPPORTED")
ok("unsupported version")

jsonrpc_error(rpc("NoSuchMethod", {}), -32601)
# The 0.3 names are served only in the opt-in compatibility mode (off here).
jsonrpc_error(rpc("message/send", message("echo x")), -32601)
ok("unknown method")

error_of(rpc("SendMessage", {"message": 5}), -32602, "INVALID_PARAMS")
error_of(rpc("GetTask", {"id": "x", "historyLength": -1}), -32602, "INVALID_PARAMS")
ok("malformed params")

# A batch is refused as one Invalid Request (A2A has no batches), id null.
batch = [{"jsonrpc": "2.0", "id": i, "method": "GetTask", "params": {"id": "x"}} for i in (1, 2)]
r = httpx.post(URL, json=batch, headers=V1)
a = r.json()
assert r.status_code == 200 and isinstance(a, dict) and a["id"] is None, a
jsonrpc_error(a, -32600)
# So is a request that is not one (no method), with its id when it has one.
r = httpx.post(URL, json={"jsonrpc": "2.0", "id": 9}, headers=V1)
assert r.status_code == 200 and r.json()["id"] == 9, r.text
jsonrpc_error(r.json(), -32600)
ok("batch and invalid request")

# Not JSON at all.
r = httpx.post(URL, content=b"{not json", headers={**V1, "content-type": "application/json"})
assert r.json()["error"]["code"] == -32700 and r.json()["id"] is None, r.text
ok("parse error")

# The body limit, at its edge: exactly MAX_BODY bytes pass, one more is 413.
def padded(n):
    text = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}})
    return text.encode() + b" " * (n - len(text))

r = httpx.post(URL, content=padded(MAX_BODY), headers={**V1, "content-type": "application/json"})
assert r.status_code == 200 and r.json()["error"]["code"] == -32001, (r.status_code, r.text)
r = httpx.post(URL, content=padded(MAX_BODY + 1), headers={**V1, "content-type": "application/json"})
assert r.status_code == 413, (r.status_code, r.text)
ok("oversized body")

# A stream cut halfway, resumed with Last-Event-ID: no event lost or repeated.
def events(response, stop_after=None):
    """(id, data) of each event with data, until stop_after of them."""
    out, ev_id, data = [], None, []
    for line in response.iter_lines():
        if line == "":
            if data and data != [""]:
                out.append((ev_id, json.loads("\n".join(data))))
                if stop_after and len(out) >= stop_after:
                    return out
            data = []
        elif line.startswith("id:"):
            ev_id = line[3:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip())
    return out


body = {"jsonrpc": "2.0", "id": "s", "method": "SendStreamingMessage", "params": message("count 6")}
with httpx.Client(timeout=10) as c:
    with c.stream("POST", URL, json=body, headers=V1) as r:
        assert r.headers["content-type"].startswith("text/event-stream"), r.headers
        first = events(r, stop_after=4)
    # The connection is closed here, mid-task.
task_id = first[0][1]["result"]["task"]["id"]
last_id = first[-1][0]
sub = {"jsonrpc": "2.0", "id": "r", "method": "SubscribeToTask", "params": {"id": task_id}}
with httpx.Client(timeout=10) as c:
    with c.stream("POST", URL, json=sub, headers={**V1, "Last-Event-ID": last_id}) as r:
        rest = events(r)
both = first + rest
ids = [i for i, _ in both]
# The ids are the events' ids in the task's event log: 1, 2, ... with no gap.
assert ids == [str(n) for n in range(1, len(ids) + 1)], ids
# task, "counting to 6", 6 x (status, artifact), completed
assert len(both) == 15, [d["result"] for _, d in both]
assert all(d["id"] == "s" for _, d in first), "events answer their request"
assert all(d["id"] == "r" for _, d in rest), "resumed events answer the resuming request"
final = both[-1][1]["result"]["statusUpdate"]["status"]["state"]
assert final == "TASK_STATE_COMPLETED", final
chunks = [d["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"] for _, d in both if "artifactUpdate" in d["result"]]
assert chunks == ["1", "2", "3", "4", "5", "6"], chunks
ok("stream resumed with Last-Event-ID")

# The client that went away did not cancel the task: it completed.
t = rpc("GetTask", {"id": task_id})["result"]
assert t["status"]["state"] == "TASK_STATE_COMPLETED", t
ok("disconnect does not cancel")

# A push config at a private address is refused; the extended card is not configured.
error_of(rpc("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": "http://10.0.0.1/hook"}), -32602, "INVALID_PARAMS")
error_of(rpc("GetExtendedAgentCard", {}), -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED")
ok("push config and extended card")
print("all ok", flush=True)
