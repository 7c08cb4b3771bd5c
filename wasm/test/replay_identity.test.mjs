// Replay identity: stores written by the native core into real repositories
// (plain, attested, and tampered in five ways), exported with
// `git bundle create x.bundle refs/locks/state`, must give the same verdicts
// in WASM as natively, byte for byte: each verdict object, serialised with
// JSON.stringify, equals the native verdict_json line. The native reference
// reads the repository itself (libgit2 on disk) and the bundle (pack store).
// A store made by the git-locks CLI (which must be built) is checked the same
// way, and against `git-locks verify --json` line for line.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { findCli, genHistory, gitShow, loadPackage, makeStore, nativeVerdicts, run, tempDir } from './support.mjs';

const gl = loadPackage();
await gl.init();

function wasmLines(bundlePath, options) {
  const r = gl.replay(fs.readFileSync(bundlePath), options);
  assert.equal(r.summary.commits, r.verdicts.length);
  return { text: r.verdicts.map((v) => JSON.stringify(v) + '\n').join(''), result: r };
}

function checkIdentity(store, expectInvalid) {
  const fromRepo = nativeVerdicts(['--repo', store.repo]);
  const fromBundle = nativeVerdicts(['--bundle', store.bundle]);
  assert.equal(fromBundle, fromRepo, 'native: bundle and repository differ');
  const { text, result } = wasmLines(store.bundle);
  assert.equal(text, fromRepo);
  assert.equal(result.summary.tip, store.tip);
  const invalid = result.verdicts.filter((v) => !v.ok);
  assert.equal(result.summary.invalid, invalid.length);
  if (expectInvalid) {
    assert.ok(invalid.length > 0, 'a tampered store must have an invalid verdict');
    assert.equal(invalid[0].reason, expectInvalid);
    assert.equal(result.summary.first_invalid, invalid[0].commit);
  } else {
    assert.equal(invalid.length, 0, JSON.stringify(invalid[0]));
  }
  return result;
}

test('a plain 120-commit history: WASM verdicts equal native ones byte for byte', () => {
  const store = makeStore('plain', ['--commits', '120', '--seed', '7']);
  const r = checkIdentity(store, null);
  assert.equal(r.verdicts.length, 120);
  // Every kind of transition the generator makes is in there.
  const commands = new Set(r.verdicts.map((v) => v.command));
  for (const c of ['init', 'claim', 'batch', 'extend', 'release', 'sem-acquire', 'sweep']) assert.ok(commands.has(c), c);
});

test('an attested history (guard time on, notary T in every commit) replays identically', () => {
  const store = makeStore('attested', ['--commits', '60', '--seed', '3', '--attested']);
  const r = checkIdentity(store, null);
  assert.equal(r.verdicts[1].command, 'guard-time');
  // The pins are part of the store's policy; attestations verify against them.
  const policy = gl.openStore(fs.readFileSync(store.bundle));
  try {
    const state = policy.readState(store.tip);
    assert.ok(state.policy.guard_time, 'guard time is in the policy');
  } finally {
    policy.delete();
  }
});

