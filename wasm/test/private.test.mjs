// PRIVATE stores in WASM (docs/PRIVATE.md "Verification, labelled
// honestly"): a store made by the git-locks CLI with sealed records, three
// epochs of members and a removal, bundled with `git bundle create`, is
// replayed with each member's key, a non-member's and none. Every run must
// give verdict lines byte-identical to `git-locks verify --json` with the
// same key (and to the native reference on the bundle), the same counts and
// the same structural note; members get level "full" where they hold the
// epoch keys, everyone else "structural"; full and structural verification
// agree on every structural field. readState decrypts records for members
// only.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { before, test } from 'node:test';

import { findCli, loadPackage, nativeTimeline, nativeVerdicts, run, tempDir } from './support.mjs';

const gl = loadPackage();
await gl.init();

const SECRET = 'secret/q3-budget.xlsx';
const FORECAST = 'secret/forecast/2027-plan.csv';
const NOTE = 'merger-talks-with-initech';
const STRUCTURAL_NOTE = 'structural verification only: not a semantic validation';

let cli;
const store = {};

function cliRun(who, args, now) {
  const r = spawnSync(cli, ['--repo', store.repo, '--key', keyFile(who), ...args], {
    encoding: 'utf8',
    env: { ...process.env, GIT_LOCKS_NOW_MS: String(now) },
  });
  return r;
}

function keyFile(who) {
  return path.join(store.dir, `${who}.key`);
}

before(() => {
  cli = findCli();
  assert.ok(cli, 'git-locks CLI not built (build the release preset first, or set GITLOCKS_CLI)');
  store.dir = tempDir('private');
  store.repo = path.join(store.dir, 'repo');
  run('git', ['init', '-q', store.repo]);
  let now = 1_700_000_000_000;
  const gl_ = (who, ...args) => {
    now += 1000;
    const r = cliRun(who, ['--json', ...args], now);
    assert.equal(r.status, 0, `git-locks ${args.join(' ')}: ${r.stderr}`);
    return r.stdout ? JSON.parse(r.stdout) : null;
  };
  const actor = (who) => gl_(who, 'whoami').actor;
  const policy = path.join(store.dir, 'policy.json');
  fs.writeFileSync(policy, JSON.stringify({
    families: [{ name: 'finance-room', policy: 'exclusive', members: [SECRET, 'secret/forecast/'] }],
  }));
  gl_('owner', 'init', '--private', '--policy', policy);
  store.actors = { owner: actor('owner'), alice: actor('alice'), bob: actor('bob'), mallory: actor('mallory') };
  gl_('owner', 'member', 'add', store.actors.alice); // epoch 2
  gl_('alice', 'claim', '--ttl', '10m', '--note', NOTE, SECRET);
  gl_('alice', 'sem', 'acquire', 'render-farm', '--limit', '2', '--ttl', '5m');
  gl_('owner', 'member', 'add', store.actors.bob); // epoch 3
  gl_('bob', 'claim', '--mode', 'shared', '--ttl', '5m', 'docs/roadmap.md');
  gl_('alice', 'extend', '--ttl', '20m', SECRET);
  gl_('alice', 'release', SECRET);
  gl_('owner', 'member', 'remove', store.actors.alice); // epoch 4
  gl_('bob', 'claim', '--ttl', '10m', FORECAST);
  now += 6 * 60_000;
  gl_('bob', 'sweep');
  store.bundle = path.join(store.dir, 'store.bundle');
  run('git', ['-C', store.repo, 'bundle', 'create', '-q', store.bundle, 'refs/locks/state'], { stdio: 'ignore' });
  store.bytes = fs.readFileSync(store.bundle);
  store.tip = run('git', ['-C', store.repo, 'rev-parse', 'refs/locks/state']).trim();
  store.commits = Number(run('git', ['-C', store.repo, 'rev-list', '--count', 'refs/locks/state']).trim());
});

// `git-locks --json verify` as `who`: its verdict lines and its summary.
function nativeVerify(who) {
  const r = cliRun(who, ['--json', 'verify', '--full'], 1_800_000_000_000);
  assert.ok(r.status === 0 || r.status === 1, `verify exited ${r.status}: ${r.stderr}`);
  const lines = r.stdout.split('\n').filter((l) => l.length > 0);
  const summary = JSON.parse(r.stderr.trim().split('\n').pop());
  return { text: lines.map((l) => l + '\n').join(''), summary };
}

function wasmReplay(memberKey) {
  const r = gl.replay(store.bytes, memberKey === undefined ? {} : { memberKey });
  assert.equal(r.summary.commits, r.verdicts.length);
  return { text: r.verdicts.map((v) => JSON.stringify(v) + '\n').join(''), result: r };
}

