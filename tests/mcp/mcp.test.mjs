// `git-locks mcp` through the official TypeScript SDK's client (Client +
// StdioClientTransport, @modelcontextprotocol/sdk as locked here), and
// through raw lines on its stdin for what the SDK never sends.
//
//   GITLOCKS_CLI=build/release/tools/cli/git-locks GITLOCKS_MCP_DEV_DIR=DIR node --test tests/mcp/mcp.test.mjs
// (DIR as filled by tests/mcp/dev-deps.sh DIR; ctest -R mcp/ does both.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const cli = process.env.GITLOCKS_CLI;
const dev = process.env.GITLOCKS_MCP_DEV_DIR;
assert.ok(cli && dev, 'GITLOCKS_CLI and GITLOCKS_MCP_DEV_DIR must be set (ctest sets them)');
const sdk = (file) => import(pathToFileURL(join(dev, 'node_modules/@modelcontextprotocol/sdk/dist/esm', file)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { McpError, ResourceUpdatedNotificationSchema } = await sdk('types.js');

const TOOLS = ['claim', 'extend', 'release', 'handoff', 'status', 'wait', 'fence', 'sem_acquire', 'sem_release', 'whoami',
               'log', 'verify'];

let root, repo, keyA, keyB, actorA, actorB;
const clients = [];

function git_locks(key, ...args) {
  return JSON.parse(execFileSync(cli, ['--repo', repo, '--key', key, '--json', ...args], { encoding: 'utf8' }));
}

async function connect(key) {
  const transport = new StdioClientTransport({
    command: cli,
    args: ['--repo', repo, '--key', key, 'mcp'],
    env: { ...process.env },
    stderr: 'inherit',
  });
  const client = new Client({ name: 'git-locks-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  clients.push(client);
  return client;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

before(() => {
  root = mkdtempSync(join(tmpdir(), 'gitlocks-mcp-'));
  repo = join(root, 'repo');
  keyA = join(root, 'a.key');
  keyB = join(root, 'b.key');
  execFileSync('git', ['init', '-q', repo]);
  git_locks(keyA, 'init');
  actorA = git_locks(keyA, 'whoami').actor;
  actorB = git_locks(keyB, 'whoami').actor;
  assert.notEqual(actorA, actorB);
});

after(async () => {
  for (const c of clients) await c.close();
  rmSync(root, { recursive: true, force: true });
});

test('two agents: claim, held-path refusal, wait until released, verify', async () => {
  const a = await connect(keyA);
  const b = await connect(keyB);
  assert.equal(a.getServerVersion().name, 'git-locks');

  const { tools } = await a.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object', t.name);
    assert.equal(t.outputSchema.type, 'object', t.name);
  }
  await b.listTools();  // the SDK checks structuredContent against outputSchema from here on

  const who = await b.callTool({ name: 'whoami', arguments: {} });
  assert.equal(who.isError, false);
  assert.equal(who.structuredContent.actor, actorB);

  const claimed = await a.callTool({ name: 'claim', arguments: { paths: ['src/a.c'], ttl: '10m', note: 'agent A' } });
  assert.equal(claimed.isError, false, JSON.stringify(claimed));
  const lease = claimed.structuredContent.leases[0];
  assert.equal(lease.resource, 'path:src/a.c');
  assert.equal(claimed.structuredContent.op, 'claim');
  assert.deepEqual(JSON.parse(claimed.content[0].text), claimed.structuredContent);

  const refused = await b.callTool({ name: 'claim', arguments: { paths: ['src/a.c'] } });
  assert.equal(refused.isError, true);
  assert.equal(refused.structuredContent.error, 'refused');
  assert.equal(refused.structuredContent.code, 'held-path');
  assert.equal(refused.structuredContent.reason, 'held-path');
  assert.equal(refused.structuredContent.op, 'claim');
  assert.equal(refused.structuredContent.holder, actorA);
  assert.equal(refused.structuredContent.expires_at_ms, lease.expires_at);
  assert.equal(refused.structuredContent.path, 'src/a.c');
  assert.equal(typeof refused.structuredContent.holder_name, 'string');

  const gaveUp = await b.callTool({ name: 'claim', arguments: { paths: ['src/a.c'], wait: '300ms' } });
  assert.equal(gaveUp.isError, true);
  assert.equal(gaveUp.structuredContent.code, 'wait-timeout');
  assert.equal(gaveUp.structuredContent.reason, 'wait-timeout');
  assert.equal(gaveUp.structuredContent.last_reason, 'held-path');
  assert.equal(gaveUp.structuredContent.holder, actorA);
  assert.match(refused.content[0].text, /held-path/);

  // B blocks until A releases; meanwhile both servers keep answering.
  let settled = false;
  const waiting = b.callTool({ name: 'claim', arguments: { paths: ['src/a.c'], wait: '20s' } }).finally(() => {
    settled = true;
  });
  await sleep(700);
  assert.equal(settled, false, 'claim with wait returned while the path was held');
  await b.ping();
  const status = await b.callTool({ name: 'status', arguments: { paths: ['src/a.c'] } });
  assert.equal(status.structuredContent.leases[0].holder, actorA);
  const released = await a.callTool({ name: 'release', arguments: { leases: ['src/a.c'] } });
  assert.equal(released.isError, false, JSON.stringify(released));
  const admitted = await waiting;
  assert.equal(admitted.isError, false, JSON.stringify(admitted));
  assert.equal(admitted.structuredContent.leases[0].resource, 'path:src/a.c');
  assert.equal(admitted.structuredContent.leases[0].generation, lease.generation + 1);

  const free = await a.callTool({ name: 'wait', arguments: { paths: ['free/z'], timeout: '5s' } });
  assert.equal(free.isError, false, JSON.stringify(free));
  assert.deepEqual([free.structuredContent.op, free.structuredContent.claimable], ['wait', true]);
  const timedOut = await a.callTool({ name: 'wait', arguments: { paths: ['src/a.c'], timeout: 300 } });
  assert.equal(timedOut.structuredContent.code, 'held-path');
  assert.equal(timedOut.structuredContent.holder, actorB);

  const fence = await a.callTool({
    name: 'fence',
    arguments: { resource: 'src/a.c', generation: admitted.structuredContent.leases[0].generation },
  });
  assert.equal(fence.isError, false, JSON.stringify(fence));
  assert.equal(fence.structuredContent.holder, actorB);
  const stale = await a.callTool({ name: 'fence', arguments: { resource: 'src/a.c', generation: lease.generation } });
  assert.equal(stale.isError, true);
  assert.equal(stale.structuredContent.code, 'stale-generation');

  const extended = await b.callTool({ name: 'extend', arguments: { leases: ['src/a.c'], ttl: 1800000 } });
  assert.equal(extended.isError, false, JSON.stringify(extended));
  const notMine = await a.callTool({ name: 'extend', arguments: { leases: [lease.lease] } });
  assert.equal(notMine.isError, true);

  // B hands src/a.c back to A: A holds it at the next generation; A cannot hand on what it does not hold.
  const handed = await b.callTool({ name: 'handoff', arguments: { leases: ['src/a.c'], to: actorA, to_name: 'agent-a' } });
  assert.equal(handed.isError, false, JSON.stringify(handed));
  assert.equal(handed.structuredContent.action, 'handoff');
  assert.equal(handed.structuredContent.leases[0].generation, admitted.structuredContent.leases[0].generation + 1);
  const nowA = await b.callTool({ name: 'status', arguments: { paths: ['src/a.c'] } });
  assert.deepEqual([nowA.structuredContent.leases[0].holder, nowA.structuredContent.leases[0].name], [actorA, 'agent-a']);
  const notHeld = await b.callTool({ name: 'handoff', arguments: { leases: ['src/a.c'], to: actorA } });
  assert.equal(notHeld.isError, true);
  assert.equal(notHeld.structuredContent.code, 'not-holder');

  const slot = await a.callTool({ name: 'sem_acquire', arguments: { name: 'builders', limit: 1 } });
  assert.equal(slot.isError, false, JSON.stringify(slot));
  const full = await b.callTool({ name: 'sem_acquire', arguments: { name: 'builders', limit: 1 } });
  assert.equal(full.structuredContent.code, 'full-semaphore');
  const back = await a.callTool({ name: 'sem_release', arguments: { name: 'builders' } });
  assert.equal(back.isError, false, JSON.stringify(back));

  const log = await b.callTool({ name: 'log', arguments: { limit: 3 } });
  assert.equal(log.isError, false, JSON.stringify(log));
  assert.deepEqual(log.structuredContent.commits.map((c) => c.command), ['sem-release', 'sem-acquire', 'handoff']);

  const verified = await b.callTool({ name: 'verify', arguments: { full: true } });
  assert.equal(verified.isError, false, JSON.stringify(verified));
  assert.equal(verified.structuredContent.ok, true);
  assert.equal(verified.structuredContent.invalid, 0);
  // init, claim, the ticket and its drop of the claim that gave up, the waiting claim's ticket, release,
  // the waiting claim (with its ticket's drop), extend, handoff, sem acquire and release
  assert.equal(verified.structuredContent.commits, 11);
  assert.equal(verified.structuredContent.verdicts.length, 11);
  assert.deepEqual(verified.structuredContent.verdicts.map((v) => v.command),
    ['init', 'claim', 'ticket', 'ticket-drop', 'ticket', 'release', 'claim', 'extend', 'handoff', 'sem-acquire',
      'sem-release']);
});

test('the status resource: listed, read, and updated for a subscriber as the store changes', async () => {
  const a = await connect(keyA);
  assert.deepEqual(a.getServerCapabilities().resources, { subscribe: true, listChanged: false });
  const { resources } = await a.listResources();
  assert.deepEqual(resources.map((r) => [r.uri, r.mimeType]), [['git-locks://status', 'application/json']]);
  const tip = () => execFileSync('git', ['-C', repo, 'rev-parse', 'refs/locks/state'], { encoding: 'utf8' }).trim();
  const read = await a.readResource({ uri: 'git-locks://status' });
  assert.equal(JSON.parse(read.contents[0].text).commit, tip());
  const updates = [];
  a.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updates.push([n.params.uri, tip()]));
  await a.subscribeResource({ uri: 'git-locks://status' });
  const before = tip();
  git_locks(keyB, 'claim', 'subscribed/x');
  for (let i = 0; i < 200 && updates.length === 0; ++i) await sleep(50);
  // One update for B's claim, sent once the ref had moved.
  assert.equal(updates.length, 1, JSON.stringify(updates));
  assert.equal(updates[0][0], 'git-locks://status');
  assert.notEqual(updates[0][1], before);
  const after = await a.readResource({ uri: 'git-locks://status' });
  assert.ok(JSON.parse(after.contents[0].text).leases.some((l) => l.path === 'subscribed/x' && l.holder === actorB));
  // Unsubscribed: B's release is not announced.
  await a.unsubscribeResource({ uri: 'git-locks://status' });
  git_locks(keyB, 'release', 'subscribed/x');
  await sleep(600);
  assert.equal(updates.length, 1, JSON.stringify(updates));
  // The claim tool's result names the intents of others its paths overlap (never a refusal).
  git_locks(keyB, 'claim', '--mode', 'intent', 'planned/');
  const near = await a.callTool({ name: 'claim', arguments: { paths: ['planned/x.c'], mode: 'exclusive' } });
  assert.equal(near.isError, false, JSON.stringify(near));
  assert.deepEqual(near.structuredContent.intents.map((i) => [i.holder, i.path]), [[actorB, 'planned/']]);
  await assert.rejects(a.readResource({ uri: 'git-locks://nothing' }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, -32002);
    return true;
  });
});

test('bad arguments are tool errors (usage); an unknown tool is -32602', async () => {
  const b = await connect(keyB);
  await b.listTools();
  for (const args of [{ paths: 42 }, { paths: [] }, { paths: ['x'], colour: 'red' }, { mode: 'shared' },
                      { paths: ['x'], mode: 'both' }, { paths: ['x'], ttl: true }]) {
    const r = await b.callTool({ name: 'claim', arguments: args });
    assert.equal(r.isError, true, JSON.stringify(args));
    assert.equal(r.structuredContent.error, 'usage', JSON.stringify(args));
    assert.equal(r.structuredContent.code, 'usage', JSON.stringify(args));
    assert.equal(r.structuredContent.reason, 'usage', JSON.stringify(args));
  }
  const unknown = await b.callTool({ name: 'claim', arguments: { paths: ['x'], colour: 'red' } });
  assert.equal(unknown.structuredContent.detail, "arguments: unknown property 'colour'");
  // What the schema lets through, the CLI checks as it always does.
  const badPath = await b.callTool({ name: 'claim', arguments: { paths: ['../x'] } });
  assert.equal(badPath.isError, true);
  assert.equal(badPath.structuredContent.code, 'bad-path');
  const badTtl = await b.callTool({ name: 'claim', arguments: { paths: ['x'], ttl: '5 parsecs' } });
  assert.equal(badTtl.structuredContent.code, 'usage');

  await assert.rejects(b.callTool({ name: 'no_such_tool', arguments: {} }), (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, -32602);
    return true;
  });
});

test('an operational failure is a tool error with its store-read code', async () => {
  const nowhere = join(root, 'not-a-repository');
  mkdirSync(nowhere);
  const transport = new StdioClientTransport({ command: cli, args: ['--repo', nowhere, '--key', keyA, 'mcp'],
                                               env: { ...process.env }, stderr: 'inherit' });
  const c = new Client({ name: 'git-locks-mcp-test', version: '1.0.0' });
  await c.connect(transport);
  clients.push(c);
  await c.listTools();
  for (const name of ['status', 'verify']) {
    const r = await c.callTool({ name, arguments: {} });
    assert.equal(r.isError, true, name);
    assert.equal(r.structuredContent.error, 'store-read', name);
    assert.equal(r.structuredContent.code, 'store-read', name);
    assert.equal(r.structuredContent.op, name);
  }
  const claim = await c.callTool({ name: 'claim', arguments: { paths: ['a'] } });
  assert.equal(claim.structuredContent.code, 'store-read');
  // The status resource cannot be read or watched there: -32603 with the command's error.
  for (const call of [() => c.readResource({ uri: 'git-locks://status' }),
                      () => c.subscribeResource({ uri: 'git-locks://status' })]) {
    await assert.rejects(call(), (e) => {
      assert.ok(e instanceof McpError, String(e));
      assert.equal(e.code, -32603);
      assert.match(e.message, /store-read/);
      return true;
    });
  }
});

// A raw session: writes `lines` (strings, sent as they are) and collects
// stdout until `count` messages came, then closes stdin; the server must
// exit 0 and every stdout line must be a JSON-RPC 2.0 message.
async function raw(key, lines, count, between = async () => {}) {
  const child = spawn(cli, ['--repo', repo, '--key', key, 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let buffer = '';
  const messages = [];
  let wake = () => {};
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => {
    buffer += d;
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      const m = JSON.parse(line);  // throws: not a protocol message
      assert.equal(m.jsonrpc, '2.0', line);
      messages.push(m);
      wake();
    }
  });
  const until = async (n) => {
    const deadline = Date.now() + 20000;
    while (messages.length < n) {
      assert.ok(Date.now() < deadline, `timed out waiting for message ${n}: ${JSON.stringify(messages)}`);
      await new Promise((r) => {
        wake = r;
        setTimeout(r, 200);
      });
    }
  };
  for (const l of lines) child.stdin.write(l + '\n');
  await between(child, until);
  await until(count);
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  child.stdin.end();
  assert.deepEqual(await exited, { code: 0, signal: null });
  assert.equal(buffer, '', 'stdout ends with a whole line');
  return messages;
}

const init = (id, version) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '0' } },
  });

