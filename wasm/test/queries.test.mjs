// One core for every query: status, fence and the lease timeline answered
// by the WASM module (Store.status, Store.fence, Store.timeline) equal the
// native answers on the shared corpus — `git-locks status --json` and
// `git-locks fence --json` of the CLI, and gitlocks-native-replay
// --timeline — byte for byte, on plain, attested and tampered stores, and
// on a store where waiters took tickets in the queue with the real CLI.
// (browser.test.mjs asks the same corpus in Chromium.)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  cliAnswer, comparableError, findCli, loadPackage, makeStore, nativeTimeline, queryCorpus, run, tempDir, wasmAnswer,
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

// A store whose queue the real CLI filled (docs/CLI.md "Waiting"), on fixed
// clocks: alice holds a.c; carol waits for it (`claim --wait`, in the
// background), is queued, and is admitted when alice releases at carol's
// time; bob waits 1 s for a.c (carol's now) and gives up; alice fills
// semaphore ci and gus waits 1 s for a slot (`run --sem`) and gives up.
async function queueStore() {
  const dir = tempDir('queries-queue');
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  let now = 1_700_000_000_000;
  const env = (who, at) => ({ ...process.env, GIT_LOCKS_KEY: path.join(dir, `${who}.key`), GIT_LOCKS_NOW_MS: String(at),
    GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'user.name', GIT_CONFIG_VALUE_0: who });
  const gl = (who, at, ...args) => run(cli, ['--repo', repo, '--json', ...args], { env: env(who, at), stdio: ['ignore', 'pipe', 'pipe'] });
  // A waiter that gives up: exit 1, wait-timeout.
  const givesUp = (who, at, ...args) => {
    assert.throws(() => gl(who, at, ...args), (e) => e.status === 1 &&
      JSON.parse(e.stderr.trim().split('\n').pop()).code === 'wait-timeout');
  };
  gl('alice', now += 1000, 'init');
  gl('alice', now += 1000, 'claim', 'a.c');
  const tCarol = now += 1000;
  const carol = spawn(cli, ['--repo', repo, '--json', 'claim', '--wait=60s', 'a.c'],
    { env: env('carol', tCarol), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  carol.stdout.on('data', (c) => { out += c; });
  const carolDone = new Promise((resolve) => carol.on('close', resolve));
  for (const deadline = Date.now() + 60_000; ;) {
    if (JSON.parse(gl('carol', tCarol, 'status')).queue.some((k) => k.holder_name === 'carol')) break;
    assert.ok(Date.now() < deadline && carol.exitCode === null, 'carol took no ticket');
    await new Promise((r) => setTimeout(r, 50));
  }
  gl('alice', tCarol, 'release', 'a.c');
  assert.equal(await carolDone, 0);
  assert.equal(JSON.parse(out).action, 'claim');
  const tBob = now += 1000;
  givesUp('bob', tBob, 'claim', '--wait=1s', 'a.c');
  gl('alice', now += 1000, 'sem', 'acquire', 'ci', '--limit', '1');
  const tGus = now += 1000;
  givesUp('gus', tGus, 'run', '--sem', 'ci:1', '--wait=1s', '--', 'true');
  const bundle = path.join(dir, 'store.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', bundle, 'refs/locks/state'], { stdio: 'ignore' });
  return { repo, bundle, times: { carol: tCarol, bob: tBob, gus: tGus } };
}

test('a history with waiters: the timeline\'s tickets equal the native ones and what the waiters did', async () => {
  assert.ok(cli, 'the git-locks CLI of the release preset is built (tests/run.sh builds it first)');
  const store = await queueStore();
  const s = gl.openStore(fs.readFileSync(store.bundle));
  try {
    const t = s.timeline();
    assert.equal(JSON.stringify(t) + '\n', nativeTimeline(store.repo));
    // Commits: 0 init, 1 alice's claim, 2 carol's ticket, 3 alice's release,
    // 4 carol's claim with the drop of her ticket, 5-6 bob's ticket and its
    // drop, 7 alice's slot, 8-9 gus's ticket and its drop.
    assert.deepEqual(t.transitions.map((x) => x.command), ['init', 'claim', 'ticket', 'release', 'claim', 'ticket',
      'ticket-drop', 'sem-acquire', 'ticket', 'ticket-drop']);
    const { carol, bob, gus } = store.times;
    assert.deepEqual(t.tickets.map((k) => [k.name, k.seq, k.wants, k.start, k.end, k.end_kind, k.start_commit, k.end_commit]), [
      ['carol', 1, [{ path: 'a.c', mode: 'exclusive' }], carol, carol, 'admitted', 2, 4],
      ['bob', 2, [{ path: 'a.c', mode: 'exclusive' }], bob, bob, 'gave-up', 5, 6],
      ['gus', 3, [{ sem: 'ci' }], gus, gus, 'gave-up', 8, 9],
    ]);
    assert.ok(t.transitions.filter((x) => x.command.startsWith('ticket')).every((x) => x.resources.includes('queue:tickets')));
  } finally {
    s.delete();
  }
});