// WASM with this key equals native verify with the same key.
function checkAgainstNative(who, memberKey) {
  const native = nativeVerify(who);
  const { text, result } = wasmReplay(memberKey);
  assert.equal(text, native.text, `${who}: WASM verdicts differ from git-locks verify --json`);
  const s = result.summary;
  assert.equal(s.commits, native.summary.commits);
  assert.equal(s.invalid, native.summary.invalid);
  assert.equal(s.structural, native.summary.structural);
  assert.equal(s.tip, native.summary.tip);
  assert.equal(s.first_invalid, native.summary.first_invalid);
  assert.equal(s.note, native.summary.note, `${who}: the structural note differs from native verify's`);
  assert.equal(s.private, true);
  return result;
}

test('the owner (a member of every epoch) gets full verification, identical to native verify', () => {
  const r = checkAgainstNative('owner', fs.readFileSync(keyFile('owner'), 'utf8'));
  assert.equal(r.verdicts.length, store.commits);
  assert.equal(r.summary.invalid, 0, JSON.stringify(r.verdicts.find((v) => !v.ok)));
  assert.deepEqual([...new Set(r.verdicts.map((v) => v.level))], ['full']);
  assert.equal(r.summary.structural, 0);
  assert.equal(r.summary.member, true);
  assert.equal(r.summary.note, undefined);
  // The native reference on the bundle agrees too.
  assert.equal(wasmReplay(fs.readFileSync(keyFile('owner'))).text,
    nativeVerdicts(['--bundle', store.bundle, '--key', keyFile('owner')]));
});

test('no member key: structural verification, identical to native verify by a non-member', () => {
  const r = checkAgainstNative('mallory', undefined);
  assert.equal(r.summary.member, false);
  assert.equal(r.summary.note, STRUCTURAL_NOTE);
  assert.equal(r.summary.invalid, 0);
  // Creation and membership changes are in the clear; every sealed commit is structural.
  const structural = r.verdicts.filter((v) => v.level === 'structural');
  assert.equal(structural.length, r.summary.structural);
  assert.ok(structural.length >= 7, `only ${structural.length} structural verdicts`);
  for (const v of structural) assert.notEqual(v.command, 'init');
  assert.equal(wasmReplay(undefined).text, nativeVerdicts(['--bundle', store.bundle]));
});

test('a non-member key gives the same structural verdicts as no key, identical to native', () => {
  const none = wasmReplay(undefined);
  const r = checkAgainstNative('mallory', fs.readFileSync(keyFile('mallory'), 'utf8'));
  assert.equal(JSON.stringify(r.verdicts), JSON.stringify(none.result.verdicts));
  assert.equal(r.summary.member, false);
  assert.equal(r.summary.note, STRUCTURAL_NOTE);
  assert.equal(nativeVerdicts(['--bundle', store.bundle, '--key', keyFile('mallory')]), none.text);
});

test('members who joined later, or were removed, get full verification of their epochs only, as natively', () => {
  for (const who of ['bob', 'alice']) {
    const r = checkAgainstNative(who, fs.readFileSync(keyFile(who), 'utf8'));
    assert.equal(r.summary.member, true, who);
    assert.equal(r.summary.invalid, 0, who);
    const levels = new Set(r.verdicts.map((v) => v.level));
    assert.ok(levels.has('full') && levels.has('structural'), `${who}: levels ${[...levels]}`);
    assert.equal(r.summary.note, STRUCTURAL_NOTE, who);
    // More is verified in full than without a key.
    assert.ok(r.summary.structural < wasmReplay(undefined).result.summary.structural, who);
    assert.equal(wasmReplay(fs.readFileSync(keyFile(who), 'utf8')).text,
      nativeVerdicts(['--bundle', store.bundle, '--key', keyFile(who)]), who);
  }
});

test('full and structural verification agree on every structural field', () => {
  const full = wasmReplay(fs.readFileSync(keyFile('owner'), 'utf8')).result.verdicts;
  const structural = wasmReplay(undefined).result.verdicts;
  assert.equal(full.length, structural.length);
  const fields = (v) => ({ commit: v.commit, command: v.command, actor: v.actor, time: v.time, ok: v.ok });
  assert.deepEqual(structural.map(fields), full.map(fields));
  assert.ok(full.some((v, i) => v.level !== structural[i].level), 'the two levels must differ somewhere');
});

test('the key as a bare seed, in bytes or in upper case, is the same key', () => {
  const file = fs.readFileSync(keyFile('bob'), 'utf8');
  const expected = wasmReplay(file).text;
  const seed = JSON.parse(file).seed;
  assert.equal(wasmReplay(seed).text, expected);
  assert.equal(wasmReplay(seed.toUpperCase() + '\n').text, expected);
  const bytes = new Uint8Array(fs.readFileSync(keyFile('bob')));
  const copy = bytes.slice();
  assert.equal(wasmReplay(bytes).text, expected);
  assert.deepEqual(bytes, copy, "the caller's key bytes are the caller's: left as they were");
  assert.equal(gl.keyActor(file), store.actors.bob);
  assert.equal(gl.keyActor(bytes), store.actors.bob);
});

