// An agent written with the official TypeScript ACP SDK (npm @agentclientprotocol/sdk:
// `agent()` over `ndJsonStream` on stdio), driven by rpcwire-acp's client in
// profiles/acp/tests/sdk_agent.rs. Usage: node ts_agent.mjs NODE_DIR.
//
// Prompts: `read PATH` asks permission, then reads PATH through the client's
// fs/read_text_file and reports its line count; `long` streams a tool call update every 50 ms
// until session/cancel; `exit` sends one update and exits mid-turn; `huge N` sends a message
// chunk of N bytes; `ask Q` asks the client (elicitation/create, a form with an `answer`
// field); `run CMD ARGS` runs a command in the client's terminal; `mode` says the session's
// mode. Sessions can be listed, resumed, closed, deleted, and given a mode and a `style`
// option; authenticate and logout are answered. Logs go to stderr.
import { createRequire } from "node:module";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const require = createRequire(path.join(path.resolve(process.argv[2]), "node_modules", "_.js"));
const acp = await import(pathToFileURL(require.resolve("@agentclientprotocol/sdk")).href);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let clientCaps = {};
let sessions = 0;
// Each session's cwd, mode and style.
const known = new Map();
const modes = (current) => ({
  currentModeId: current,
  availableModes: [
    { id: "code", name: "Code" },
    { id: "ask", name: "Ask" },
  ],
});
const styleOption = (value) => [
  {
    id: "style",
    name: "Style",
    type: "select",
    currentValue: value,
    options: [
      { value: "plain", name: "Plain" },
      { value: "shout", name: "Shout" },
    ],
  },
];
const notFound = (id) => new acp.RequestError(-32002, `Resource not found: no session ${id}`);
const sessionOf = (id) => {
  const s = known.get(id);
  if (!s) throw notFound(id);
  return s;
};
const cancelled = new Set();

const say = (client, sessionId, text) =>
  client.notify(acp.methods.client.session.update, {
    sessionId,
    update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text } },
  });
const tool = (client, sessionId, update) =>
  client.notify(acp.methods.client.session.update, { sessionId, update });

