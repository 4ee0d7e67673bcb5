// The official TypeScript MCP SDK's 2.x client (npm @modelcontextprotocol/client: Client,
// StdioClientTransport, StreamableHTTPClientTransport) against examples/mcp-server at protocol
// revision 2026-07-28, over stdio (`stdio SERVER_BINARY`: the server started with `--fixtures`)
// or Streamable HTTP (`http URL`).
// Usage: node ts_modern_client.cjs NODE_DIR stdio|http TARGET, NODE_DIR holding node_modules/
// with the SDK. The client negotiates with `server/discover` (versionNegotiation `auto`), lists
// and calls tools, answers an elicitation through the SDK's InputRequiredResult auto-fulfilment
// (its `elicitation/create` handler), reads resources, gets prompts, and runs a task of the
// tasks extension as far as the SDK goes. Every check throws on failure; the last line is
// `ts-sdk-2026: all checks passed`. Run by examples/mcp-server/tests/sdk_modern.rs.
//
// @modelcontextprotocol/client 2.4.0 has no tasks runtime: its task schemas are marked
// "2025-11-25 wire vocabulary with no SDK runtime", and its 2026-07-28 result decoder
// (`decodeResult` in dist/src-*.cjs) refuses every `resultType` but "complete" and
// "input_required" with UNSUPPORTED_RESULT_TYPE, whatever schema the caller passes; the
// task step checks exactly that refusal.
"use strict";
const path = require("path");
const { createRequire } = require("module");

const [nodeDir, transportKind, target] = process.argv.slice(2);
const sdk = createRequire(path.join(path.resolve(nodeDir), "node_modules", "_.js"));
const { Client, StreamableHTTPClientTransport } = sdk("@modelcontextprotocol/client");
const { StdioClientTransport } = sdk("@modelcontextprotocol/client/stdio");
const z = sdk("zod");

const { check } = require("./sdk_checks.cjs");

const REVISION = "2026-07-28";
const TASKS = "io.modelcontextprotocol/tasks";

const TaskCreated = z.looseObject({ resultType: z.literal("task"), taskId: z.string(), status: z.string() });

async function main() {
  const asked = [];
  const client = new Client(
    { name: "rpcwire-ts-2026-test", version: "1.0.0" },
    {
      capabilities: { elicitation: { form: {} }, extensions: { [TASKS]: {} } },
      versionNegotiation: { mode: "auto" },
    },
  );
  client.setRequestHandler("elicitation/create", async (req) => {
    asked.push(req.params.message);
    return { action: "accept", content: { name: "Ada" } };
  });
  const transport =
    transportKind === "stdio"
      ? new StdioClientTransport({ command: target, args: ["--fixtures"], stderr: "ignore" })
      : new StreamableHTTPClientTransport(new URL(target));
  await client.connect(transport);
  try {
    check(client.getProtocolEra() === "modern", `server/discover: era ${client.getProtocolEra()}`);
    const found = await client.discover();
    check(found.supportedVersions.includes(REVISION), `discover: supportedVersions ${found.supportedVersions}`);
    const caps = client.getServerCapabilities();
    check(caps.tools !== undefined, "discover: tools capability");
    check(caps.extensions !== undefined && TASKS in caps.extensions, "discover: the tasks extension offered");

    const { tools } = await client.listTools();
    const names = new Set(tools.map((t) => t.name));
    for (const want of ["add", "test_input_required_result_elicitation", "slow_compute", "long_task"]) {
      check(names.has(want), `tools/list: ${want}`);
    }
    let r = await client.callTool({ name: "add", arguments: { a: 2, b: 40 } });
    check(!r.isError && r.content[0].text === "42", "tools/call add: 42");

    // InputRequiredResult: the SDK answers the elicitation with the handler above and sends
    // the call again with the answer and the sealed requestState.
    r = await client.callTool({ name: "test_input_required_result_elicitation", arguments: {} });
    check(asked.length === 1 && asked[0] === "What is your name?", `InputRequiredResult: the elicitation reached the handler (${asked})`);
    check(!r.isError && r.content[0].text === "Hello, Ada!", `InputRequiredResult: answered call greets (${JSON.stringify(r.content)})`);

    const { resources } = await client.listResources();
    check(resources.some((x) => x.uri === "test://static-text"), "resources/list: test://static-text");
    let rr = await client.readResource({ uri: "test://static-text" });
    check(rr.contents[0].text === "This is the content of the static text resource.", `resources/read: ${rr.contents[0].text}`);
    rr = await client.readResource({ uri: "test://template/42/data" });
    check(rr.contents[0].text.includes("42"), `resources/read through the template: ${rr.contents[0].text}`);

    const { prompts } = await client.listPrompts();
    check(prompts.some((p) => p.name === "test_prompt_with_arguments"), `prompts/list: ${prompts.map((p) => p.name)}`);
    const pr = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "one", arg2: "two" } });
    const text = pr.messages[0].content.text;
    check(text.includes("one") && text.includes("two"), `prompts/get with arguments: ${text}`);

    // The tasks extension: the server answers tools/call with a CreateTaskResult
    // (`resultType: "task"`), which this SDK's 2026-07-28 decoder refuses before any schema
    // of the caller's sees it (`decodeResult`: only "complete" and "input_required" are
    // taken). So a task can be neither followed to completion nor cancelled through it; what
    // is checked is that the server did answer with a task and the SDK said why it stopped.
    for (const args of [{ seconds: 0.3, label: "ts" }, { seconds: 30 }]) {
      let refused;
      try {
        await client.request({ method: "tools/call", params: { name: "slow_compute", arguments: args } }, TaskCreated);
      } catch (e) {
        refused = e;
      }
      check(
        refused !== undefined && refused.code === "UNSUPPORTED_RESULT_TYPE" && refused.data.resultType === "task",
        `task: the server answered a CreateTaskResult, which the SDK refuses (${refused && refused.message})`,
      );
    }
    console.log("LIMITATION: @modelcontextprotocol/client has no tasks extension at 2026-07-28 (resultType \"task\" refused)");
  } finally {
    await client.close();
  }
  console.log("ts-sdk-2026: all checks passed");
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e && e.stack ? e.stack : e);
    process.exit(1);
  },
);