// A key that parses but is no member's is verified structurally, as natively;
// one that does not parse is refused (wasm/README.md: a pasted key that is
// silently ignored would pass for a non-member's).
test('a key that is not an actor key is a usage error that never quotes it', () => {
  const seed = JSON.parse(fs.readFileSync(keyFile('bob'), 'utf8')).seed;
  for (const bad of [seed.slice(0, 60), `{"format":"gitlocks-actor-key-v1","seed":"${seed}"`, `{"seed":"${seed}"}`, '']) {
    for (const call of [() => gl.replay(store.bytes, { memberKey: bad }), () => gl.keyActor(bad)]) {
      assert.throws(call, (e) => {
        assert.ok(e instanceof gl.GitLocksError);
        assert.equal(e.code, 'usage');
        assert.match(e.message, /^member key: not a git-locks actor key/);
        assert.ok(!e.message.includes(seed.slice(0, 16)), 'the message quotes the key');
        return true;
      });
    }
  }
});

test('readState decrypts the records for members only', () => {
  const s = gl.openStore(store.bytes);
  try {
    const verdicts = s.replay().verdicts;
    const owner = fs.readFileSync(keyFile('owner'), 'utf8');
    const names = new Set();
    let note = null;
    for (const v of verdicts) {
      const state = s.readState(v.commit, { memberKey: owner });
      for (const r of state.records) {
        names.add(r.name);
        for (const l of r.leases || []) if (l.note) note = l.note;
      }
    }
    for (const n of [SECRET, FORECAST, 'docs/roadmap.md', 'render-farm']) assert.ok(names.has(n), `${n} not decrypted: ${[...names]}`);
    assert.equal(note, NOTE);
    // The tip for bob (a member now) and for alice (removed before it) and mallory.
    const tipRecords = s.readState(store.tip, { memberKey: fs.readFileSync(keyFile('bob')) }).records.map((r) => r.name);
    assert.ok(tipRecords.includes(FORECAST), JSON.stringify(tipRecords));
    for (const who of ['alice', 'mallory']) {
      assert.throws(() => s.readState(store.tip, { memberKey: fs.readFileSync(keyFile(who)) }), (e) => e.code === 'not-member');
    }
    assert.throws(() => s.readState(store.tip), (e) => e.code === 'not-member');
    // The policy is in the clear: no key needed for the owner, members and pins.
    const policy = s.readPolicy(store.tip);
    assert.equal(policy.commit, store.tip);
    assert.equal(policy.policy.visibility, 'PRIVATE');
    assert.equal(policy.policy.owner, store.actors.owner);
    assert.deepEqual([...policy.policy.members].sort(), [store.actors.owner, store.actors.bob].sort());
    assert.ok(!JSON.stringify(policy.policy).includes('finance-room'), 'families are sealed');
    // Bob joined at epoch 3: the state of alice's first claim (epoch 2) is not his to read.
    const aliceClaim = verdicts.find((v) => v.command === 'claim' && v.actor === store.actors.alice);
    assert.throws(() => s.readState(aliceClaim.commit, { memberKey: fs.readFileSync(keyFile('bob')) }), (e) => e.code === 'not-member');
    const alice = s.readState(aliceClaim.commit, { memberKey: fs.readFileSync(keyFile('alice')) });
    assert.ok(alice.records.some((r) => r.name === SECRET));
  } finally {
    s.delete();
  }
});

// The keyless rule (docs/PRIVATE.md "Signers and the public policy"): one
// core function, so WASM without a key, WASM with the owner's key and native
// verify all flag a forged tip with the same reason. Forgeries are made with
// git plumbing in a copy of the store, the tip's packet re-signed with node's
// Ed25519.
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function signingKey(who) {
  const seed = Buffer.from(JSON.parse(fs.readFileSync(keyFile(who), 'utf8')).seed, 'hex');
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), seed]);
  return crypto.createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
}

