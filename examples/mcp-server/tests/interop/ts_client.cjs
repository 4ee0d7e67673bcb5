// The official TypeScript MCP SDK (npm @modelcontextprotocol/sdk: Client + StdioClientTransport)
// against an MCP server given on the command line (examples/mcp-server).
// Usage: node ts_client.cjs NODE_DIR SERVER [ARGS...], NODE_DIR holding node_modules/ with the
// SDK. Every check throws on failure; the last line is `ts-sdk: all checks passed`. Run by
// examples/mcp-server/tests/sdk_interop.rs.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const [nodeDir, command, ...args] = process.argv.slice(2);
const sdk = createRequire(path.join(path.resolve(nodeDir), "node_modules", "_.js"));
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
const { LoggingMessageNotificationSchema } = sdk("@modelcontextprotocol/sdk/types.js");

const { check, sleep, waitFor, cancelLongTask } = require("./sdk_checks.cjs");

async function main() {
  const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
  const client = new Client({ name: "rpcwire-ts-interop", version: "1.0.0" });
  const logs = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(n.params);
  });
  // The SDK runs notification handlers a microtask late, while a response drops its
  // request's progress handler at once: progress read in the same chunk as the result is
  // reported to onerror ("progress notification for an unknown token") instead of
  // onprogress. Such notifications did arrive before the result; collect them too.
  const late = [];
  const errors = [];
  client.onerror = (e) => {
    const m = /progress notification for an unknown token: (.*)$/s.exec(String(e && e.message));
    if (m) late.push(JSON.parse(m[1]).params);
    else {
      errors.push(String(e && e.message));
      console.error("client error:", e);
    }
  };
  await client.connect(transport);
  check(client.getServerVersion().name === "rpcwire-example", "initialize: serverInfo");
  check(client.getServerCapabilities().tools !== undefined, "initialize: tools capability");
  check(client.getServerCapabilities().logging !== undefined, "initialize: logging capability");

  await client.ping();
  check(true, "ping");

  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  check(JSON.stringify(names) === JSON.stringify(["add", "count", "echo", "fail", "long_task"]), `tools/list: ${names}`);
  for (const t of tools) check(t.inputSchema.type === "object", `tools/list: ${t.name} has an object input schema`);

  let r = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
  check(!r.isError && r.content[0].text === "42", "call add: 42");
  r = await client.callTool({ name: "echo", arguments: { text: 'héllo "mcp"' } });
  check(r.content[0].text === 'héllo "mcp"', "call echo: text back unchanged");

  const progress = [];
  late.length = 0;
  r = await client.callTool({ name: "count", arguments: { to: 5, delay_ms: 5 } }, undefined, {
    onprogress: (p) => progress.push(p),
  });
  check(!r.isError && r.content[0].text === "counted to 5", "call count: result");
  await sleep(50); // let the late notification handlers run
  // (long_task below shows onprogress delivery while a call runs.)
  console.log(`call count: ${progress.length} to onprogress, ${late.length} reported late`);
  progress.push(...late.map(({ progress, total, message }) => ({ progress, total, message })));
  check(JSON.stringify(progress.map((p) => p.progress)) === "[1,2,3,4,5]", `call count: progress 1..5 (${JSON.stringify(progress)})`);
  check(progress.every((p) => p.total === 5), "call count: total 5");
  check(logs.some((l) => l.level === "info" && String(l.data).includes("counting to 5")), "log message received");

  r = await client.callTool({ name: "fail", arguments: { reason: "disk on fire" } });
  check(r.isError === true, "call fail: isError true");
  check(r.content[0].text === "disk on fire", "call fail: its message");

  r = await client.callTool({ name: "add", arguments: { a: "x" } });
  check(r.isError === true, "call add with bad arguments: isError true");

  let unknown = null;
  try {
    await client.callTool({ name: "no_such_tool", arguments: {} });
  } catch (e) {
    unknown = e;
  }
  check(unknown && /Unknown tool/.test(String(unknown.message)), `unknown tool: protocol error (${unknown && unknown.message})`);

  // Cancel the long task once it has reported progress: the SDK sends notifications/cancelled;
  // the server stops the task (its cancellation log arrives), progress ends, the session goes on.
  const { aborted, progress: longProgress } = await cancelLongTask(client, 3);
  check(aborted, "long_task: call cancelled by the client");
  await waitFor(() => logs.some((l) => String(l.data).includes("long_task cancelled")), 5000, "cancellation log");
  check(true, "long_task: the server stopped it (its cancellation log arrived)");
  const stoppedAt = longProgress.length;
  await sleep(500);
  check(longProgress.length === stoppedAt && stoppedAt < 300, `long_task: progress ended at ${stoppedAt}`);

  await client.ping();
  r = await client.callTool({ name: "add", arguments: { a: 1, b: 1 } });
  check(r.content[0].text === "2", "session goes on after the cancellation");
  // MCP: a cancelled request is not answered (an answer would reach onerror as a response
  // for an unknown message id).
  const stray = errors.filter((m) => /unknown message ID/.test(m));
  check(stray.length === 0, `no answer to the cancelled call (${stray})`);

  await client.setLoggingLevel("error");
  const before = logs.length;
  await client.callTool({ name: "count", arguments: { to: 1, delay_ms: 1 } });
  check(logs.length === before, "logging/setLevel error: info messages filtered out");

  await client.close();
  console.log("ts-sdk: all checks passed");
}

const timer = setTimeout(() => {
  console.error("ts-sdk: timed out");
  process.exit(2);
}, 60000);
main().then(
  () => {
    clearTimeout(timer);
    process.exit(0);
  },
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
