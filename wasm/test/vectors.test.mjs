// Runs every file under tests/vectors/ through the JS API, with the native
// runners' semantics (tests/unit/vectors_expr_test.cpp,
// vectors_plan_test.cpp, vectors_key_test.cpp; formats in
// tests/vectors/README.md): intervals, error codes and messages, actions,
// generations, state tree ids and actors must equal the recorded ones
// exactly. (Sealing vectors run in the WASM doctest build.)
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { loadPackage, vectorsDir } from './support.mjs';

const gl = loadPackage();
await gl.init();

function files(kind) {
  const dir = path.join(vectorsDir, kind);
  return fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort().map((f) => path.join(dir, f));
}

const sha256hex = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

// An actor's key, derived as the native fixture does: Ed25519 seed =
// sha256("test-actor:" + NAME). Computed with Node's crypto, independently of
// the module under test.
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex');
function actorHex(name) {
  const seed = crypto.createHash('sha256').update('test-actor:' + name, 'utf8').digest();
  const key = crypto.createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' });
  const jwk = crypto.createPublicKey(key).export({ format: 'jwk' });
  return Buffer.from(jwk.x, 'base64url').toString('hex');
}

// Outcome of a call as the native runner compares it: a value, or an error.
function attempt(fn) {
  try {
    return { value: fn() };
  } catch (e) {
    if (!(e instanceof gl.GitLocksError)) throw e;
    return { error: e };
  }
}

function checkError(outcome, expect, where) {
  assert.ok(outcome.error, `${where}: expected error ${expect.error}, got ${JSON.stringify(outcome.value)}`);
  assert.equal(outcome.error.code, expect.error, `${where}: ${outcome.error.message}`);
  if (expect.message !== undefined)
    assert.ok(outcome.error.message.includes(expect.message), `${where}: "${outcome.error.message}" lacks "${expect.message}"`);
}

let exprCases = 0;
for (const file of files('expr')) {
  test(`expr vectors: ${path.basename(file)}`, () => {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(doc.kind, 'expr');
    for (const c of doc.cases) {
      exprCases++;
      const where = `${path.basename(file)}: ${c.name}`;
      if ('action' in c) {
        const r = attempt(() => gl.preflightAction(c.action));
        if (c.expect.error) checkError(r, c.expect, where);
        else assert.equal(r.value, true, `${where}: ${r.error && r.error.message}`);
        continue;
      }
      const r = attempt(() => gl.deriveInterval(c.guards, c.body ?? {}));
      if (c.expect.error) checkError(r, c.expect, where);
      else assert.deepEqual(r.value, c.expect.interval, `${where}: ${r.error && `${r.error.code}: ${r.error.message}`}`);
    }
  });
}

// "$K.J" names the J-th lease created by step K of the same case.
function resolveRefs(v, stepLeases) {
  if (typeof v === 'string' && v.length > 1 && v[0] === '$') {
    const [k, j] = v.slice(1).split('.').map(Number);
    return stepLeases[k][j].lease;
  }
  if (Array.isArray(v)) return v.map((e) => resolveRefs(e, stepLeases));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, resolveRefs(e, stepLeases)]));
  return v;
}

function runPlanCase(c) {
  const policy = { ...defaultPolicy(), ...(c.policy || {}) };
  const init = gl.plan(null, null, { init: policy }, { actor: actorHex('owner'), instance: sha256hex(`${c.name}:init`), now: 0 });
  assert.equal(init.state.tree, c.init_state, 'init state');
  let state = init.state;
  let lastT = 0; // build_candidate admits at T = max(now, T of the tip)
  const stepLeases = [];
  c.steps.forEach((s, i) => {
    const where = `step ${i}`;
    const body = { created_at: s.now, name: s.actor, ops: resolveRefs(s.ops, stepLeases) };
    const ctx = { actor: actorHex(s.actor), instance: sha256hex(`${c.name}:${i}`), now: s.now };
    let r = attempt(() => gl.plan({ records: state.records }, state.policy, body, ctx));
    const t = Math.max(s.now, lastT);
    if (r.value && !(r.value.interval[0] <= t && t <= r.value.interval[1]))
      r = { error: new gl.GitLocksError('guard-window', `admission time ${t} is outside the guard interval`) };
    if (r.error) {
      stepLeases.push([]);
      assert.ok(s.expect.error, `${where}: unexpected ${r.error.code}: ${r.error.message}`);
      assert.equal(r.error.code, s.expect.error, `${where}: ${r.error.message}`);
      return;
    }
    assert.ok(!s.expect.error, `${where}: expected ${s.expect.error}, got success`);
    const out = r.value;
    stepLeases.push(out.leases);
    assert.equal(out.action, s.expect.action, `${where}: action`);
    assert.deepEqual(out.interval, s.expect.interval, `${where}: interval`);
    for (const [res, gen] of Object.entries(s.expect.generations || {})) {
      const rec = out.state.records.find((x) => `${x.kind}:${x.name}` === res);
      assert.ok(rec && rec.generation === gen, `${where}: generation of ${res} is not ${gen}`);
    }
    assert.equal(out.state.tree, s.expect.state, `${where}: state tree`);
    state = out.state;
    lastT = t;
  });
}