const tampered = [
  ['state-byte', 'state-mismatch'],
  ['resign', 'replay-refused'],
  ['unsigned', 'bad-signature'],
  ['drop', 'source-mismatch'],
  ['stray', 'unexpected-entry'],
];
for (const [mode, reason] of tampered) {
  test(`a tampered store (${mode}) gives the same invalid verdicts natively and in WASM`, () => {
    const store = makeStore(`tamper-${mode}`, ['--commits', '50', '--seed', '11', '--tamper', `25:${mode}`]);
    checkIdentity(store, reason);
  });
}
test('a history with the owner\'s checkpoints replays identically - and fromCheckpoint starts at the newest', () => {
  // A checkpoint after the 50th and the 100th commit (gitlocks-gen-history --checkpoint-every).
  const store = makeStore('checkpoints', ['--commits', '120', '--seed', '7', '--checkpoint-every', '50']);
  const full = checkIdentity(store, null);
  assert.deepEqual(full.verdicts.map((v, i) => [v.command, i]).filter(([c]) => c === 'checkpoint').map(([, i]) => i),
    [50, 100]);
  assert.equal(full.summary.start, 'root');
  assert.equal(full.summary.start_commit, null);
  // From the newest checkpoint: the 19 commits after it, each verdict as in the full replay.
  const fresh = gl.replay(fs.readFileSync(store.bundle), { fromCheckpoint: true });
  assert.equal(fresh.summary.start, 'checkpoint');
  assert.equal(fresh.summary.start_commit, full.verdicts[100].commit);
  assert.equal(fresh.summary.commits, 19);
  assert.deepEqual(fresh.verdicts, full.verdicts.slice(101));
  // Another expected owner: no checkpoint of hers to start at, and the root is owner-mismatch.
  const other = gl.replay(fs.readFileSync(store.bundle), { fromCheckpoint: true, owner: 'ab'.repeat(32) });
  assert.equal(other.summary.start, 'root');
  assert.equal(other.verdicts[0].reason, 'owner-mismatch');
  // With `from` as well: a usage error.
  assert.throws(() => gl.replay(fs.readFileSync(store.bundle), { fromCheckpoint: true, from: store.tip }),
    (e) => e.code === 'usage' && /exclude each other/.test(e.message));
});

test('a history with cuts replays identically across them - a bundle of the new chain alone starts at the cut', () => {
  // A checkpoint after the 40th and the 80th commit, the second a cut (no parent: docs/FORMAT.md
  // "The cut"), its archive on refs/locks/archive/PREV (gitlocks-gen-history --cut-every).
  const dir = tempDir('cuts');
  const repo = path.join(dir, 'repo.git');
  run('git', ['init', '-q', '--bare', repo]);
  const gen = path.join(dir, 'gen.bundle');
  const tip = run(genHistory, ['--commits', '120', '--seed', '7', '--checkpoint-every', '40', '--cut-every', '80',
    '--bundle', gen], { stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  run('git', ['-C', repo, 'fetch', '-q', gen, 'refs/locks/*:refs/locks/*']);
  const whole = path.join(dir, 'whole.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', whole, 'refs/locks/state', '--glob=refs/locks/archive/*'],
    { stdio: 'ignore' });
  const tail = path.join(dir, 'tail.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', tail, 'refs/locks/state'], { stdio: 'ignore' });
  // With the archive: every artifact replays the 120 commits from the root, across the cut.
  const fromRepo = nativeVerdicts(['--repo', repo]);
  assert.equal(nativeVerdicts(['--bundle', whole]), fromRepo);
  const full = wasmLines(whole);
  assert.equal(full.text, fromRepo);
  const verdicts = full.result.verdicts;
  assert.equal(verdicts.length, 120);
  assert.ok(verdicts.every((v) => v.ok), JSON.stringify(verdicts.find((v) => !v.ok)));
  assert.deepEqual(verdicts.map((v, i) => [v.command, i]).filter(([c]) => c === 'checkpoint').map(([, i]) => i),
    [40, 80]);
  const cut = verdicts[80].commit;
  assert.deepEqual(run('git', ['-C', repo, 'rev-list', '--parents', '-n', '1', cut]).trim().split(' '), [cut],
    'the cut has no parent');
  assert.equal(full.result.summary.cut_start, null);
  assert.equal(full.result.summary.tip, tip);
  // Without it: the chain starts at the cut, each verdict as in the full replay, and says so.
  const alone = wasmLines(tail);
  assert.equal(alone.text, nativeVerdicts(['--bundle', tail]));
  assert.deepEqual(alone.result.verdicts, verdicts.slice(80));
  assert.equal(alone.result.summary.cut_start, cut);
  const fresh = gl.replay(fs.readFileSync(tail), { fromCheckpoint: true });
  assert.equal(fresh.summary.start, 'checkpoint');
  assert.equal(fresh.summary.start_commit, cut);
  assert.deepEqual(fresh.verdicts, verdicts.slice(81));
});

