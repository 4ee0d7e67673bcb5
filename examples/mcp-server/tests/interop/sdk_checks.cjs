// Checks both TypeScript SDK scripts run (stdio and Streamable HTTP).
"use strict";

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
  console.log(`ok: ${what}`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(cond, ms, what) {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
}

// Calls `long_task` and aborts the call (the SDK sends notifications/cancelled) once `after`
// progress notifications have come. Resolves to whether the call was aborted and the
// progress values seen.
async function cancelLongTask(client, after) {
  const controller = new AbortController();
  const progress = [];
  const call = client.callTool({ name: "long_task", arguments: { seconds: 30 } }, undefined, {
    signal: controller.signal,
    onprogress: (p) => {
      progress.push(p.progress);
      if (progress.length === after) controller.abort("enough");
    },
  });
  let aborted = false;
  try {
    await call;
  } catch (e) {
    aborted = true;
  }
  return { aborted, progress };
}

module.exports = { check, sleep, waitFor, cancelLongTask };
