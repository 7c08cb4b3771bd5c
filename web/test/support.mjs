// Shared set-up of the browser tests of web/: where things are (environment
// from ctest, defaults for a manual run from the repository root), Debian's
// Chromium driven by playwright-core, a static server on 127.0.0.1, and
// histories made with the real CLI or the native generator.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const sourceDir = process.env.GITLOCKS_SOURCE_DIR || path.resolve(here, '..', '..');
const build = path.join(sourceDir, 'build', 'wasm');
export const siteDir = process.env.GITLOCKS_WEB_SITE_DIR || path.join(build, 'web', 'site');
export const devDir = process.env.GITLOCKS_WEB_DEV_DIR || path.join(build, 'web', 'dev');
export const artifacts = process.env.GITLOCKS_WEB_ARTIFACTS || path.join(build, 'web', 'artifacts');
export const nativeDir = process.env.GITLOCKS_NATIVE_DIR || path.join(sourceDir, 'build', 'release', 'native-helpers');
export const cli = process.env.GITLOCKS_CLI || path.join(sourceDir, 'build', 'release', 'tools', 'cli', 'git-locks');
export const genHistory = path.join(nativeDir, 'gitlocks-gen-history');
export const nativeReplay = path.join(nativeDir, 'gitlocks-native-replay');
export const chromiumPath = '/usr/bin/chromium';

// A fresh directory under the system's temp dir, removed when the process
// exits (set GITLOCKS_KEEP_TMP=1 to keep it for a post-mortem).
const created = [];
process.on('exit', () => {
  if (process.env.GITLOCKS_KEEP_TMP) return;
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});
export function tempDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gitlocks-web-${name}-`));
  created.push(dir);
  return dir;
}

export function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30, ...options });
}

// Debian's chromium; a missing browser is a failure, not a skip.
export async function launch() {
  assert.ok(fs.existsSync(chromiumPath), `${chromiumPath} is missing: install it (toolchains/setup.sh)`);
  const { chromium } = createRequire(path.join(devDir, 'package.json'))('playwright-core');
  const userDataDir = tempDir('chromium');
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: chromiumPath,
    headless: true,
    viewport: { width: 1366, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  return context;
}

const types = {
  '.html': 'text/html; charset=utf-8', '.mjs': 'text/javascript', '.js': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm',
};

// A plain static server of the site folder on 127.0.0.1; `extra` maps
// URL paths to files (the bundles under test).
export async function serveSite(extra = {}) {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    let file = extra[url.pathname];
    if (!file) {
      const rel = path.normalize(decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname));
      file = path.join(siteDir, rel);
      if (!file.startsWith(siteDir)) file = null;
    }
    if (!file || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(fs.readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

// A repository whose refs/locks/state is made by the real CLI, on a fixed
// clock: init, claims by two actors, a conflict-free shared claim, a
// semaphore, an extend, a hand-off, an intent and releases; then waiters in
// the store's queue (docs/CLI.md "Waiting"), each a real `claim --wait` (see
// waiters() below). Returns {dir, repo, commits, gl, tickets}.
export async function cliRepo(name) {
  assert.ok(fs.existsSync(cli), `${cli} is missing: build the release preset first`);
  const dir = tempDir(name);
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  let now = 1_700_000_000_000;
  // Each actor's name is its git user.name (what the store records as a
  // holder's name), whatever the machine's git configuration says.
  const as = (who, at = now) => ({ ...process.env, GIT_LOCKS_KEY: path.join(dir, `${who}.key`), GIT_LOCKS_NOW_MS: String(at),
    GIT_AUTHOR_NAME: who, GIT_AUTHOR_EMAIL: `${who}@example.com`, GIT_COMMITTER_NAME: who, GIT_COMMITTER_EMAIL: `${who}@example.com`,
    GIT_CONFIG_COUNT: '1', GIT_CONFIG_KEY_0: 'user.name', GIT_CONFIG_VALUE_0: who });
  const gl = (who, ...args) => {
    now += 1000;
    return run(cli, ['--repo', repo, ...args], { env: as(who) });
  };
  gl('alice', 'init');
  gl('alice', 'claim', '--ttl', '10m', 'src/a.c', 'src/b.c');
  gl('bob', 'claim', '--ttl', '10m', 'docs/');
  gl('bob', 'claim', '--mode', 'shared', '--ttl', '5m', 'README.md');
  gl('alice', 'claim', '--mode', 'shared', '--ttl', '5m', 'README.md');
  gl('alice', 'sem', 'acquire', 'ci', '--limit', '2', '--ttl', '5m');
  gl('bob', 'sem', 'acquire', 'ci', '--limit', '2', '--ttl', '5m');
  gl('alice', 'extend', '--ttl', '20m', 'src/a.c');
  const bob = JSON.parse(gl('bob', '--json', 'whoami')).actor;
  gl('alice', 'handoff', '--to', bob, '--to-name', 'bob', 'src/a.c');
  gl('carol', 'claim', '--mode', 'intent', '--ttl', '5m', 'src/');
  gl('alice', 'release', 'src/b.c');
  gl('bob', 'sem', 'release', 'ci');
  gl('bob', 'release', 'docs/');
  const tickets = await waiters({ repo, as, gl, advance: (ms) => (now += ms) });
  const commits = Number(run('git', ['-C', repo, 'rev-list', '--count', 'refs/locks/state']).trim());
  return { dir, repo, commits, gl, tickets };
}

// A `git-locks --json ARGS...` (a waiter: `claim --wait=...`, `run
// --wait=...`) in the background; `done` resolves with its exit code, signal
// and output when it ends.
function waiter(repo, env, args) {
  const child = spawn(cli, ['--repo', repo, '--json', ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { err += c; });
  const done = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal, out, err })));
  return { child, done };
}