test('a tampered attested store (state-byte) gives the same verdicts', () => {
  const store = makeStore('tamper-attested', ['--commits', '40', '--seed', '5', '--attested', '--tamper', '20:state-byte']);
  checkIdentity(store, 'state-mismatch');
});

test('a store made by the git-locks CLI replays identically', (t) => {
  const cli = findCli();
  // tests/run.sh builds the release preset first: a missing CLI is a failure.
  assert.ok(cli, 'git-locks CLI not built (build the release preset first, or set GITLOCKS_CLI)');
  const dir = tempDir('cli');
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  let now = 1_700_000_000_000;
  const gl_ = (who, args) => {
    const r = spawnSync(cli, ['--repo', repo, '--key', path.join(dir, `${who}.key`), ...args], {
      encoding: 'utf8',
      env: { ...process.env, GIT_LOCKS_NOW_MS: String(now) },
    });
    assert.equal(r.status, 0, `git-locks ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  gl_('alice', ['init']);
  gl_('alice', ['claim', '--ttl', '5s', 'src/a.c']);
  gl_('bob', ['claim', '--mode', 'shared', '--ttl', '60s', 'docs/']);
  gl_('carol', ['claim', '--mode', 'shared', '--ttl', '60s', 'docs/x.md']);
  now += 6000;
  gl_('bob', ['claim', '--ttl', '60s', 'src/']); // reclaims alice's expired lease below
  now += 1000;
  gl_('bob', ['extend', '--ttl', '90s', 'src/']);
  gl_('carol', ['sem', 'acquire', 'ci', '--limit', '2', '--ttl', '10s']);
  gl_('carol', ['release', 'docs/x.md']);
  now += 120_000;
  gl_('dave', ['sweep']);
  const bundle = path.join(dir, 'store.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', bundle, 'refs/locks/state'], { stdio: 'ignore' });
  const tip = run('git', ['-C', repo, 'rev-parse', 'refs/locks/state']).trim();
  const r = checkIdentity({ repo, bundle, tip }, null);
  assert.equal(r.verdicts.length, 9);
  // `git-locks verify --json` prints one verdict line per commit on stdout
  // (the summary goes to stderr): the same bytes as the WASM replay's.
  const cliText = gl_('dave', ['--json', 'verify', '--full']);
  assert.equal(cliText.split('\n').length, 9 + 1, cliText);
  assert.equal(cliText, wasmLines(bundle).text);
  // The expected owner and notary pins are the core's rules: the CLI and the
  // module flag the same commit with the same bytes (owner-mismatch at the
  // root, pins-mismatch at the tip of a store without guard time).
  const owner = JSON.parse(gl_('alice', ['--json', 'whoami'])).actor;
  const other = (owner[0] === '0' ? '1' : '0') + owner.slice(1);
  const key = 'ab'.repeat(32);
  for (const [flags, options, bad] of [
    [['--expect-owner', other], { owner: other }, [[0, 'owner-mismatch']]],
    [['--expect-pins', `notary.example:${key}`], { pins: { audience: 'notary.example', serviceKey: key } },
      [[8, 'pins-mismatch']]],
    [['--expect-owner', owner], { owner }, []],
  ]) {
    const r = spawnSync(cli, ['--repo', repo, '--key', path.join(dir, 'dave.key'), '--json', 'verify', ...flags],
      { encoding: 'utf8' });
    assert.equal(r.status, bad.length ? 1 : 0, r.stderr);
    const w = wasmLines(bundle, options);
    assert.equal(r.stdout, w.text);
    assert.deepEqual(w.result.verdicts.flatMap((v, i) => (v.ok ? [] : [[i, v.reason]])), bad);
  }
});

test('gitShow reads stored packets (helper sanity)', () => {
  const store = makeStore('show', ['--commits', '3', '--seed', '1']);
  const packet = gitShow(store.repo, `${store.tip}:txn/packet.json`).toString('utf8');
  assert.ok(packet.startsWith('{"packet":{'));
});
