// The official TypeScript ACP SDK (npm @agentclientprotocol/sdk: `client()` over `ndJsonStream`)
// as the editor, against the example agent spawned on the command line.
// Usage: MCP_SERVER=PATH node ts_client.mjs NODE_DIR AGENT [ARGS...], NODE_DIR holding
// node_modules/ with the SDK, PATH the project's MCP example server (stdio), given to the agent
// in session/new. Every check prints `ok: ...` or throws; the last line is
// `ts-sdk: all checks passed`.
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

// The editor's terminals: commands run here, their output kept.
const terminals = new Map();
let nextTerminal = 0;
const elicited = [];
let elicitAnswer = { action: "accept", content: { answer: "blue" } };

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
  })
  .onRequest(acp.methods.client.terminal.create, ({ params }) => {
    const id = `t${++nextTerminal}`;
    const term = { output: "", exit: null };
    term.exited = new Promise((resolve) => {
      const child = spawn(params.command, params.args ?? [], { stdio: ["ignore", "pipe", "pipe"] });
      term.child = child;
      child.stdout.on("data", (d) => (term.output += d));
      child.stderr.on("data", (d) => (term.output += d));
      child.on("close", (code, signal) => {
        term.exit = { exitCode: code, signal };
        resolve(term.exit);
      });
    });
    terminals.set(id, term);
    return { terminalId: id };
  })
  .onRequest(acp.methods.client.terminal.output, ({ params }) => {
    const term = terminals.get(params.terminalId);
    return { output: term.output, truncated: false, exitStatus: term.exit ?? undefined };
  })
  .onRequest(acp.methods.client.terminal.waitForExit, async ({ params }) => await terminals.get(params.terminalId).exited)
  .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
    terminals.get(params.terminalId).child.kill();
    return {};
  })
  .onRequest(acp.methods.client.terminal.release, ({ params }) => {
    terminals.get(params.terminalId)?.child.kill();
    terminals.delete(params.terminalId);
    return {};
  })
  .onRequest(acp.methods.client.elicitation.create, ({ params }) => {
    elicited.push(params);
    return elicitAnswer;
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
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true, elicitation: { form: {} } },
    clientInfo: { name: "rpcwire-ts-interop", version: "1.0.0" },
  });
  check(init.protocolVersion === 1, "initialize: protocol version 1", init);
  check(init.agentInfo?.name === "rpcwire-acp-agent", "initialize: agent info", init.agentInfo);
  check(init.agentCapabilities?.loadSession === true, "initialize: loadSession capability");
  const sc = init.agentCapabilities?.sessionCapabilities ?? {};
  check(sc.list && sc.resume && sc.close && sc.delete, "initialize: list, resume, close and delete capabilities", sc);
  check(init.agentCapabilities?.auth?.logout !== undefined, "initialize: logout capability", init.agentCapabilities?.auth);
  check(init.agentCapabilities?.mcpCapabilities?.http === true, "initialize: MCP over HTTP offered", init.agentCapabilities?.mcpCapabilities);

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

  // The rest of the stable surface, in a session given the project's MCP example server.
  const lastText = () => texts(updates).at(-1);
  const mcpServers = [{ name: "demo", command: process.env.MCP_SERVER, args: [], env: [] }];
  const second = await ctx.request(acp.methods.agent.session.new, { cwd: "/work", mcpServers });
  const sid2 = second.sessionId;
  check(second.modes?.currentModeId === "code" && second.modes.availableModes.length === 2, "session/new: modes", second.modes);
  check(second.configOptions?.[0]?.id === "style" && second.configOptions[0].currentValue === "plain", "session/new: the style option", second.configOptions);
  const ask2 = (text, options) =>
    ctx.request(acp.methods.agent.session.prompt, { sessionId: sid2, prompt: [{ type: "text", text }] }, options);

  updates.length = 0;
  res = await ask2("tools");
  check(lastText().includes("demo/add") && lastText().includes("demo/echo"), "MCP: the server's tools listed", lastText());
  updates.length = 0;
  res = await ask2('tool add {"a": 2, "b": 40}');
  check(res.stopReason === "end_turn" && lastText() === "demo/add: 42", "MCP: a tool called through the agent", texts(updates));

  await ctx.request(acp.methods.agent.session.setMode, { sessionId: sid2, modeId: "ask" });
  updates.length = 0;
  res = await ask2("write /virtual/refused.txt no");
  check(lastText().includes("not allowed in the ask mode") && !files.has("/virtual/refused.txt"), "session/set_mode: the ask mode refuses writes", lastText());
  updates.length = 0;
  await ask2("mode");
  check(lastText() === "mode: ask", "session/set_mode: the mode kept", lastText());
  let badMode;
  try {
    await ctx.request(acp.methods.agent.session.setMode, { sessionId: sid2, modeId: "nope" });
  } catch (e) {
    badMode = e;
  }
  check(badMode?.code === -32602, "session/set_mode: an unknown mode is Invalid params", badMode?.code);
  await ctx.request(acp.methods.agent.session.setMode, { sessionId: sid2, modeId: "code" });

  const set = await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: sid2, configId: "style", value: "shout" });
  check(set.configOptions?.[0]?.currentValue === "shout", "session/set_config_option: the new value answered", set);
  updates.length = 0;
  await ask2("mode");
  check(lastText() === "MODE: CODE", "session/set_config_option: the style applies", lastText());
  await ctx.request(acp.methods.agent.session.setConfigOption, { sessionId: sid2, configId: "style", value: "plain" });

  updates.length = 0;
  res = await ask2("ask your favourite colour?");
  check(elicited.length === 1 && elicited[0].message === "your favourite colour?", "elicitation/create: the question reaches the client", elicited);
  check(elicited[0].mode === "form" && elicited[0].requestedSchema?.properties?.answer?.type === "string", "elicitation/create: a form with an answer field", elicited[0]);
  check(lastText() === "you answered: blue", "elicitation: the answer reaches the agent", lastText());
  elicitAnswer = { action: "decline" };
  updates.length = 0;
  await ask2("ask again?");
  check(lastText() === "you declined to answer", "elicitation: a decline", lastText());

  updates.length = 0;
  res = await ask2("run echo from-the-terminal");
  check(nextTerminal === 1 && terminals.size === 0, "terminal/create and /release: run and released", nextTerminal);
  check(lastText() === "exit code 0, output: from-the-terminal", "terminal: output and exit code reach the agent", lastText());
  check(updates.some((n) => (n.update.content ?? []).some((c) => c.type === "terminal")), "terminal: shown in the tool call");

  const listed = await ctx.request(acp.methods.agent.session.list, {});
  const ids = listed.sessions.map((s) => s.sessionId);
  check(ids.includes(sessionId) && ids.includes(sid2), "session/list: both sessions", ids);
  check(listed.sessions.find((s) => s.sessionId === sid2).title === "tools", "session/list: titled by the first prompt", listed.sessions);
  const filtered = await ctx.request(acp.methods.agent.session.list, { cwd: "/work" });
  check(filtered.sessions.length === 1 && filtered.sessions[0].sessionId === sid2, "session/list: filtered by cwd", filtered.sessions);

  const resumed = await ctx.request(acp.methods.agent.session.resume, { sessionId: sid2, cwd: "/work", mcpServers });
  check(resumed.modes?.currentModeId === "code", "session/resume: the session's mode", resumed);
  updates.length = 0;
  await ask2('tool echo {"text": "again"}');
  check(lastText() === "demo/echo: again", "session/resume: the MCP server connected again", lastText());
  await ctx.request(acp.methods.agent.session.close, { sessionId: sid2 });
  check(true, "session/close answered");
  await ctx.request(acp.methods.agent.session.delete, { sessionId: sid2 });
  let gone;
  try {
    await ctx.request(acp.methods.agent.session.resume, { sessionId: sid2, cwd: "/work", mcpServers: [] });
  } catch (e) {
    gone = e;
  }
  check(gone?.code === -32002, "session/delete: the session is gone", gone?.code);
  const after = await ctx.request(acp.methods.agent.session.list, {});
  check(!after.sessions.some((s) => s.sessionId === sid2), "session/delete: no longer listed");

  await ctx.request(acp.methods.agent.authenticate, { methodId: "local" });
  await ctx.request(acp.methods.agent.logout, {});
  check(true, "authenticate and logout answered");
  const stats = await ctx.request("_rpcwire/stats", { n: 1 });
  check(stats.sessions === 1 && stats.echo?.n === 1, "an extension method", stats);
});

agent.stdin.end();
const code = await Promise.race([exited, sleep(5000).then(() => "timeout")]);
check(code === 0, "the agent exits 0 when its stdin closes", code);
console.log("ts-sdk: all checks passed");
