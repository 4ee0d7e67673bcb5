// The official TypeScript ACP SDK (npm @agentclientprotocol/sdk: `client()` over `ndJsonStream`)
// as the editor, against the example agent spawned on the command line.
// Usage: node ts_client.mjs NODE_DIR AGENT [ARGS...], NODE_DIR holding node_modules/ with the
// SDK. Every check prints `ok: ...` or throws; the last line is `ts-sdk: all checks passed`.
// Run by examples/acp-agent/tests/sdk_interop.rs.
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [nodeDir, command, ...args] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(nodeDir), "node_modules", "_.js"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);

function check(cond, what, detail) {
  if (!cond) {
    throw new Error(`check failed: ${what}${detail === undefined ? "" : `: ${JSON.stringify(detail)}`}`);
  }
  console.log(`ok: ${what}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond, what, ms = 10000) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// The editor's files: none of them exists on disk, so a read or write that reaches the disk
// instead of the editor shows.
const files = new Map([["/virtual/five.txt", "1\n2\n3\n4\n5\n"]]);
const reads = [];
const writes = [];
const asked = [];
let answer = "allow";
const updates = [];

const agent = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => agent.on("exit", resolve));
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

const app = acp
  .client({ name: "rpcwire-ts-interop" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    const chosen = params.options.find((o) => o.optionId === answer);
    return { outcome: { outcome: "selected", optionId: chosen.optionId } };
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    reads.push(params.path);
    const content = files.get(params.path);
    if (content === undefined) throw acp.RequestError.resourceNotFound(params.path);
    return { content };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    writes.push(params);
    files.set(params.path, params.content);
    return {};
  });

const kinds = (list) => list.map((n) => n.update.sessionUpdate);
const texts = (list) =>
  list.flatMap((n) =>
    n.update.sessionUpdate === "agent_message_chunk"
      ? [n.update.content.text]
      : (n.update.content ?? []).map((c) => c.content?.text).filter(Boolean),
  );

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: "rpcwire-ts-interop", version: "1.0.0" },
  });
  check(init.protocolVersion === 1, "initialize: protocol version 1", init);
  check(init.agentInfo?.name === "rpcwire-acp-agent", "initialize: agent info", init.agentInfo);
  check(init.agentCapabilities?.loadSession === true, "initialize: loadSession capability");

  const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: "/virtual", mcpServers: [] });
  check(typeof sessionId === "string" && sessionId.length > 0, "session/new: a session id", sessionId);

  const prompt = (text, options) =>
    ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }, options);

  // A prompt whose updates arrive in order and end with end_turn; the file is the editor's.
  updates.length = 0;
  let res = await prompt("read /virtual/five.txt");
  check(res.stopReason === "end_turn", "read: stopReason end_turn", res);
  check(
    JSON.stringify(kinds(updates)) ===
      JSON.stringify(["tool_call", "tool_call_update", "tool_call_update", "agent_message_chunk"]),
    "read: updates in order (tool call, in progress, completed, message)",
    kinds(updates),
  );
  check(updates[0].update.kind === "read" && updates[0].update.title === "Read /virtual/five.txt", "read: the tool call", updates[0]);
  check(updates[1].update.status === "in_progress" && updates[2].update.status === "completed", "read: statuses", updates);
  check(reads.length === 1 && reads[0] === "/virtual/five.txt", "read: served by the client's fs/read_text_file", reads);
  check(texts(updates).includes("/virtual/five.txt has 5 lines"), "read: the line count", texts(updates));

  // A permission request answered allow: the file is written through the editor.
  updates.length = 0;
  answer = "allow";
  res = await prompt("write /virtual/new.txt hello from the agent");
  check(res.stopReason === "end_turn", "write allowed: end_turn", res);
  check(asked.length === 1 && asked[0].toolCall.toolCallId === updates[0].update.toolCallId, "write allowed: permission asked for the tool call", asked);
  check(writes.length === 1 && writes[0].path === "/virtual/new.txt" && writes[0].content === "hello from the agent", "write allowed: written through fs/write_text_file", writes);
  check(updates.some((n) => n.update.status === "completed"), "write allowed: tool call completed");

  // One answered reject: nothing is written.
  updates.length = 0;
  answer = "reject";
  res = await prompt("write /virtual/other.txt nope");
  check(res.stopReason === "end_turn", "write rejected: end_turn", res);
  check(asked.length === 2, "write rejected: permission asked");
  check(writes.length === 1 && !files.has("/virtual/other.txt"), "write rejected: nothing written", writes);
  check(updates.some((n) => n.update.status === "failed") && texts(updates).some((t) => t.includes("denied")), "write rejected: tool call failed, denied", texts(updates));

  // session/cancel during the long task: the turn ends `cancelled` and the work stops.
  updates.length = 0;
  const long = prompt("long 100");
  await waitFor(() => texts(updates).includes("step 2/100"), "step 2 of the long task");
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  res = await long;
  check(res.stopReason === "cancelled", "session/cancel: stopReason cancelled", res);
  check(updates[0].update.sessionUpdate === "plan" && updates[0].update.entries.length === 1, "long: a plan first", updates[0]);
  check(updates[1].update.sessionUpdate === "tool_call" && updates[1].update.kind === "execute", "long: then its tool call", updates[1]);
  check(texts(updates).some((t) => t.startsWith("cancelled at step")), "session/cancel: the tool call says where it stopped", texts(updates));
  let seen = updates.length;
  await sleep(600);
  check(updates.length === seen, "session/cancel: no update after the turn's end (the work stopped)", kinds(updates.slice(seen)));
  const stepsDone = texts(updates).filter((t) => /^step \d+\/100$/.test(t)).length;
  check(stepsDone < 20, "session/cancel: the task did not run on", stepsDone);

  // A request aborted through the SDK's cancellation comes back -32800.
  updates.length = 0;
  const abort = new AbortController();
  const aborted = prompt("long 100", { cancellationSignal: abort.signal });
  await waitFor(() => texts(updates).includes("step 1/100"), "step 1 of the long task");
  abort.abort();
  let error;
  try {
    await aborted;
  } catch (e) {
    error = e;
  }
  check(error?.code === -32800, "$/cancel_request: the request comes back -32800", error && { code: error.code, message: error.message });
  seen = updates.length;
  await sleep(600);
  check(updates.length === seen, "$/cancel_request: the work stopped", kinds(updates.slice(seen)));

  // An unknown method is refused by the agent, and the connection goes on.
  let unknown;
  try {
    await ctx.request("x/unknown", {});
  } catch (e) {
    unknown = e;
  }
  check(unknown?.code === -32601, "unknown method: -32601", unknown && unknown.code);
  updates.length = 0;
  res = await prompt("read /virtual/five.txt");
  check(res.stopReason === "end_turn", "the session goes on after the errors");
});

agent.stdin.end();
const code = await Promise.race([exited, sleep(5000).then(() => "timeout")]);
check(code === 0, "the agent exits 0 when its stdin closes", code);
console.log("ts-sdk: all checks passed");
