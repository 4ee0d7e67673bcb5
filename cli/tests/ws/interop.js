// Node `ws` client against `rpcwire serve --ws`: run by cli/tests/ws_interop.rs.
// usage: node interop.js URL EXAMPLES.json MAX_MESSAGE SEND_TIMEOUT_SECS   (NODE_PATH has ws)
// Prints one `ok: ...` line per check; any failure throws (non-zero exit).
'use strict';
const WebSocket = require('ws');
const fs = require('fs');
const assert = require('assert/strict');

const [URL, EXAMPLES, MAX, SEND_TIMEOUT] = [process.argv[2], process.argv[3], +process.argv[4], +process.argv[5]];
const WAIT = 10000;

function norm(v) {
  if (Array.isArray(v)) return v.map(norm).sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  return v;
}

// A connection with a queue of received messages and its close event.
function open(url = URL) {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 0 });
    const c = { ws, queue: [], waiters: [], closed: null, closeWaiters: [] };
    ws.on('message', (data, isBinary) => {
      const msg = JSON.parse(data.toString());
      const w = c.waiters.shift();
      if (w) w(msg); else c.queue.push(msg);
    });
    ws.on('close', (code, reason) => {
      c.closed = { code, reason: reason.toString() };
      c.closeWaiters.splice(0).forEach((w) => w(c.closed));
    });
    ws.on('error', () => {});
    ws.once('open', () => resolve(c));
    ws.once('unexpected-response', (_req, res) => reject(new Error('HTTP ' + res.statusCode)));
  });
}

function recv(c) {
  if (c.queue.length) return Promise.resolve(c.queue.shift());
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('no message within the wait')), WAIT);
    c.waiters.push((m) => { clearTimeout(t); resolve(m); });
  });
}

function closed(c) {
  if (c.closed) return Promise.resolve(c.closed);
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('not closed within the wait')), WAIT);
    c.closeWaiters.push((cl) => { clearTimeout(t); resolve(cl); });
  });
}

const req = (method, params, id) => JSON.stringify({ jsonrpc: '2.0', method, params, id });

async function specExamples() {
  const examples = JSON.parse(fs.readFileSync(EXAMPLES, 'utf8'));
  const c = await open();
  for (const [n, ex] of examples.entries()) {
    c.ws.send(ex.request);
    if (ex.response === null) {
      c.ws.send(req('subtract', [1, 1], `probe${n}`));
      assert.deepEqual(await recv(c), { jsonrpc: '2.0', result: 0, id: `probe${n}` }, ex.name);
    } else {
      assert.deepEqual(norm(await recv(c)), norm(JSON.parse(ex.response)), ex.name);
    }
  }
  c.ws.close();
  console.log(`ok: ${examples.length} specification examples`);
}

async function serverCallsClient() {
  const c = await open();
  c.ws.send(req('ask', { method: 'client_add', params: [2, 3] }, 10));
  const call = await recv(c);
  assert.equal(call.method, 'client_add');
  assert.deepEqual(call.params, [2, 3]);
  c.ws.send(JSON.stringify({ jsonrpc: '2.0', result: 5, id: call.id }));
  assert.deepEqual(await recv(c), { jsonrpc: '2.0', result: 5, id: 10 });
  c.ws.close();
  console.log('ok: the server called the client and got its answer');
}

async function notificationsToAll() {
  const conns = [await open(), await open(), await open()];
  await new Promise((r) => setTimeout(r, 200));
  conns[0].ws.send(req('broadcast', ['hello', 42], 20));
  for (const [i, c] of conns.entries()) {
    let news = false;
    let answer = i !== 0;
    while (!(news && answer)) {
      const m = await recv(c);
      if (m.method === 'news') { assert.deepEqual(m.params, ['hello', 42]); assert.equal(m.id, undefined); news = true; }
      else if (m.id === 20) { assert.ok(m.result >= 3); answer = true; }
    }
  }
  conns.forEach((c) => c.ws.close());
  console.log('ok: a server notification reached every connected client');
}

async function fragments() {
  const c = await open();
  c.ws.send('{"jsonrpc": "2.0", "method": "subt', { fin: false });
  c.ws.send('ract", "params": [10', { fin: false });
  c.ws.send(', 4], "id": 30}', { fin: true });
  assert.deepEqual(await recv(c), { jsonrpc: '2.0', result: 6, id: 30 });
  c.ws.close();
  console.log('ok: fragmented messages are reassembled');
}

async function limits() {
  const head = '{"jsonrpc":"2.0","method":"echo","params":["';
  const tail = '"],"id":40}';
  let c = await open();
  const fill = MAX - head.length - tail.length;
  c.ws.send(head + 'x'.repeat(fill) + tail);
  const got = await recv(c);
  assert.equal(got.id, 40);
  assert.equal(got.result[0].length, fill);
  c.ws.send(head + 'x'.repeat(fill + 1) + tail);
  assert.equal((await closed(c)).code, 1009);
  console.log('ok: a message one byte over the limit gets close 1009');
  c = await open();
  c.ws.send(Buffer.from([0x22, 0xff, 0xfe, 0x22]), { binary: false });
  assert.equal((await closed(c)).code, 1007);
  console.log('ok: invalid UTF-8 gets close 1007');
  c = await open();
  c.ws.send(Buffer.from('{}'), { binary: true });
  const cl = await closed(c);
  assert.equal(cl.code, 1003);
  assert.match(cl.reason, /text/);
  console.log(`ok: a binary message gets close 1003 (${cl.reason})`);
}

async function stalledReader() {
  const stuck = await open();
  stuck.ws._socket.pause(); // stop reading the socket
  const other = await open();
  const flooder = await open();
  const big = 'y'.repeat(MAX / 2);
  const start = Date.now();
  let closedAt = null;
  let calls = 0;
  for (let n = 1; Date.now() - start < (SEND_TIMEOUT + 8) * 1000; n++) {
    flooder.ws.send(req('broadcast', [big], 1000 + n));
    other.ws.send(req('subtract', [n, 1], n));
    for (;;) { const m = await recv(other); if (m.id === n) { assert.equal(m.result, n - 1); calls++; break; } }
    let m;
    for (;;) { m = await recv(flooder); if (m.id === 1000 + n) break; }
    if (m.result === 2) { closedAt = (Date.now() - start) / 1000; break; }
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(closedAt !== null, 'the connection that stopped reading was never closed');
  assert.ok(closedAt >= SEND_TIMEOUT * 0.9, `closed after ${closedAt}s, before the send timeout`);
  [stuck, other, flooder].forEach((c) => c.ws.terminate());
  console.log(`ok: a client that stopped reading was closed after ${closedAt}s (send timeout ${SEND_TIMEOUT}s) while another got ${calls} answers`);
}

(async () => {
  await specExamples();
  await serverCallsClient();
  await notificationsToAll();
  await fragments();
  await limits();
  await stalledReader();
  process.exit(0);
})().catch((e) => { console.error(e); process.exit(1); });