const app = acp
  .agent({ name: "ts-sdk-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    clientCaps = params.clientCapabilities ?? {};
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: {
        loadSession: false,
        sessionCapabilities: { list: {}, resume: {}, close: {}, delete: {} },
        auth: { logout: {} },
      },
      agentInfo: { name: "ts-sdk-agent", version: "1.0.0" },
      authMethods: [{ id: "local", name: "Local" }],
    };
  })
  .onRequest(acp.methods.agent.authenticate, () => ({}))
  .onRequest(acp.methods.agent.logout, () => ({}))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `sdk-session-${++sessions}`;
    known.set(sessionId, { cwd: params.cwd, mode: "code", style: "plain" });
    return { sessionId, modes: modes("code"), configOptions: styleOption("plain") };
  })
  .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
    sessionOf(params.sessionId).mode = params.modeId;
    return {};
  })
  .onRequest(acp.methods.agent.session.setConfigOption, ({ params }) => {
    const s = sessionOf(params.sessionId);
    s.style = params.value;
    return { configOptions: styleOption(s.style) };
  })
  .onRequest(acp.methods.agent.session.list, ({ params }) => ({
    sessions: [...known.entries()]
      .filter(([, s]) => !params.cwd || s.cwd === params.cwd)
      .map(([sessionId, s]) => ({ sessionId, cwd: s.cwd })),
  }))
  .onRequest(acp.methods.agent.session.resume, ({ params }) => {
    const s = sessionOf(params.sessionId);
    return { modes: modes(s.mode), configOptions: styleOption(s.style) };
  })
  .onRequest(acp.methods.agent.session.close, ({ params }) => {
    sessionOf(params.sessionId);
    return {};
  })
  .onRequest(acp.methods.agent.session.delete, ({ params }) => {
    sessionOf(params.sessionId);
    known.delete(params.sessionId);
    return {};
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => {
    cancelled.add(params.sessionId);
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const { sessionId } = params;
    cancelled.delete(sessionId);
    const text = params.prompt.map((b) => b.text ?? "").join(" ").trim();
    if (text.startsWith("read ")) {
      const file = text.slice(5);
      await say(client, sessionId, `reading ${file}`);
      await tool(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "t1", title: `Read ${file}`, kind: "read", status: "pending" });
      const answer = await client.request(acp.methods.client.session.requestPermission, {
        sessionId,
        toolCall: { toolCallId: "t1", title: `Read ${file}` },
        options: [
          { optionId: "yes", name: "Allow", kind: "allow_once" },
          { optionId: "no", name: "Reject", kind: "reject_once" },
        ],
      });
      if (answer.outcome.outcome !== "selected" || answer.outcome.optionId !== "yes") {
        await tool(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" });
        await say(client, sessionId, "permission refused");
        return { stopReason: "end_turn" };
      }
      if (!clientCaps.fs?.readTextFile) throw acp.RequestError.internalError({ reason: "no fs" });
      const { content } = await client.request(acp.methods.client.fs.readTextFile, { sessionId, path: file });
      const lines = content.split("\n").filter((l, i, all) => i < all.length - 1 || l !== "").length;
      await tool(client, sessionId, {
        sessionUpdate: "tool_call_update",
        toolCallId: "t1",
        status: "completed",
        content: [{ type: "content", content: { type: "text", text: `${lines} lines` } }],
      });
      await say(client, sessionId, `${file} has ${lines} lines`);
      return { stopReason: "end_turn" };
    }
    if (text === "long") {
      await tool(client, sessionId, { sessionUpdate: "tool_call", toolCallId: "t2", title: "Long", kind: "execute", status: "in_progress" });
      for (let i = 1; i <= 400; i++) {
        if (cancelled.has(sessionId)) {
          await tool(client, sessionId, { sessionUpdate: "tool_call_update", toolCallId: "t2", status: "failed" });
          return { stopReason: "cancelled" };
        }
        await tool(client, sessionId, {
          sessionUpdate: "tool_call_update",
          toolCallId: "t2",
          content: [{ type: "content", content: { type: "text", text: `step ${i}` } }],
        });
        await sleep(50);
      }
      return { stopReason: "end_turn" };
    }
    if (text === "exit") {
      await say(client, sessionId, "exiting mid-turn");
      await sleep(50);
      process.exit(3);
    }
    if (text.startsWith("ask ")) {
      const answer = await client.request(acp.methods.client.elicitation.create, {
        mode: "form",
        sessionId,
        message: text.slice(4),
        requestedSchema: { type: "object", properties: { answer: { type: "string" } }, required: ["answer"] },
      });
      await say(client, sessionId, answer.action === "accept" ? `answer: ${answer.content?.answer}` : answer.action);
      return { stopReason: "end_turn" };
    }
    if (text.startsWith("run ")) {
      const [command, ...args] = text.slice(4).split(" ");
      const { terminalId } = await client.request(acp.methods.client.terminal.create, { sessionId, command, args });
      const exit = await client.request(acp.methods.client.terminal.waitForExit, { sessionId, terminalId });
      const { output } = await client.request(acp.methods.client.terminal.output, { sessionId, terminalId });
      await client.request(acp.methods.client.terminal.release, { sessionId, terminalId });
      await say(client, sessionId, `exit ${exit.exitCode}: ${output.trim()}`);
      return { stopReason: "end_turn" };
    }
    if (text === "mode") {
      const s = sessionOf(sessionId);
      const said = `mode ${s.mode}`;
      await say(client, sessionId, s.style === "shout" ? said.toUpperCase() : said);
      return { stopReason: "end_turn" };
    }
    if (text.startsWith("huge ")) {
      await say(client, sessionId, "x".repeat(Number(text.slice(5))));
      await say(client, sessionId, "after the huge one");
      return { stopReason: "end_turn" };
    }
    await say(client, sessionId, `echo: ${text}`);
    return { stopReason: "end_turn" };
  });

const connection = app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
await connection.closed;
console.error("ts-sdk-agent: connection closed");