// A copy of the store whose tip is replaced by the tip's packet signed by
// `signer` (as its actor), its state's policy.json changed by `editPolicy`.
function forgedStore(name, signer, editPolicy) {
  const dir = tempDir(`private-${name}`);
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  run('git', ['-C', repo, 'fetch', '-q', store.repo, 'refs/locks/state:refs/locks/state']);
  const env = { ...process.env, GIT_INDEX_FILE: path.join(dir, 'index') };
  const git = (args, input) => run('git', ['-C', repo, ...args], { env, input });
  git(['read-tree', store.tip]);
  const packet = JSON.parse(git(['cat-file', 'blob', `${store.tip}:txn/packet.json`])).packet;
  if (editPolicy) {
    const policy = JSON.parse(git(['cat-file', 'blob', `${store.tip}:state/policy.json`]));
    editPolicy(policy);
    const blob = git(['hash-object', '-w', '--stdin'], canon(policy)).trim();
    git(['update-index', '--cacheinfo', `100644,${blob},state/policy.json`]);
    packet.result = git(['write-tree', '--prefix=state/']).trim();
  }
  packet.actor = store.actors[signer];
  const message = Buffer.concat([Buffer.from('gitlocks/packet/v1\0', 'latin1'), Buffer.from(canon(packet))]);
  const sig = crypto.sign(null, message, signingKey(signer)).toString('hex');
  const blob = git(['hash-object', '-w', '--stdin'], canon({ packet, sig })).trim();
  git(['update-index', '--cacheinfo', `100644,${blob},txn/packet.json`]);
  const tree = git(['write-tree']).trim();
  const forged = git(['commit-tree', '-p', `${store.tip}^`, '-m', 'git-locks: sweep', tree]).trim();
  git(['update-ref', 'refs/locks/state', forged]);
  const bundle = path.join(dir, 'store.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', bundle, 'refs/locks/state'], { stdio: 'ignore' });
  return { repo, bytes: fs.readFileSync(bundle), forged };
}

for (const [name, signer, edit, reason] of [
  ['removed-member', 'alice', null, 'not-member'],
  ['non-member', 'mallory', null, 'not-member'],
  ['wider-ttl', 'bob', (p) => { p.max_ttl_ms *= 24; }, 'policy-changed'],
]) {
  test(`a forged tip (${name}) is ${reason} in WASM with and without a key, as natively`, () => {
    const f = forgedStore(name, signer, edit);
    for (const who of ['owner', 'mallory']) {
      const r = gl.replay(f.bytes, who === 'owner' ? { memberKey: fs.readFileSync(keyFile('owner'), 'utf8') } : {});
      const bad = r.verdicts.filter((v) => !v.ok);
      assert.equal(bad.length, 1, `${who}: ${JSON.stringify(bad)}`);
      assert.equal(bad[0].commit, f.forged);
      assert.equal(bad[0].reason, reason, `${who}: ${JSON.stringify(bad[0])}`);
      assert.equal(bad[0].level, who === 'owner' ? 'full' : 'structural');
      const native = spawnSync(cli, ['--repo', f.repo, '--key', keyFile(who), '--json', 'verify', '--full'], { encoding: 'utf8' });
      assert.equal(native.status, 1, native.stderr);
      assert.equal(r.verdicts.map((v) => JSON.stringify(v) + '\n').join(''), native.stdout, who);
    }
  });
}

test('status of a PRIVATE store: a member sees what git-locks status shows it, others are refused', () => {
  const NOW = 1_700_000_100_000;
  const r = cliRun('bob', ['--json', 'status', '--all'], NOW);
  assert.equal(r.status, 0, r.stderr);
  const native = JSON.parse(r.stdout);
  const s = gl.openStore(store.bytes);
  try {
    const got = s.status(undefined, { now: NOW, all: true, me: store.actors.bob, memberKey: fs.readFileSync(keyFile('bob')) });
    assert.equal(JSON.stringify(got), JSON.stringify(native));
    assert.ok(got.leases.some((l) => l.mine), 'bob has leases');
    assert.ok(Array.isArray(got.policy.families), 'the families are opened for a member');
    // A non-member, natively and in WASM, and no key at all: not-member.
    const refused = cliRun('mallory', ['--json', 'status', '--all'], NOW);
    assert.equal(refused.status, 1, refused.stderr);
    assert.equal(JSON.parse(refused.stderr.trim().split('\n').pop()).code, 'not-member');
    for (const key of [undefined, fs.readFileSync(keyFile('mallory'))])
      assert.throws(() => s.status(undefined, { now: NOW, memberKey: key }), (e) => e.code === 'not-member' && e.reason === 'not-member');
  } finally {
    s.delete();
  }
});

test('the lease timeline of a PRIVATE store equals the native one, with a member key and without', () => {
  const s = gl.openStore(store.bytes);
  try {
    const full = s.timeline({ memberKey: fs.readFileSync(keyFile('owner')) });
    assert.equal(JSON.stringify(full) + '\n', nativeTimeline(store.repo, ['--key', keyFile('owner')]));
    assert.ok(full.leases.length > 0 && full.transitions.every((t) => t.state_error === null), 'the owner reads every state');
    const sealed = s.timeline();
    assert.equal(JSON.stringify(sealed) + '\n', nativeTimeline(store.repo));
    assert.ok(sealed.transitions.some((t) => t.state_error === 'not-member'), 'without a key the sealed states are not read');
  } finally {
    s.delete();
  }
});