test('garbage on stdin: JSON-RPC errors, and the server keeps serving', async () => {
  const m = await raw(keyB, [
    '{not json',
    JSON.stringify({ jsonrpc: '2.0', id: 'early', method: 'tools/list' }),
    JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }),
    init(1, '2025-06-18'),
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
    '[]',
    JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'no/such/method' }),
    JSON.stringify({ jsonrpc: '1.0', id: 4, method: 'ping' }),
    JSON.stringify({ jsonrpc: '2.0', id: null, method: 'ping' }),
    '42',
    init(5, '2025-06-18'),
    JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: { name: 'whoami', arguments: {} } }),
  ], 11);
  const byOrder = m.filter((x) => x.id !== 6);
  assert.deepEqual(byOrder[0], { jsonrpc: '2.0', id: null, error: byOrder[0].error });
  assert.equal(byOrder[0].error.code, -32700);
  assert.equal(byOrder[1].id, 'early');
  assert.equal(byOrder[1].error.code, -32600);  // not initialized
  assert.deepEqual(byOrder[2], { jsonrpc: '2.0', id: 'p', result: {} });
  assert.equal(byOrder[3].id, 1);
  assert.equal(byOrder[3].result.protocolVersion, '2025-06-18');
  assert.deepEqual(byOrder[3].result.capabilities, { tools: { listChanged: false }, resources: { subscribe: true, listChanged: false } });
  assert.equal(byOrder[3].result.serverInfo.name, 'git-locks');
  assert.deepEqual([byOrder[4].id, byOrder[4].error.code], [null, -32600]);  // a batch
  assert.deepEqual([byOrder[5].id, byOrder[5].error.code], [3, -32601]);
  assert.deepEqual([byOrder[6].id, byOrder[6].error.code], [4, -32600]);  // jsonrpc 1.0
  assert.deepEqual([byOrder[7].id, byOrder[7].error.code], [null, -32600]);  // id null
  assert.deepEqual([byOrder[8].id, byOrder[8].error.code], [null, -32600]);  // not an object
  assert.deepEqual([byOrder[9].id, byOrder[9].error.code], [5, -32600]);  // initialize twice
  const who = m.find((x) => x.id === 6);
  assert.equal(who.result.structuredContent.actor, actorB);
});