// Until `who` has a live ticket in the queue (`status --json` at `at`): its queue entry.
async function queued(repo, env, who, w) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const q = JSON.parse(run(cli, ['--repo', repo, '--json', 'status'], { env })).queue;
    const mine = q.find((t) => t.holder_name === who);
    if (mine) return mine;
    assert.equal(w.child.exitCode, null, `${who}'s waiter ended before it took a ticket`);
    assert.ok(Date.now() < deadline, `${who} took no ticket in 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// The waiters, behind alice's lease on lib/x.c then carol's: carol waits
// for it, is queued and is admitted when alice releases (her claim and the
// drop of her ticket in one transition); dave waits and is killed, his
// ticket left behind; a minute later erin waits for lib/ (a directory) for
// 1 s and gives up (her first transition drops dave's lapsed ticket as it
// takes hers); bob takes ci's second slot and gus waits 1 s for one (`run
// --sem`) and gives up; frank waits for lib/x.c and README.md, shared, and
// is killed, his ticket standing at the tip. Each waiter's fixed clock is the time of
// every commit it makes, so alice releases at carol's time. Returns what
// each ticket should show: {holder name: {seq, wants, start, end, end_kind}}.
async function waiters({ repo, as, gl, advance }) {
  gl('alice', 'claim', '--ttl', '10m', 'lib/x.c');
  const want = {};
  const exclusive = (...paths) => paths.map((p) => ({ path: p, mode: 'exclusive' }));
  // carol: admitted.
  const tCarol = advance(1000);
  const carol = waiter(repo, as('carol', tCarol), ['claim', '--wait=60s', '--ttl', '10m', 'lib/x.c']);
  const carolTicket = await queued(repo, as('carol', tCarol), 'carol', carol);
  run(cli, ['--repo', repo, 'release', 'lib/x.c'], { env: as('alice', tCarol) });
  const admitted = await carol.done;
  assert.equal(admitted.code, 0, admitted.err);
  const claim = JSON.parse(admitted.out);
  assert.deepEqual([claim.action, claim.ops.map((o) => o.op)], ['claim', ['claim', 'ticket-drop']]);
  want.carol = { seq: carolTicket.seq, wants: exclusive('lib/x.c'), start: tCarol, end: tCarol, end_kind: 'admitted' };
  // dave: queued, then killed outright; his ticket stays until it lapses.
  const tDave = advance(1000);
  const dave = waiter(repo, as('dave', tDave), ['claim', '--wait=60s', 'lib/x.c']);
  const daveTicket = await queued(repo, as('dave', tDave), 'dave', dave);
  dave.child.kill('SIGKILL');
  await dave.done;
  // erin, a minute later (dave's ticket has lapsed): drops it, queues, gives up.
  const tErin = advance(60_000);
  const erin = waiter(repo, as('erin', tErin), ['claim', '--wait=1s', 'lib/']);
  const gaveUp = await erin.done;
  assert.equal(gaveUp.code, 1, gaveUp.out);
  assert.equal(JSON.parse(gaveUp.err.trim().split('\n').pop()).code, 'wait-timeout', gaveUp.err);
  want.dave = { seq: daveTicket.seq, wants: exclusive('lib/x.c'), start: tDave, end: tErin, end_kind: 'lapsed' };
  want.erin = { seq: daveTicket.seq + 1, wants: exclusive('lib/'), start: tErin, end: tErin, end_kind: 'gave-up' };
  // gus: semaphore ci is full (alice's slot and bob's); he waits 1 s and gives up.
  gl('bob', 'sem', 'acquire', 'ci', '--limit', '2', '--ttl', '5m');
  const tGus = advance(1000);
  const gus = waiter(repo, as('gus', tGus), ['run', '--sem', 'ci:2', '--wait=1s', '--', 'true']);
  const semGaveUp = await gus.done;
  assert.equal(semGaveUp.code, 1, semGaveUp.out);
  assert.equal(JSON.parse(semGaveUp.err.trim().split('\n').pop()).code, 'wait-timeout', semGaveUp.err);
  want.gus = { seq: want.erin.seq + 1, wants: [{ sem: 'ci' }], start: tGus, end: tGus, end_kind: 'gave-up' };
  // frank: queued, then killed; his ticket stands at the tip.
  const tFrank = advance(1000);
  const frank = waiter(repo, as('frank', tFrank), ['claim', '--mode', 'shared', '--wait=60s', 'lib/x.c', 'README.md']);
  const frankTicket = await queued(repo, as('frank', tFrank), 'frank', frank);
  frank.child.kill('SIGKILL');
  await frank.done;
  want.frank = { seq: frankTicket.seq, wants: [{ path: 'lib/x.c', mode: 'shared' }, { path: 'README.md', mode: 'shared' }],
    start: tFrank, end: null, end_kind: null };
  return want;
}

export function bundleOf(repo, file) {
  run('git', ['-C', repo, 'bundle', 'create', '-q', file, 'refs/locks/state'], { stdio: 'ignore' });
  return file;
}

// A bundle made by the native generator. Returns {bundle, tip}.
export function genBundle(name, args) {
  const dir = tempDir(name);
  const bundle = path.join(dir, `${name}.bundle`);
  const tip = run(genHistory, [...args, '--bundle', bundle], { stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  return { bundle, tip, dir };
}

// The native reference's verdicts for a bundle (exit 1: invalid commits).
export function nativeVerdicts(bundle) {
  let out;
  try {
    out = run(nativeReplay, ['--bundle', bundle], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status !== 1) throw e;
    out = e.stdout;
  }
  return out.trim().split('\n').map((l) => JSON.parse(l));
}

// Waits for the page to finish a verification; returns what it shows.
export async function verdictOf(page, timeout = 600_000) {
  await page.waitForFunction(() => document.body.dataset.state === 'done', null, { timeout, polling: 100 });
  return page.evaluate(() => ({
    verdict: document.getElementById('summary').dataset.verdict,
    summary: document.getElementById('summary').textContent,
    progress: document.getElementById('progress').value,
    progressText: document.getElementById('progress-text').textContent,
    count: document.getElementById('count').textContent,
    rows: document.querySelectorAll('#transitions tbody tr').length,
    badRows: [...document.querySelectorAll('#transitions tbody tr.bad')].map((tr) => ({
      index: Number(tr.cells[0].textContent), commit: tr.dataset.commit, reason: tr.cells[7].textContent,
    })),
    refusedMarks: document.querySelectorAll('#timeline .mark.refused').length,
    bars: document.querySelectorAll('#timeline rect.bar').length,
    owner: document.getElementById('pin-owner-value')?.textContent,
  }));
}

export function artifact(name) {
  fs.mkdirSync(artifacts, { recursive: true });
  return path.join(artifacts, name);
}
