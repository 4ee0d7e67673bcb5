"""Python's httpx and websockets against `rpcwire serve --http --tls-cert ... --jwks ...`
(HTTPS and WSS on one port, JWTs from oauth2-mock-server). Arguments: the https:// URL, the
test CA's PEM file, a valid bearer token. Every check raises on failure; the last line
printed is `python-tls: all checks passed`."""

import asyncio
import json
import ssl
import sys

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

CALL = {"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print(f"ok: {what}", flush=True)


async def main(url, ca, token):
    tls = ssl.create_default_context(cafile=ca)
    auth = {"authorization": f"Bearer {token}"}

    with httpx.Client(verify=tls) as client:
        r = client.post(url, json=CALL, headers=auth)
        check(r.status_code == 200 and r.json()["result"] == 19, f"httpx over HTTPS: {r.text}")
        check(r.http_version in ("HTTP/1.1", "HTTP/2"), f"httpx spoke {r.http_version}")
        r = client.post(url, json=CALL)
        check(r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer"),
              f"httpx without a token: {r.status_code} {r.headers.get('www-authenticate')}")
    try:
        httpx.post(url, json=CALL, headers=auth)
        failed = False
    except httpx.ConnectError as e:
        failed = "CERTIFICATE_VERIFY_FAILED" in str(e)
    check(failed, "httpx without the CA: the handshake fails")

    wss = url.replace("https://", "wss://")
    async with connect(wss, ssl=tls, additional_headers=auth) as ws:
        await ws.send(json.dumps(CALL))
        answer = json.loads(await ws.recv())
        check(answer.get("result") == 19, f"websockets over WSS: {answer}")
    try:
        async with connect(wss, ssl=tls):
            status = 101
    except InvalidStatus as e:
        status = e.response.status_code
    check(status == 401, f"websockets without a token: {status}, no 101")
    try:
        async with connect(wss, additional_headers=auth):
            failed = False
    except ssl.SSLCertVerificationError:
        failed = True
    check(failed, "websockets without the CA: the handshake fails")
    print("python-tls: all checks passed", flush=True)


asyncio.run(main(*sys.argv[1:4]))
