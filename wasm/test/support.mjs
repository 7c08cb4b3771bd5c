// Shared set-up of the node tests: where things are (environment from ctest,
// with defaults for a manual run from the repository root), the package
// under test, and stores made by the native helpers in real repositories.
import { execFileSync, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const wasmSourceDir = process.env.GITLOCKS_WASM_SOURCE_DIR || path.resolve(here, '..');
const root = path.resolve(wasmSourceDir, '..');
const build = path.join(root, 'build', 'wasm', 'wasm');
export const packageDir = process.env.GITLOCKS_PACKAGE_DIR || path.join(build, 'package');
export const nativeDir = process.env.GITLOCKS_NATIVE_DIR || path.join(root, 'build', 'release', 'native-helpers');
export const vectorsDir = process.env.GITLOCKS_VECTORS_DIR || path.join(root, 'tests', 'vectors');
export const devDir = process.env.GITLOCKS_DEV_DIR || path.join(build, 'dev');
export const scratchRoot = process.env.GITLOCKS_SCRATCH_DIR || path.join(build, 'scratch');

// The package's CommonJS entry (the same instance index.mjs re-exports).
export function loadPackage() {
  return createRequire(import.meta.url)(path.join(packageDir, 'index.js'));
}

export function scratch(name) {
  fs.mkdirSync(scratchRoot, { recursive: true });
  return fs.mkdtempSync(path.join(scratchRoot, `${name}-`));
}

// A fresh directory under the system's temp dir, removed when the process
// exits (set GITLOCKS_KEEP_TMP=1 to keep it for a post-mortem).
const created = [];
process.on('exit', () => {
  if (process.env.GITLOCKS_KEEP_TMP) return;
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});
export function tempDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gitlocks-${name}-`));
  created.push(dir);
  return dir;
}

export function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30, ...options });
}

// The git-locks CLI of the release preset (tests/run.sh builds it before the
// wasm one), or GITLOCKS_CLI; undefined when it is not built.
export function findCli() {
  const candidates = [process.env.GITLOCKS_CLI, path.join(root, 'build', 'release', 'tools', 'cli', 'git-locks')];
  return candidates.find((c) => c && fs.existsSync(c));
}

export const genHistory = path.join(nativeDir, 'gitlocks-gen-history');
export const nativeReplay = path.join(nativeDir, 'gitlocks-native-replay');

// A store made by the native generator, pushed into a real bare repository;
// the bundle is made by `git bundle create ... refs/locks/state`.
// Returns {repo, bundle, tip}.
export function makeStore(name, genArgs) {
  const dir = tempDir(name);
  const repo = path.join(dir, 'repo.git');
  const pack = path.join(dir, 'gen.pack');
  run('git', ['init', '-q', '--bare', repo]);
  const tip = run(genHistory, [...genArgs, '--pack', pack], { stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  run('git', ['-C', repo, 'index-pack', '--stdin'], { input: fs.readFileSync(pack) });
  run('git', ['-C', repo, 'update-ref', 'refs/locks/state', tip]);
  const bundle = path.join(dir, 'store.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', bundle, 'refs/locks/state'], { stdio: 'ignore' });
  return { dir, repo, bundle, tip };
}

// Verdict lines of the native reference (exit 1 just means invalid commits).
export function nativeVerdicts(args) {
  try {
    return run(nativeReplay, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 1) return e.stdout;
    throw e;
  }
}

export function gitShow(repo, spec) {
  return execFileSync('git', ['-C', repo, 'show', spec], { maxBuffer: 1 << 30 });
}

// The native timeline of a store (gitlocks-native-replay --timeline): one
// canonical line, what Store.timeline() must return byte for byte.
export function nativeTimeline(repo, extra = []) {
  try {
    return run(nativeReplay, ['--repo', repo, '--timeline', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 1) return e.stdout;  // some commit is invalid: still a timeline
    throw e;
  }
}

// The CLI's answer to `git-locks --json [--allow-test-clock] ARGS...` in the
// bare repository `repo` at GIT_LOCKS_NOW_MS=now, with no identity (no row
// is "mine"): {ok: DOC} or {error: {code, reason, detail, ...fields}}.
export function cliAnswer(cli, repo, now, args, { allowTestClock = false } = {}) {
  const env = { ...process.env, GIT_LOCKS_NOW_MS: String(now), GIT_LOCKS_KEY: path.join(repo, 'no-such.key') };
  for (const v of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_LOCKS_GIT']) delete env[v];
  const flags = ['--json', ...(allowTestClock ? ['--allow-test-clock'] : [])];
  try {
    return { ok: JSON.parse(run(cli, [...flags, ...args], { cwd: repo, env, stdio: ['ignore', 'pipe', 'pipe'] })) };
  } catch (e) {
    if (e.status !== 1 && e.status !== 2 && e.status !== 64) throw e;
    return { status: e.status, error: JSON.parse(e.stderr.trim().split('\n').pop()) };
  }
}

// The queries the shared corpus asks of a store, and the answers of the
// native CLI (`status --json`, `fence --json`): every host (Node, Chromium)
// must give the same. `now` is 1 ms after the last admitted T, so some
// leases are live and some expired. Queries: status (live), status --all,
// status of the parent directories of two leased paths, fence of up to
// six rows (live, and expired ones: refused), the generation after the
// first live row's (refused), and a resource never claimed (refused).
export function queryCorpus(cli, store, { allowTestClock = false } = {}) {
  const end = JSON.parse(nativeTimeline(store.repo, allowTestClock ? ['--allow-test-clock'] : [])).end_time;
  const now = end + 1;
  const ask = (args) => cliAnswer(cli, store.repo, now, args, { allowTestClock });
  const all = ask(['status', '--all']).ok;
  const paths = [...new Set(all.leases.filter((l) => l.kind === 'path').map((l) => l.path))].slice(0, 2);
  const dirs = paths.map((p) => (p.includes('/') ? p.slice(0, p.lastIndexOf('/') + 1) : p));
  const queries = [
    { kind: 'status', options: {} },
    { kind: 'status', options: { all: true } },
    { kind: 'status', options: { paths: dirs } },
  ];
  const rows = all.leases.slice(0, 6);
  for (const r of rows) queries.push({ kind: 'fence', resource: r.resource, generation: r.generation });
  const live = all.leases.find((l) => l.live);
  if (live) queries.push({ kind: 'fence', resource: live.resource, generation: live.generation + 1 });
  queries.push({ kind: 'fence', resource: 'never/claimed.txt', generation: 1 });
  const expected = queries.map((q) => {
    if (q.kind === 'status') {
      const args = ['status', ...(q.options.all ? ['--all'] : []), ...(q.options.paths || [])];
      return ask(args);
    }
    const r = ask(['fence', q.resource, String(q.generation)]);
    if (r.ok) delete r.ok.op;  // the CLI's command name, not the core's answer
    return r;
  });
  return { now, queries, expected };
}

export { wasmAnswer } from './browser/answers.mjs';

// cliAnswer's error reduced to what wasmAnswer carries: the CLI adds its
// kind ("error"), exit status and command ("op"). Every field keeps its
// type: the CLI and the module type each one as the core does (numbers are
// numbers in both), and the callers compare with deepEqual (strict).
export function comparableError(a) {
  if (!a.error) return a;
  const { error, op, ...rest } = a.error;
  void error;
  void op;
  return { error: rest };
}

// The shared vectors under tests/vectors/, by kind: {expr, plan, key,
// unicode}, each a list of {file, doc} in file name order (what
// browser/vector_outcomes.mjs runs).
export function loadVectorCorpus() {
  const corpus = {};
  for (const kind of ['expr', 'plan', 'key', 'unicode']) {
    const dir = path.join(vectorsDir, kind);
    corpus[kind] = fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()
      .map((file) => ({ file, doc: JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) }));
  }
  // The claims-rule vectors: cases.json with its bundle (base64, so a
  // browser gets it in the same JSON) and the bundle's refs, as listed by
  // Git itself (`git bundle list-heads`), never by the module under test.
  const checkDir = path.join(vectorsDir, 'check');
  const doc = JSON.parse(fs.readFileSync(path.join(checkDir, 'cases.json'), 'utf8'));
  const bundleFile = path.join(checkDir, doc.bundle);
  const heads = spawnSync('git', ['bundle', 'list-heads', bundleFile], { encoding: 'utf8' });
  if (heads.status !== 0) throw new Error(`git bundle list-heads ${bundleFile}: ${heads.stderr}`);
  const refs = Object.fromEntries(heads.stdout.trim().split('\n').map((l) => l.split(' ').reverse()));
  corpus.check = [{ file: 'cases.json', doc, bundle: fs.readFileSync(bundleFile).toString('base64'), refs }];
  return corpus;
}

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
const sha256hex = (s) => crypto.createHash('sha256').update(s, 'utf8').digest('hex');
export const nodeVectorHelpers = { actorHex, sha256hex };

// The helpers, recording every answer: the tables a browser gets instead of
// Node's crypto ({actors: {name: hex}, sha: {text: hex}}).
export function recordingVectorHelpers() {
  const tables = { actors: {}, sha: {} };
  return {
    tables,
    helpers: {
      actorHex: (n) => (tables.actors[n] ??= actorHex(n)),
      sha256hex: (t) => (tables.sha[t] ??= sha256hex(t)),
    },
  };
}
