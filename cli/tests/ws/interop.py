"""Python `websockets` client against `rpcwire serve --ws`: run by cli/tests/ws_interop.rs.

usage: interop.py URL EXAMPLES.json MAX_MESSAGE SEND_TIMEOUT_SECS
Prints one `ok: ...` line per check; any failure raises (non-zero exit).
"""
import asyncio
import json
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

URL, EXAMPLES, MAX, SEND_TIMEOUT = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
WAIT = 10


def norm(v):
    """A batch's answers may come in any order."""
    if isinstance(v, list):
        return sorted((norm(x) for x in v), key=lambda x: json.dumps(x, sort_keys=True))
    return v


async def recv_json(ws):
    return json.loads(await asyncio.wait_for(ws.recv(), WAIT))


def req(method, params, id_):
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": id_})


async def expect_close(ws, code):
    try:
        while True:
            await asyncio.wait_for(ws.recv(), WAIT)
    except ConnectionClosed as e:
        assert e.rcvd is not None, f"no close frame received (expected {code})"
        assert e.rcvd.code == code, f"close code {e.rcvd.code}, expected {code}: {e.rcvd.reason}"
        return e.rcvd.reason


async def spec_examples():
    examples = json.load(open(EXAMPLES))
    async with connect(URL, max_size=None) as ws:
        for n, ex in enumerate(examples):
            await ws.send(ex["request"])
            if ex["response"] is None:
                # Nothing is sent back: the next message is the answer to a probe.
                await ws.send(req("subtract", [1, 1], f"probe{n}"))
                got = await recv_json(ws)
                assert got == {"jsonrpc": "2.0", "result": 0, "id": f"probe{n}"}, (ex["name"], got)
            else:
                got = await recv_json(ws)
                want = json.loads(ex["response"])
                assert norm(got) == norm(want), (ex["name"], got, want)
    print(f"ok: {len(examples)} specification examples")


async def server_calls_client():
    async with connect(URL) as ws:
        await ws.send(req("ask", {"method": "client_add", "params": [2, 3]}, 10))
        call = await recv_json(ws)
        assert call["method"] == "client_add" and call["params"] == [2, 3] and "id" in call, call
        await ws.send(json.dumps({"jsonrpc": "2.0", "result": 5, "id": call["id"]}))
        assert await recv_json(ws) == {"jsonrpc": "2.0", "result": 5, "id": 10}
    print("ok: the server called the client and got its answer")


async def notifications_to_all():
    conns = [await connect(URL) for _ in range(3)]
    try:
        await asyncio.sleep(0.2)  # every handshake registered
        await conns[0].send(req("broadcast", ["hello", 42], 20))
        for i, ws in enumerate(conns):
            seen_news = False
            seen_answer = i != 0
            while not (seen_news and seen_answer):
                msg = await recv_json(ws)
                if msg.get("method") == "news":
                    assert msg["params"] == ["hello", 42] and "id" not in msg, msg
                    seen_news = True
                elif msg.get("id") == 20:
                    assert msg["result"] >= 3, msg
                    seen_answer = True
    finally:
        for ws in conns:
            await ws.close()
    print("ok: a server notification reached every connected client")


async def fragments():
    async with connect(URL) as ws:
        await ws.send(iter(['{"jsonrpc": "2.0", "method": "subt', 'ract", "params": [10', ', 4], "id": 30}']))
        assert await recv_json(ws) == {"jsonrpc": "2.0", "result": 6, "id": 30}
        await ws.send(iter(['[{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":31},', '{"jsonrpc":"2.0","method":"sum","params":[3],"id":32}]']))
        assert norm(await recv_json(ws)) == norm([
            {"jsonrpc": "2.0", "result": 3, "id": 31}, {"jsonrpc": "2.0", "result": 3, "id": 32}])
    print("ok: fragmented messages are reassembled")


async def limits():
    head = '{"jsonrpc":"2.0","method":"echo","params":["'
    tail = '"],"id":40}'
    async with connect(URL, max_size=None) as ws:
        at_limit = head + "x" * (MAX - len(head) - len(tail)) + tail
        assert len(at_limit) == MAX
        await ws.send(at_limit)
        got = await recv_json(ws)
        assert got["id"] == 40 and len(got["result"][0]) == MAX - len(head) - len(tail), "at the limit"
        await ws.send(head + "x" * (MAX - len(head) - len(tail) + 1) + tail)
        await expect_close(ws, 1009)
    print("ok: a message one byte over the limit gets close 1009")
    async with connect(URL) as ws:
        await ws.send(b'{"jsonrpc":"2.0","method":"echo","params":["\xff\xfe"],"id":41}', text=True)
        await expect_close(ws, 1007)
    print("ok: invalid UTF-8 gets close 1007")
    async with connect(URL) as ws:
        await ws.send(b'{"jsonrpc":"2.0","method":"echo","id":42}')
        reason = await expect_close(ws, 1003)
        assert "text" in reason, reason
    print(f"ok: a binary message gets close 1003 ({reason})")


async def stalled_reader():
    # `stuck` never calls recv(): websockets stops reading its socket once its queue is full.
    stuck = await connect(URL, max_queue=1, max_size=None)
    other = await connect(URL, max_size=None)
    flooder = await connect(URL, max_size=None)
    big = "y" * (MAX // 2)
    start = time.monotonic()
    calls = 0
    closed_at = None
    n = 0
    while time.monotonic() - start < SEND_TIMEOUT + 8:
        n += 1
        await flooder.send(req("broadcast", [big], 1000 + n))
        # The other clients are served all along.
        await other.send(req("subtract", [n, 1], n))
        while True:
            msg = await recv_json(other)
            if msg.get("id") == n:
                assert msg["result"] == n - 1
                calls += 1
                break
        while True:
            msg = await recv_json(flooder)
            if msg.get("id") == 1000 + n:
                break
        # The hub counts the connections: 3 while `stuck` is held, 2 once it is dropped.
        if msg["result"] == 2:
            closed_at = time.monotonic() - start
            break
        await asyncio.sleep(0.02)
    assert closed_at is not None, "the connection that stopped reading was never closed"
    assert closed_at >= SEND_TIMEOUT * 0.9, f"closed after {closed_at:.2f}s, before the send timeout"
    for ws in (stuck, other, flooder):
        ws.transport.abort() if hasattr(ws, "transport") else None
    print(f"ok: a client that stopped reading was closed after {closed_at:.2f}s "
          f"(send timeout {SEND_TIMEOUT}s) while another got {calls} answers")


async def main():
    await spec_examples()
    await server_calls_client()
    await notifications_to_all()
    await fragments()
    await limits()
    await stalled_reader()


asyncio.run(main())
