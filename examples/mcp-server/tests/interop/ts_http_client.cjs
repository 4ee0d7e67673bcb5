// The official TypeScript MCP SDK (npm @modelcontextprotocol/sdk: Client +
// StreamableHTTPClientTransport) against `mcp-server --http`.
// Usage: node ts_http_client.cjs NODE_DIR URL, NODE_DIR holding node_modules/ with the SDK.
// Every check throws on failure; the last line is `ts-sdk-http: all checks passed`. Run by
// examples/mcp-server/tests/sdk_http.rs.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const [nodeDir, url] = process.argv.slice(2);
const sdk = createRequire(path.join(path.resolve(nodeDir), "node_modules", "_.js"));
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = sdk("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { LoggingMessageNotificationSchema } = sdk("@modelcontextprotocol/sdk/types.js");

const { check, waitFor, cancelLongTask } = require("./sdk_checks.cjs");

async function connect() {
  const client = new Client({ name: "rpcwire-ts-http-test", version: "1.0.0" });
  const errors = [];
  client.onerror = (e) => errors.push(String(e && e.message));
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => logs.push(n.params));
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, transport, logs, errors };
}

async function round() {
  const { client, transport, logs, errors } = await connect();
  const sid = transport.sessionId;
  check(typeof sid === "string" && sid.startsWith("mcp-"), `session id with the server's prefix (${sid})`);
  check(client.getServerVersion().name === "rpcwire-example", "initialize: serverInfo");
  await client.ping();
  const { tools } = await client.listTools();
  const names = new Set(tools.map((t) => t.name));
  check(names.has("add") && names.has("count") && names.has("test_simple_text"), `tools/list: ${tools.length} tools`);
  let r = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
  check(!r.isError && r.content[0].text === "42", "call add: 42");
  const progress = [];
  r = await client.callTool({ name: "count", arguments: { to: 4, delay_ms: 5 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  check(!r.isError && r.content[0].text === "counted to 4", "call count: result");
  check(JSON.stringify(progress) === "[1,2,3,4]", `call count: progress 1..4 over SSE (${progress})`);
  check(logs.some((l) => String(l.data).includes("counting to 4")), "log message over SSE");
  r = await client.callTool({ name: "fail", arguments: { reason: "nope" } });
  check(r.isError === true && r.content[0].text.includes("nope"), "call fail: isError");
  // Cancel a long task after two progress notifications: the SDK sends
  // notifications/cancelled; the server stops the task and, as MCP asks, does not answer it
  // (an answer would reach onerror as a response for an unknown message id).
  const { aborted } = await cancelLongTask(client, 2);
  check(aborted, "long_task: call cancelled by the client");
  await waitFor(() => logs.some((l) => String(l.data).includes("long_task cancelled")), 5000, "cancellation log");
  check(true, "long_task: the server stopped it (its cancellation log arrived)");
  r = await client.callTool({ name: "add", arguments: { a: 1, b: 1 } });
  check(r.content[0].text === "2", "the session goes on after the cancellation");
  check(errors.length === 0, `no answer to the cancelled call, no client error (${errors})`);
  return { client, transport, sid };
}

async function post(sid, body) {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": sid,
      "mcp-protocol-version": "2025-11-25",
    },
    body: JSON.stringify(body),
  });
}

async function main() {
  // A session, ended with DELETE by the SDK.
  const first = await round();
  await first.transport.terminateSession();
  check(first.transport.sessionId === undefined, "terminateSession: the transport forgot the session");
  const gone = await post(first.sid, { jsonrpc: "2.0", id: 1, method: "tools/list" });
  check(gone.status === 404, `POST on the ended session: ${gone.status}`);
  await first.client.close();

  // A session ended under the client's feet: 404, then the client initializes again.
  const second = await round();
  const del = await fetch(url, { method: "DELETE", headers: { "mcp-session-id": second.sid } });
  check(del.status === 200, "DELETE from outside: 200");
  let failed = null;
  try {
    await second.client.listTools();
  } catch (e) {
    failed = e;
  }
  check(failed !== null && failed.code === 404, `a call on a deleted session fails with 404 (${failed})`);
  await second.client.close();
  const third = await round();
  check(third.sid !== second.sid && third.sid !== first.sid, "re-initialized: a new session");
  await third.transport.terminateSession();
  await third.client.close();
  console.log("ts-sdk-http: all checks passed");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