test('version negotiation: ours when supported, else the latest', async () => {
  for (const [asked, answered] of [['2025-11-25', '2025-11-25'], ['2025-06-18', '2025-06-18'],
                                   ['2024-01-01', '2025-11-25']]) {
    const [m] = await raw(keyA, [init('v', asked)], 1);
    assert.equal(m.result.protocolVersion, answered, asked);
  }
  const [bad] = await raw(keyA, [JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} })], 1);
  assert.equal(bad.error.code, -32602);
});

test('cancelling a waiting claim kills it: no response for it, the server still answers', async () => {
  git_locks(keyA, 'claim', 'held/x');
  const call = JSON.stringify({
    jsonrpc: '2.0',
    id: 'w',
    method: 'tools/call',
    params: { name: 'claim', arguments: { paths: ['held/x'], wait: '20s' } },
  });
  const send = (child, msg) => child.stdin.write(JSON.stringify(msg) + '\n');
  const m = await raw(keyB, [init(1, '2025-11-25'), call], 2, async (child, until) => {
    await until(1);
    await sleep(500);
    send(child, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w', reason: 'test' } });
    await sleep(300);
    // Were the waiting claim still running, it would claim held/x now.
    git_locks(keyA, 'release', 'held/x');
    await sleep(2500);
    send(child, { jsonrpc: '2.0', id: 'after', method: 'ping' });
  });
  assert.deepEqual(m.map((x) => x.id), [1, 'after']);
  const st = git_locks(keyA, 'status', 'held/x');
  assert.deepEqual(st.leases, []);
});

test('SIGTERM to the server terminates a waiting claim too', async () => {
  git_locks(keyA, 'claim', 'held/y');
  const child = spawn(cli, ['--repo', repo, '--key', keyB, 'mcp'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.setEncoding('utf8');
  child.stdout.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })));
  child.stdin.write(init(1, '2025-11-25') + '\n');
  child.stdin.write(JSON.stringify({
    jsonrpc: '2.0',
    id: 2,
    method: 'tools/call',
    params: { name: 'claim', arguments: { paths: ['held/y'], wait: '20s' } },
  }) + '\n');
  await sleep(800);
  child.kill('SIGTERM');
  assert.deepEqual(await exited, { code: 128 + 15, signal: null });
  git_locks(keyA, 'release', 'held/y');
  await sleep(2500);  // a waiting claim left behind would have claimed held/y by now
  assert.deepEqual(git_locks(keyA, 'status', 'held/y').leases, []);
  assert.deepEqual(out.trim().split('\n').map((l) => JSON.parse(l).id), [1]);
});
