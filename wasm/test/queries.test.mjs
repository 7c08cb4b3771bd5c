// One core for every query: status, fence and the lease timeline answered
// by the WASM module (Store.status, Store.fence, Store.timeline) equal the
// native answers on the shared corpus — `git-locks status --json` and
// `git-locks fence --json` of the CLI, and gitlocks-native-replay
// --timeline — byte for byte, on plain, attested and tampered stores.
// (browser.test.mjs asks the same corpus in Chromium.)
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import {
  cliAnswer, comparableError, findCli, loadPackage, makeStore, nativeTimeline, queryCorpus, wasmAnswer,
} from './support.mjs';

const gl = loadPackage();
await gl.init();
const cli = findCli();

function checkQueries(store, options = {}) {
  assert.ok(cli, 'the git-locks CLI of the release preset is built (tests/run.sh builds it first)');
  const { now, queries, expected } = queryCorpus(cli, store, options);
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    let live = 0;
    let refused = 0;
    queries.forEach((q, i) => {
      const got = wasmAnswer(s, now, q, options);
      const want = comparableError(expected[i]);
      assert.equal(JSON.stringify(got.ok ?? null), JSON.stringify(want.ok ?? null), `${JSON.stringify(q)}: answers differ`);
      assert.deepEqual(got.error ?? null, want.error ?? null, `${JSON.stringify(q)}: errors differ`);
      if (q.kind === 'fence' && got.ok) live++;
      if (q.kind === 'fence' && got.error) refused++;
    });
    // The corpus asks both kinds of fence question.
    assert.ok(live > 0, 'some fence query is live');
    assert.ok(refused >= 2, 'some fence queries are refused');
    // The timeline: the core's, natively and in WASM, byte for byte.
    const timeline = s.timeline(options.allowTestClock ? { allowTestClock: true } : {});
    assert.equal(JSON.stringify(timeline) + '\n', nativeTimeline(store.repo, options.allowTestClock ? ['--allow-test-clock'] : []));
    return timeline;
  } finally {
    s.delete();
  }
}

test('a plain history: status, fence and timeline equal the native answers', () => {
  const store = makeStore('queries-plain', ['--commits', '120', '--seed', '7']);
  const t = checkQueries(store);
  // Every way a lease ends occurs in this history, as the generator makes it.
  const kinds = new Set(t.leases.map((l) => l.end_kind));
  for (const k of ['release', 'expired', 'reclaim', null]) assert.ok(kinds.has(k), String(k));
  assert.equal(t.transitions.length, 120);
});

test('an attested history: the same answers under guard time', () => {
  const store = makeStore('queries-attested', ['--commits', '60', '--seed', '3', '--attested']);
  checkQueries(store, { allowTestClock: true });
});

test('a tampered history: status and fence refuse it as invalid-history on both sides', () => {
  const store = makeStore('queries-tampered', ['--commits', '50', '--seed', '11', '--tamper', '25:state-byte']);
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    assert.throws(() => s.status(undefined, { now: 1 }), (e) => e.code === 'invalid-history');
    assert.throws(() => s.fence('x', 1, { now: 1 }), (e) => e.code === 'invalid-history');
    // The timeline still shows the history, with the invalid verdict in it.
    const t = s.timeline();
    assert.equal(t.summary.invalid > 0, true);
    assert.equal(JSON.stringify(t) + '\n', nativeTimeline(store.repo));
    // readState and readChanges read a commit through its verified view:
    // the last valid commit reads, the tampered one and those built on it
    // do not, in whichever order they are asked for.
    const verdicts = s.replay().verdicts;
    const k = verdicts.findIndex((v) => !v.ok);
    assert.ok(k > 1, `first invalid verdict at ${k}`);
    const refusedAt = (e, v) =>
      e.code === 'invalid-history' && e.fields.commit === verdicts[k].commit &&
      e.fields.verdict === verdicts[k].reason && e.fields.last_valid === verdicts[k - 1].commit && Boolean(v);
    for (const i of [k, verdicts.length - 1, k]) {
      assert.throws(() => s.readState(verdicts[i].commit), (e) => refusedAt(e, 'readState'));
      assert.throws(() => s.readChanges(verdicts[i].commit), (e) => refusedAt(e, 'readChanges'));
    }
    assert.equal(s.readState(verdicts[k - 1].commit).commit, verdicts[k - 1].commit);
    assert.equal(s.readChanges(verdicts[k - 1].commit).commit, verdicts[k - 1].commit);
  } finally {
    s.delete();
  }
});

test('fence refuses bad input before reading the store', () => {
  const store = makeStore('queries-input', ['--commits', '10', '--seed', '5']);
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    assert.throws(() => s.fence('a/../b', 1, { now: 1 }), (e) => e.code === 'bad-path');
    assert.throws(() => s.fence('x', -1, { now: 1 }), (e) => e.code === 'usage');
    assert.throws(() => s.fence('x', 1.5, { now: 1 }), (e) => e.code === 'usage');
    assert.throws(() => s.status(undefined, { now: 1, paths: ['/abs'] }), (e) => e.code === 'bad-path');
    assert.throws(() => s.status(undefined, { now: 1.5 }), (e) => e.code === 'usage');
  } finally {
    s.delete();
  }
});

// Each error field has one type in every host (result.hpp, Field): a
// resource never claimed is at generation 0 (docs/CLI.md, fence), so a fence
// of its generation 1 is refused with the numbers 1 and 0 — numbers, not
// text, in the module as in the CLI's error line.
test('a refused fence carries its generations as numbers, as the CLI does', () => {
  const store = makeStore('queries-fields', ['--commits', '10', '--seed', '5']);
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    let caught;
    try {
      s.fence('never/claimed.txt', 1, { now: 1 });
    } catch (e) {
      caught = e;
    }
    assert.ok(caught instanceof gl.GitLocksError, 'fence of a generation that is not live throws');
    assert.equal(caught.code, 'stale-generation');
    assert.deepEqual(caught.fields, { resource: 'path:never/claimed.txt', generation: 1, current_generation: 0 });
    const native = cliAnswer(cli, store.repo, 1, ['fence', 'never/claimed.txt', '1']);
    assert.equal(native.status, 1);
    assert.equal(native.error.generation, 1);
    assert.equal(native.error.current_generation, 0);
  } finally {
    s.delete();
  }
});
