// Shared set-up of the browser tests of web/: where things are (environment
// from ctest, defaults for a manual run from the repository root), Debian's
// Chromium driven by playwright-core, a static server on 127.0.0.1, and
// histories made with the real CLI or the native generator.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
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
// semaphore, an extend, a hand-off, an intent and releases. Returns {repo, env, commits}.
export function cliRepo(name) {
  assert.ok(fs.existsSync(cli), `${cli} is missing: build the release preset first`);
  const dir = tempDir(name);
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  let now = 1_700_000_000_000;
  const as = (who) => ({ ...process.env, GIT_LOCKS_KEY: path.join(dir, `${who}.key`), GIT_LOCKS_NOW_MS: String(now),
    GIT_AUTHOR_NAME: who, GIT_AUTHOR_EMAIL: `${who}@example.com`, GIT_COMMITTER_NAME: who, GIT_COMMITTER_EMAIL: `${who}@example.com` });
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
  const commits = Number(run('git', ['-C', repo, 'rev-list', '--count', 'refs/locks/state']).trim());
  return { dir, repo, commits, gl };
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
