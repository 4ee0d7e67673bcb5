"""The official Python MCP SDK against `mcp-server --http --tls-cert ... --jwks ...` (an OAuth
resource server over HTTPS, tokens from oauth2-mock-server). Arguments: the MCP URL, the test
CA's PEM file, a valid bearer token, the authorization server's issuer URL.

- without a token: 401, and the `resource_metadata` URL from `WWW-Authenticate`; that RFC 9728
  document names the resource and the authorization server (httpx2 steps);
- with the bearer token: the SDK's Streamable HTTP client lists and calls tools over HTTPS;
- discovery by the SDK's own OAuth client (`ClientCredentialsOAuthProvider`): from the 401 to
  the metadata, to the authorization server's metadata, to a token (client credentials, with
  the resource as RFC 8707 `resource`), then the call;
- without the CA: the TLS handshake fails.
Every check raises on failure; the last line printed is `python-oauth: all checks passed`."""

import re
import ssl
import sys

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from sdk_checks import check

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "py", "version": "1"}}}
HEADERS = {"accept": "application/json, text/event-stream"}


class Memory:
    """Token storage in memory (the SDK's TokenStorage protocol)."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, info):
        self.client = info


async def list_and_call(client, url):
    async with streamable_http_client(url, http_client=client) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            check("add" in names, f"tools/list over HTTPS: {len(names)} tools")
            r = await session.call_tool("add", {"a": 2, "b": 40})
            check(not r.is_error and r.content[0].text == "42", "tools/call add over HTTPS: 42")


async def main(url, ca, token, issuer):
    tls = ssl.create_default_context(cafile=ca)

    # No token: 401 and the metadata URL; the metadata names the authorization server.
    async with httpx2.AsyncClient(verify=tls) as client:
        r = await client.post(url, json=INIT, headers=HEADERS)
        check(r.status_code == 401, f"no token: {r.status_code}")
        challenge = r.headers["www-authenticate"]
        found = re.search(r'resource_metadata="([^"]+)"', challenge)
        check(found is not None, f"the challenge names the metadata: {challenge}")
        meta = (await client.get(found.group(1))).json()
        check(meta["resource"] == url, f"metadata resource {meta['resource']}")
        check(meta["authorization_servers"] == [issuer], f"metadata names {meta['authorization_servers']}")

    # The bearer token.
    client = httpx2.AsyncClient(verify=tls, headers={"authorization": f"Bearer {token}"}, timeout=30)
    async with client:
        await list_and_call(client, url)

    # The SDK's OAuth client discovers everything from the 401.
    seen = []

    async def record(response):
        seen.append((response.request.method, str(response.request.url), response.status_code))

    provider = ClientCredentialsOAuthProvider(
        server_url=url, storage=Memory(), client_id="rpcwire-test", client_secret="secret",
        scope="mcp", issuer=issuer)
    client = httpx2.AsyncClient(verify=tls, auth=provider, timeout=30,
                                event_hooks={"response": [record]})
    async with client:
        await list_and_call(client, url)
    for method, where, status in seen:
        print(f"  {method} {where} -> {status}", flush=True)
    check(any(s == 401 for _, w, s in seen if w == url), "the SDK saw the 401")
    check(any("/.well-known/oauth-protected-resource" in w and s == 200 for _, w, s in seen),
          "the SDK read the protected resource metadata")
    check(any(w.startswith(issuer) and "/.well-known/" in w and s == 200 for _, w, s in seen),
          "the SDK read the authorization server's metadata")
    check(any(m == "POST" and w.startswith(issuer) and s == 200 for m, w, s in seen),
          "the SDK got a token from the authorization server")

    # Without the CA: the handshake fails.
    async with httpx2.AsyncClient() as client:
        try:
            await client.post(url, json=INIT, headers=HEADERS)
            failed = False
        except httpx2.ConnectError as e:
            failed = "CERTIFICATE_VERIFY_FAILED" in str(e) or "certificate" in str(e).lower()
        check(failed, "without the CA the TLS handshake fails")
    print("python-oauth: all checks passed", flush=True)


anyio.run(main, *sys.argv[1:5])
