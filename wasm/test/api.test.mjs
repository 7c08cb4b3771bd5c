// The JS API itself: loading once, typed errors with the core's codes, the
// planner's JSON contract, packet and attestation checks, caller-owned store
// handles, progress callbacks, and the ESM entry sharing the CJS instance.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { genHistory, gitShow, loadPackage, makeStore, packageDir, run, tempDir } from './support.mjs';

const gl = loadPackage();

test('before init every call is a usage error; init loads once', async () => {
  assert.throws(() => gl.version(), (e) => e instanceof gl.GitLocksError && e.code === 'usage');
  const p1 = gl.init();
  const p2 = gl.init();
  assert.equal(p1, p2);
  const api = await p1;
  assert.equal(api.version, gl.version);
  assert.equal(gl.version().version, JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'))).version);
});

test('the ESM entry is the same instance as the CommonJS one', async () => {
  const esm = await import(path.join(packageDir, 'index.mjs'));
  assert.equal(esm.default, gl);
  assert.equal(esm.deriveInterval, gl.deriveInterval);
  assert.equal(esm.GitLocksError, gl.GitLocksError);
});

test('errors are GitLocksError with the core errc name and message', async () => {
  await gl.init();
  const guard = { op: 'lte', left: { from: 'time' }, right: { from: 'body', path: ['e'] } };
  assert.deepEqual(gl.deriveInterval([guard], { e: 500 }), [0, 500]);
  const cases = [
    [() => gl.deriveInterval([guard], { e: 1.5 }), 'bad-json'],
    [() => gl.deriveInterval([{ op: 'lte', left: { from: 'time' } }], {}), 'bad-expression'],
    [() => gl.deriveInterval([{ op: 'lt', left: { from: 'time' }, right: { from: 'literal', value: 0 } }], {}), 'empty-interval'],
    [() => gl.deriveInterval([{ op: 'or', args: [guard] }], { e: 1 }), 'unsupported-expression'],
    [() => gl.deriveInterval([guard], { e: 2n }), 'bad-json'],
    [() => gl.verifyPacket('{"packet":{}}'), 'bad-json'],
    [() => gl.openStore(new Uint8Array([1, 2, 3])), 'unknown-format'],
    [() => gl.openStore('# v2 git bundle\n-' + 'a'.repeat(40) + ' x\n\nPACK'), 'store-read'],
    [() => gl.openStore(42), 'usage'],
  ];
  for (const [fn, code] of cases) {
    assert.throws(fn, (e) => {
      assert.ok(e instanceof gl.GitLocksError, String(e));
      assert.ok(e instanceof Error);
      assert.equal(e.name, 'GitLocksError');
      assert.equal(e.code, code, e.message);
      assert.ok(e.message.length > 0);
      return true;
    });
  }
});

const sha = (s) => crypto.createHash('sha256').update(s).digest('hex');
const owner = 'ab'.repeat(32);
const alice = 'cd'.repeat(32);
const bob = 'ef'.repeat(32);

test('plan: create, claim, conflict, and chaining through the returned state', async () => {
  await gl.init();
  const policy = { format: 'gitlocks-policy-v1', store: 'a'.repeat(64), owner, min_ttl_ms: 1000, max_ttl_ms: 3600000, families: [] };
  const created = gl.plan(null, null, { init: policy }, { actor: owner, instance: sha('i0') });
  assert.equal(created.action, 'init');
  assert.deepEqual(created.state.records, []);
  assert.match(created.state.tree, /^[0-9a-f]{40}$/);
  const now = 1_700_000_000_000;
  const body = { created_at: now, name: 'alice', ops: [{ op: 'claim', path: 'src/a.c', mode: 'exclusive', expires_at: now + 60_000 }] };
  const claimed = gl.plan({ records: created.state.records }, created.state.policy, body, { actor: alice, instance: sha('i1'), now });
  assert.equal(claimed.action, 'claim');
  assert.deepEqual(claimed.interval, [now + 60_000 - 3_600_000, now + 59_000]);
  assert.equal(claimed.leases.length, 1);
  assert.equal(claimed.leases[0].resource, 'path:src/a.c');
  assert.ok(claimed.state.records.some((r) => r.kind === 'path' && r.name === 'src/a.c'));
  // Replay mode (no now) on the completed body gives the same successor.
  const again = gl.plan({ records: created.state.records }, created.state.policy, claimed.body, { actor: alice, instance: sha('i1') });
  assert.equal(again.state.tree, claimed.state.tree);
  // Bob's claim of a path below is refused while alice's lease is live.
  const bobBody = { created_at: now + 1, name: 'bob', ops: [{ op: 'claim', path: 'src/', mode: 'exclusive', expires_at: now + 60_000 }] };
  assert.throws(() => gl.plan({ records: claimed.state.records }, claimed.state.policy, bobBody, { actor: bob, instance: sha('i2'), now: now + 1 }),
    (e) => e.code === 'held-path');
  // Contract errors.
  assert.throws(() => gl.plan({ records: [{ kind: 'path' }] }, policy, body, { actor: alice, instance: sha('i3'), now }), (e) => e.code === 'bad-json');
  assert.throws(() => gl.plan({ rows: [] }, policy, body, { actor: alice, instance: sha('i3') }), (e) => e.code === 'bad-json' || e.code === 'usage');
  assert.throws(() => gl.plan({ records: [] }, policy, body, { actor: alice }), (e) => e.code === 'bad-json');
  assert.throws(() => gl.plan({ records: [] }, { format: 'x' }, body, { actor: alice, instance: sha('i3') }), (e) => e.code === 'unknown-format');
  assert.throws(() => gl.plan({ records: [] }, policy, { ...body, ops: [{ op: 'claim', path: '../x', mode: 'exclusive', expires_at: now + 5000 }] },
    { actor: alice, instance: sha('i3'), now }), (e) => e.code === 'bad-path');
});

test('verifyPacket and verifyAttestation on stored material of a real attested store', async () => {
  await gl.init();
  const store = makeStore('api-attested', ['--commits', '8', '--seed', '2', '--attested']);
  const packetBytes = gitShow(store.repo, `${store.tip}:txn/packet.json`);
  const attBytes = gitShow(store.repo, `${store.tip}:txn/attestation.json`);
  const opened = gl.verifyPacket(packetBytes);
  assert.equal(opened.digest, crypto.createHash('sha256').update(packetBytes).digest('hex'));
  assert.equal(opened.packet.format, 'gitlocks-packet-v1');
  assert.deepEqual(gl.verifyPacket(packetBytes.toString('utf8')), opened);
  assert.deepEqual(gl.verifyPacket(JSON.parse(packetBytes.toString('utf8'))), opened); // re-encoded canonically
  const text = packetBytes.toString('utf8');
  assert.throws(() => gl.verifyPacket(' ' + text), (e) => e.code === 'non-canonical');
  const doc = JSON.parse(text);
  doc.packet.epoch += 1;
  assert.throws(() => gl.verifyPacket(doc), (e) => e.code === 'bad-signature');

  const s = gl.openStore(fs.readFileSync(store.bundle));
  const pins = s.readState(store.tip).policy.guard_time;
  s.delete();
  const good = { audience: pins.audience, serviceKey: pins.service_key };
  const v = gl.verifyAttestation(attBytes, packetBytes, good);
  assert.equal(typeof v.admitted_at_ms, 'number');
  assert.equal(v.attestation.admitted_at_ms, v.admitted_at_ms);
  assert.throws(() => gl.verifyAttestation(attBytes, packetBytes, { ...good, audience: 'elsewhere' }), (e) => e.code === 'invalid');
  assert.throws(() => gl.verifyAttestation(attBytes, packetBytes, { ...good, serviceKey: '0'.repeat(64) }), (e) => e.code === 'invalid');
  const other = gitShow(store.repo, `${store.tip}~1:txn/packet.json`);
  assert.throws(() => gl.verifyAttestation(attBytes, other, good), (e) => e.code === 'invalid');
});

test('stores are caller-owned: delete() frees, use after delete is a usage error', async () => {
  await gl.init();
  const store = makeStore('api-store', ['--commits', '12', '--seed', '4']);
  const bytes = fs.readFileSync(store.bundle);
  const s = gl.openStore(bytes);
  assert.deepEqual(s.refs, { 'refs/locks/state': store.tip });
  assert.equal(s.replay().summary.commits, 12);
  assert.equal(s.replay({ from: s.replay().verdicts[5].commit }).summary.commits, 6);
  const snap = s.readState(store.tip);
  assert.equal(snap.commit, store.tip);
  assert.equal(snap.policy.format, 'gitlocks-policy-v1');
  s.delete();
  s.delete(); // idempotent
  assert.throws(() => s.replay(), (e) => e.code === 'usage');
  // Opening and dropping many stores does not exhaust the module.
  for (let i = 0; i < 30; i++) gl.openStore(bytes).delete();
  assert.equal(gl.replay(bytes).summary.commits, 12);
});

test('replay: progress callbacks, a throwing callback, and a bare packfile with a tip', async () => {
  await gl.init();
  const store = makeStore('api-progress', ['--commits', '20', '--seed', '9']);
  const bytes = fs.readFileSync(store.bundle);
  const seen = [];
  const r = gl.replay(bytes, { onProgress: (p) => seen.push(p) });
  assert.equal(seen.length, 20);
  assert.deepEqual(seen.at(-1), { done: 20, total: 20 });
  assert.ok(seen.every((p, i) => p.done === i + 1));
  const boom = new Error('stop');
  assert.throws(() => gl.replay(bytes, { onProgress: () => { throw boom; } }), (e) => e === boom);
  assert.deepEqual(gl.replay(bytes), r); // the module is still sound
  const dir = tempDir('bare');
  const pack = path.join(dir, 'x.pack');
  const tip = run(genHistory, ['--commits', '5', '--seed', '9', '--pack', pack], { stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  assert.throws(() => gl.replay(fs.readFileSync(pack)), (e) => e.code === 'store-read' && /tip/.test(e.message));
  assert.equal(gl.replay(fs.readFileSync(pack), { tip }).summary.invalid, 0);
  assert.throws(() => gl.replay(bytes, { tip: 'f'.repeat(40) }), (e) => e.code === 'store-read');
});

test('openBlob reads a bundle in slices: the same store as open, errors with the same codes', async () => {
  await gl.init();
  // 700 commits: a bundle of about 1.1 MB, so more than one 1 MiB slice.
  const store = makeStore('api-blob', ['--commits', '700', '--seed', '12']);
  const bytes = fs.readFileSync(store.bundle);
  assert.ok(bytes.length > 1 << 20, `bundle of ${bytes.length} bytes`);
  const whole = gl.Store.open(bytes);
  const seen = [];
  const sliced = await gl.Store.openBlob(new Blob([bytes]), { onProgress: (p) => seen.push(p) });
  try {
    assert.deepEqual(sliced.refs, { 'refs/locks/state': store.tip });
    assert.deepEqual(sliced.refs, whole.refs);
    assert.deepEqual(sliced.replay(), whole.replay());
    assert.equal(sliced.replay().summary.commits, 700);
    assert.deepEqual(seen.map((p) => p.done), [1 << 20, bytes.length]);
    assert.ok(seen.every((p) => p.total === bytes.length));
  } finally {
    whole.delete();
    sliced.delete();
  }
  // The same refusals as open(), and nothing but a Blob-like is taken.
  const code = async (b) => gl.Store.openBlob(new Blob([b])).then(() => 'ok', (e) => e.code);
  assert.equal(await code(Buffer.from('hello world, not a bundle')), 'unknown-format');
  assert.equal(await code(bytes.subarray(0, bytes.length - 100)), 'store-read');
  assert.equal(await code(Buffer.alloc(0)), 'unknown-format');
  await assert.rejects(gl.Store.openBlob(bytes), (e) => e.code === 'usage');
  const flipped = Buffer.from(bytes);
  flipped[flipped.length - 1] ^= 1; // the pack's trailing checksum
  assert.equal(await code(flipped), 'store-read');
  assert.throws(() => gl.Store.open(flipped), (e) => e.code === 'store-read');
});

test('readChanges lists exactly the records that differ between a commit and its parent', async () => {
  await gl.init();
  const store = makeStore('api-changes', ['--commits', '150', '--seed', '13']);
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    const { verdicts } = s.replay();
    assert.equal(verdicts.length, 150);
    // The independent derivation: both whole states, compared as text.
    const texts = (records) => new Set(records.map((r) => JSON.stringify(r)));
    let previous = new Set();
    let changed = 0;
    for (const v of verdicts) {
      const state = texts(s.readState(v.commit).records);
      const c = s.readChanges(v.commit);
      assert.equal(c.commit, v.commit);
      const want = (a, b) => [...a].filter((x) => !b.has(x)).sort();
      assert.deepEqual(c.before.map((r) => JSON.stringify(r)).sort(), want(previous, state), v.commit);
      assert.deepEqual(c.after.map((r) => JSON.stringify(r)).sort(), want(state, previous), v.commit);
      changed += c.before.length + c.after.length;
      previous = state;
    }
    assert.ok(changed > 150, `changed records: ${changed}`);
    assert.throws(() => s.readChanges('f'.repeat(40)), (e) => e.code === 'store-read');
  } finally {
    s.delete();
  }
});