// default_policy("aa…a", owner) of lib/src/policy.cpp.
function defaultPolicy() {
  return {
    format: 'gitlocks-policy-v1',
    store: 'a'.repeat(64),
    owner: actorHex('owner'),
    min_ttl_ms: 1000,
    max_ttl_ms: 3600000,
    families: [],
  };
}

let planCases = 0;
for (const file of files('plan')) {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const c of doc.cases) {
    planCases++;
    test(`plan vectors: ${path.basename(file)} / ${c.name}`, () => runPlanCase(c));
  }
}

// Actor keys, through keyActor as a string and as bytes (the page passes the
// bytes of a dropped key file).
let keyCases = 0;
for (const file of files('key')) {
  test(`key vectors: ${path.basename(file)}`, () => {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(doc.kind, 'key');
    for (const c of doc.cases) {
      keyCases++;
      const where = `${path.basename(file)}: ${c.name}`;
      for (const input of [c.text, new TextEncoder().encode(c.text)]) {
        const bytesCopy = typeof input === 'string' ? null : input.slice();
        const outcome = attempt(() => gl.keyActor(input));
        if (bytesCopy) assert.deepEqual(input, bytesCopy, `${where}: the caller's bytes were changed`);
        if ('actor' in c.expect) {
          assert.ok(!outcome.error, `${where}: ${outcome.error && outcome.error.message}`);
          assert.equal(outcome.value, c.expect.actor, where);
        } else {
          checkError(outcome, c.expect, where);
          if (c.secret) assert.ok(!outcome.error.message.includes(c.secret), `${where}: the message quotes the key`);
        }
      }
    }
  });
}

// NFC, case folding and path forms, through unicodeForms and normalizePath.
let unicodeCases = 0;
for (const file of files('unicode')) {
  test(`unicode vectors: ${path.basename(file)}`, () => {
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    assert.equal(doc.kind, 'unicode');
    for (const c of doc.cases) {
      unicodeCases++;
      const where = `${path.basename(file)}: ${c.name}`;
      const forms = gl.unicodeForms(c.input);
      assert.equal(forms.unicodeVersion, doc.unicode_version, where);
      assert.equal(forms.nfc, c.expect.nfc, `${where}: nfc`);
      assert.equal(forms.fold, c.expect.fold, `${where}: fold`);
      for (const [key, caseInsensitive] of [['path', false], ['path_ci', true]]) {
        const want = c.expect[key];
        const outcome = attempt(() => gl.normalizePath(c.input, { caseInsensitive }));
        if (typeof want === 'string') {
          assert.ok(!outcome.error, `${where}: ${key}: ${outcome.error && outcome.error.message}`);
          assert.equal(outcome.value, want, `${where}: ${key}`);
        } else {
          assert.ok(outcome.error, `${where}: ${key}: expected ${want.error}`);
          assert.equal(outcome.error.code, want.error, `${where}: ${key}`);
        }
      }
    }
  });
}

test('vector corpus is not silently empty', () => {
  assert.ok(exprCases >= 70, `only ${exprCases} expression cases`);
  assert.ok(planCases >= 40, `only ${planCases} planner cases`);
  assert.ok(keyCases >= 15, `only ${keyCases} key cases`);
  assert.ok(unicodeCases >= 15, `only ${unicodeCases} unicode cases`);
});
