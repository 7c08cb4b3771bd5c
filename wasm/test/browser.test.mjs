// The package in headless Chromium, without a bundler: browser.mjs in a page,
// browser.mjs in a module worker, index.js through importScripts in a classic
// worker. Each replays a bundle made by the native core, and its verdict
// lines must equal the native reference's byte for byte; its status and
// fence answers the CLI's, its lease timeline gitlocks-native-replay
// --timeline's, and its outcomes of the shared vectors (tests/vectors/)
// Node's, which vectors.test.mjs checks against the expectations. A missing
// Chromium fails (toolchains/setup.sh installs it). The server listens on
// 127.0.0.1 only.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';

import { vectorOutcomes } from './browser/vector_outcomes.mjs';
import {
  comparableError, findCli, loadPackage, loadVectorCorpus, makeStore, nativeTimeline, nativeVerdicts, packageDir,
  queryCorpus, recordingVectorHelpers, tempDir, wasmSourceDir,
} from './support.mjs';

const chromium = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => fs.existsSync(p));
const WHERE = ['page', 'module-worker', 'classic-worker'];
const types = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm' };

test('page, module worker and classic worker replay identically to native', async () => {
  // toolchains/setup.sh installs Debian's chromium: a missing browser fails.
  assert.ok(chromium, 'no Chromium installed (toolchains/setup.sh installs it)');
  const store = makeStore('browser', ['--commits', '40', '--seed', '8']);
  const expected = nativeVerdicts(['--repo', store.repo]);
  // The shared corpus's queries, answered natively (the CLI, the native timeline).
  const cli = findCli();
  assert.ok(cli, 'the git-locks CLI of the release preset is built');
  const corpus = queryCorpus(cli, store);
  const timeline = nativeTimeline(store.repo);
  // The shared vectors: Node's outcomes (vectors.test.mjs checks them against
  // the hand-written expectations) are what every browser context must give.
  const gl = loadPackage();
  await gl.init();
  const vectorCorpus = loadVectorCorpus();
  const recording = recordingVectorHelpers();
  const vectors = JSON.stringify(vectorOutcomes(gl, vectorCorpus, recording.helpers));
  const results = {};
  let allIn;
  const collected = new Promise((resolve) => { allIn = resolve; });
  const pageDir = path.join(wasmSourceDir, 'test', 'browser');
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'POST' && url.pathname === '/result') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        const r = JSON.parse(body);
        results[r.where] = r;
        res.end('ok');
        if (WHERE.every((w) => results[w])) allIn();
      });
      return;
    }
    let file;
    if (url.pathname === '/vectors.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ corpus: vectorCorpus, tables: recording.tables }));
      return;
    }
    if (url.pathname === '/queries.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ now: corpus.now, queries: corpus.queries }));
      return;
    }
    if (url.pathname === '/store.bundle') file = store.bundle;
    else if (url.pathname.startsWith('/pkg/')) file = path.join(packageDir, path.basename(url.pathname));
    else file = path.join(pageDir, path.basename(url.pathname));
    if (!fs.existsSync(file)) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': types[path.extname(file)] || 'application/octet-stream' });
    res.end(fs.readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  try {
    // The browser runs until all three results are in (or two minutes
    // pass): no virtual-time budget that a loaded machine could outrun.
    const browser = spawn(chromium, [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
      `--user-data-dir=${tempDir('chromium')}`, `http://127.0.0.1:${port}/page.html`,
    ], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    browser.stderr.on('data', (c) => { stderr += c; });
    const exited = new Promise((resolve) => browser.on('exit', resolve));
    let timer;
    const timeout = new Promise((resolve) => { timer = setTimeout(resolve, 120_000); });
    await Promise.race([collected, exited, timeout]);
    clearTimeout(timer);
    browser.kill('SIGKILL');
    await exited;
    for (const where of WHERE) {
      const r = results[where];
      assert.ok(r, `${where}: no result (browser said: ${stderr.slice(-400)})`);
      assert.equal(r.error, undefined, `${where}: ${r.error}`);
      assert.deepEqual(r.interval, [0, 9], where);
      assert.equal(r.code, 'unknown-format', where);
      assert.equal(r.progress, 40, where);
      assert.equal(r.lines, expected, `${where}: verdicts differ from native`);
      assert.equal(r.timeline, timeline, `${where}: the lease timeline differs from native`);
      assert.equal(r.vectors, vectors, `${where}: the shared vectors' outcomes differ from Node's`);
      assert.equal(r.answers.length, corpus.queries.length, where);
      corpus.queries.forEach((q, i) => {
        const want = comparableError(corpus.expected[i]);
        assert.equal(JSON.stringify(r.answers[i].ok ?? null), JSON.stringify(want.ok ?? null), `${where}: ${JSON.stringify(q)}`);
        assert.deepEqual(r.answers[i].error ?? null, want.error ?? null, `${where}: ${JSON.stringify(q)}`);
      });
    }
  } finally {
    server.close();
  }
});
