// `git-locks web --port 0` on a repository made with the real CLI: it prints
// its URL as one JSON line, serves the page and a live bundle on 127.0.0.1,
// and the page verifies again when refs/locks/state moves. The screenshot
// of the refreshed page is the one in the README (docs/web.png).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { test } from 'node:test';

import { artifact, cli, cliRepo, launch, siteDir, verdictOf } from './support.mjs';

function startWeb(repo) {
  const child = spawn(cli, ['--repo', repo, 'web', '--port', '0', '--site', siteDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => { stderr += c; });
  const line = new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', (l) => resolve(JSON.parse(l)));
    child.once('exit', (code) => reject(new Error(`git-locks web exited ${code}: ${stderr}`)));
  });
  return { child, line };
}

test('git-locks web serves a live repository and refreshes when the ref moves', async () => {
  const store = await cliRepo('live');
  const { child, line } = startWeb(store.repo);
  let context;
  try {
    const info = await line;
    assert.equal(info.op, 'web');
    assert.match(info.url, /^http:\/\/127\.0\.0\.1:\d+\/\?bundle=live\.bundle&live=1$/);
    assert.ok(info.port > 0);
    // The live endpoints, straight.
    const live = await (await fetch(`http://127.0.0.1:${info.port}/live.json`)).json();
    assert.equal(live.tip, fs.readFileSync(path.join(store.repo, '.git', 'refs', 'locks', 'state'), 'utf8').trim());
    const bundle = Buffer.from(await (await fetch(`http://127.0.0.1:${info.port}/live.bundle`)).arrayBuffer());
    assert.match(bundle.subarray(0, 20).toString('latin1'), /^# v[23] git bundle\n/);

    context = await launch();
    const page = await context.newPage();
    await page.goto(info.url);
    let v = await verdictOf(page, 120_000);
    assert.equal(v.verdict, 'valid', v.summary);
    assert.equal(v.count, `${store.commits} of ${store.commits} commits`);

    // Move the ref: two more transitions by the real CLI.
    store.gl('alice', 'claim', '--ttl', '10m', 'lib/core.cpp');
    store.gl('bob', 'claim', '--mode', 'shared', '--ttl', '10m', 'docs/guide.md');
    const tip = fs.readFileSync(path.join(store.repo, '.git', 'refs', 'locks', 'state'), 'utf8').trim();
    await page.waitForFunction((t) => document.getElementById('live').dataset.tip === t, tip, { timeout: 60_000 });
    await page.waitForFunction((n) => document.getElementById('count').textContent === `${n} of ${n} commits`,
      store.commits + 2, { timeout: 120_000 });
    v = await verdictOf(page, 120_000);
    assert.equal(v.verdict, 'valid', v.summary);
    assert.match(v.summary, new RegExp(`Tip ${tip.slice(0, 12)}`));
    await page.screenshot({ path: artifact('live.png'), fullPage: true });
  } finally {
    if (context) await context.close();
    child.kill('SIGTERM');
  }
});

test('git-locks web listens on 127.0.0.1 only and refuses a bad port', async () => {
  const store = await cliRepo('port');
  const bad = spawn(cli, ['--repo', store.repo, 'web', '--port', '70000', '--site', siteDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  bad.stderr.on('data', (c) => { err += c; });
  // 'close', not 'exit': stderr may still be unread when the process exits.
  const code = await new Promise((resolve) => bad.on('close', resolve));
  assert.equal(code, 64);
  assert.equal(JSON.parse(err.trim()).code, 'usage');
  const { child, line } = startWeb(store.repo);
  try {
    const info = await line;
    const sock = fs.readFileSync('/proc/net/tcp', 'utf8').split('\n')
      .find((l) => l.includes(`:${info.port.toString(16).toUpperCase().padStart(4, '0')} `) && l.includes(' 0A '));
    assert.ok(sock, 'no listening socket found');
    assert.match(sock.trim().split(/\s+/)[1], /^0100007F:/);
  } finally {
    child.kill('SIGTERM');
  }
});
