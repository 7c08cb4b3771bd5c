// A PRIVATE store on the page (issue 10): without a member key the sealed
// commits are verified structurally and the page says so in the core's own
// words; with the owner's key (dropped as a file) verification is full, the
// per-commit levels equal `git-locks verify --json` with that key, and the
// timeline shows the decrypted paths; a later member's pasted seed, a
// non-member's key and a broken key each get their own honest verdict. Every
// request the page and its worker make is recorded: none carries the key,
// and nothing stores it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { artifact, bundleOf, cli, launch, run, serveSite, siteDir, tempDir, verdictOf } from './support.mjs';

const SECRET = 'secret/q3-budget.xlsx';
const PLAN = 'secret/plan/2027.md';
const NOTE = 'merger-talks-with-initech';
const STRUCTURAL_NOTE = 'structural verification only: not a semantic validation';

let context;
let site;
let store;
const requests = [];

// owner: init --private; alice added (epoch 2) claims and releases; bob
// added (epoch 3) claims; the owner claims too.
function privateRepo() {
  assert.ok(fs.existsSync(cli), `${cli} is missing: build the release preset first`);
  const dir = tempDir('private');
  const repo = path.join(dir, 'repo');
  run('git', ['init', '-q', repo]);
  let now = 1_700_000_000_000;
  const key = (who) => path.join(dir, `${who}.key`);
  const gl = (who, ...args) => {
    now += 1000;
    return run(cli, ['--repo', repo, '--key', key(who), '--json', ...args], {
      env: { ...process.env, GIT_LOCKS_NOW_MS: String(now) },
    });
  };
  const actor = (who) => JSON.parse(gl(who, 'whoami')).actor;
  gl('owner', 'init', '--private');
  const actors = { owner: actor('owner'), alice: actor('alice'), bob: actor('bob'), mallory: actor('mallory') };
  gl('owner', 'member', 'add', actors.alice);
  gl('alice', 'claim', '--ttl', '10m', '--note', NOTE, SECRET);
  gl('alice', 'sem', 'acquire', 'render-farm', '--limit', '2', '--ttl', '5m');
  gl('owner', 'member', 'add', actors.bob);
  gl('bob', 'claim', '--ttl', '10m', PLAN);
  gl('alice', 'release', SECRET);
  gl('owner', 'claim', '--mode', 'shared', '--ttl', '5m', 'docs/');
  const commits = Number(run('git', ['-C', repo, 'rev-list', '--count', 'refs/locks/state']).trim());
  return { dir, repo, key, actors, commits };
}

// `git-locks verify --json` with a key: verdicts and summary.
function nativeVerify(who) {
  const r = spawnSync(cli, ['--repo', store.repo, '--key', store.key(who), '--json', 'verify', '--full'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return {
    verdicts: r.stdout.trim().split('\n').map((l) => JSON.parse(l)),
    summary: JSON.parse(r.stderr.trim().split('\n').pop()),
  };
}

const seedOf = (who) => JSON.parse(fs.readFileSync(store.key(who), 'utf8')).seed;

before(async () => {
  assert.ok(fs.existsSync(path.join(siteDir, 'pkg', 'browser.mjs')), `no site in ${siteDir}: build the wasm preset`);
  store = privateRepo();
  const bundle = bundleOf(store.repo, path.join(store.dir, 'private.bundle'));
  site = await serveSite({ '/private.bundle': bundle });
  context = await launch();
  // Every request of every page and worker, as the browser sends it.
  context.on('request', (req) => {
    requests.push({ url: req.url(), method: req.method(), headers: req.headers(), body: req.postData() || '' });
  });
});

after(async () => {
  if (context) await context.close();
  if (site) site.server.close();
});

// Runs `action` (which makes the page verify again) and waits for that run.
async function rerun(page, action) {
  await page.evaluate(() => { document.body.dataset.state = 'waiting'; });
  await action();
  return pageState(page);
}

async function pageState(page) {
  const v = await verdictOf(page, 120_000);
  const extra = await page.evaluate(() => ({
    level: document.getElementById('level')?.dataset.level,
    levelText: document.getElementById('level')?.textContent,
    keyStatus: document.getElementById('member-key-status').textContent,
    lanes: [...document.querySelectorAll('#timeline .lane-label title')].map((t) => t.textContent),
    rowLevels: [...document.querySelectorAll('#transitions tbody tr')].map((tr) => tr.cells[6].textContent),
    resources: [...document.querySelectorAll('#transitions tbody tr')].map((tr) => tr.cells[4].textContent).join(' '),
    pasted: document.getElementById('member-key-text').value,
    stored: localStorage.length + sessionStorage.length,
  }));
  return { ...v, ...extra };
}

// The table's per-commit levels as native verify gives them.
function nativeRowLevels(who) {
  return nativeVerify(who).verdicts.map((v) => (v.level === 'structural' ? 'valid (structural)' : 'valid'));
}

test('a PRIVATE store: structural without a key, full with a member key, decrypted paths, key never sent', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${site.base}/?bundle=private.bundle`);

  // No key: every sealed commit structural, said in the core's words.
  let s = await pageState(page);
  await page.screenshot({ path: artifact('private-structural.png'), fullPage: true });
  assert.equal(s.verdict, 'valid', s.summary);
  assert.equal(s.level, 'structural');
  const mallory = nativeVerify('mallory').summary;
  assert.ok(s.levelText.startsWith(`${mallory.structural} of ${store.commits} commits: ${STRUCTURAL_NOTE} (`), s.levelText);
  assert.match(s.levelText, /enter a member key for full verification/);
  assert.deepEqual(s.rowLevels, nativeRowLevels('mallory'));
  assert.ok(!s.resources.includes('secret/') && !s.lanes.some((l) => l.includes('secret/')), 'paths without a key?');
  // The pins in force are in the clear: the owner key is shown, and pinning it works.
  assert.equal(s.owner, store.actors.owner);
  await page.fill('#pin-owner', store.actors.owner);
  s = await rerun(page, () => page.click('#reverify'));
  assert.equal(s.verdict, 'valid', s.summary);
  // Another owner key: the core refuses the root (owner-mismatch), structurally too.
  await page.fill('#pin-owner', 'ff'.repeat(32));
  s = await rerun(page, () => page.click('#reverify'));
  assert.equal(s.verdict, 'invalid', s.summary);
  assert.match(s.summary, new RegExp(`owner-mismatch — the store's owner is ${store.actors.owner}, expected ${'ff'.repeat(32)}`));
  await page.fill('#pin-owner', '');

  // The owner's key file, chosen in the key input: full, as native verify with it.
  s = await rerun(page, () => page.setInputFiles('#member-key-file', store.key('owner')));
  await page.screenshot({ path: artifact('private-full.png'), fullPage: true });
  assert.deepEqual(errors, []);
  assert.equal(s.verdict, 'valid', s.summary);
  assert.equal(s.level, 'full', s.levelText);
  assert.equal(nativeVerify('owner').summary.structural, 0);
  assert.match(s.levelText, new RegExp(`^Full verification with the member key of ${store.actors.owner.slice(0, 16)}`));
  assert.ok(!s.summary.includes(STRUCTURAL_NOTE), s.summary);
  assert.deepEqual(s.rowLevels, nativeRowLevels('owner'));
  assert.match(s.keyStatus, /read from owner\.key; it stays in this page/);
  // The timeline and the table show the decrypted paths.
  for (const p of [SECRET, PLAN, 'docs', 'sem:render-farm']) assert.ok(s.lanes.includes(p), `lane ${p} missing: ${s.lanes}`);
  assert.ok(s.resources.includes(SECRET), s.resources);
  const bar = await page.$$eval('#timeline rect.bar title', (ts) => ts.map((t) => t.textContent));
  assert.ok(bar.some((t) => t.startsWith(`${SECRET} — generation 1, exclusive`)), JSON.stringify(bar));

  // Bob's bare seed, pasted: full for his epochs, structural before; the textarea is emptied.
  await page.fill('#member-key-text', seedOf('bob'));
  s = await rerun(page, () => page.click('#member-key-use'));
  assert.equal(s.pasted, '');
  assert.equal(s.level, 'structural');
  const bob = nativeVerify('bob').summary;
  assert.ok(bob.structural > 0 && bob.structural < mallory.structural);
  assert.ok(s.levelText.startsWith(`${bob.structural} of ${store.commits} commits: ${STRUCTURAL_NOTE} (epochs the member key of ${store.actors.bob.slice(0, 16)}`), s.levelText);
  assert.deepEqual(s.rowLevels, nativeRowLevels('bob'));
  assert.ok(s.lanes.includes(PLAN), `bob sees his own claim: ${s.lanes}`);

  // A non-member's key file: structural, and the page says the key is no member's.
  await page.fill('#member-key-text', fs.readFileSync(store.key('mallory'), 'utf8'));
  s = await rerun(page, () => page.click('#member-key-use'));
  assert.equal(s.level, 'structural');
  assert.match(s.levelText, new RegExp(`the key of ${store.actors.mallory.slice(0, 16)}… is not a member of this PRIVATE store`));
  assert.deepEqual(s.rowLevels, nativeRowLevels('mallory'));

  // Something that is no key at all: refused, without quoting it.
  const broken = seedOf('alice').slice(0, 40);
  await page.fill('#member-key-text', broken);
  s = await rerun(page, () => page.click('#member-key-use'));
  assert.equal(s.verdict, 'unverifiable');
  assert.match(s.keyStatus, /This key cannot be used: member key: not a git-locks actor key/);
  assert.ok(!s.summary.includes(broken.slice(0, 12)) && !s.keyStatus.includes(broken.slice(0, 12)));

  // Forgetting the key: structural again.
  s = await rerun(page, () => page.click('#member-key-forget'));
  assert.equal(s.level, 'structural');
  assert.match(s.keyStatus, /^No member key/);
  assert.equal(s.stored, 0, 'the page stored something');
  await page.close();

  // The page and its workers were observed (the module is fetched by the
  // worker), and no request carried any of the keys, in any form.
  assert.ok(requests.some((r) => r.url.endsWith('/pkg/gitlocks-core.wasm')), JSON.stringify(requests.map((r) => r.url)));
  assert.ok(requests.some((r) => r.url.endsWith('/private.bundle')));
  const secrets = ['owner', 'bob', 'mallory', 'alice'].flatMap((who) => {
    const seed = seedOf(who);
    return [seed, seed.toUpperCase(), seed.slice(0, 24), seed.slice(-24)];
  });
  for (const r of requests) {
    assert.ok(r.url.startsWith(site.base), `a request left the page's origin: ${r.url}`);
    assert.equal(r.method, 'GET', `${r.method} ${r.url}`);
    const sent = [r.url, decodeURIComponent(r.url), JSON.stringify(r.headers), r.body].join('\n');
    for (const k of secrets) assert.ok(!sent.includes(k), `a request carries a key: ${r.method} ${r.url}`);
  }
});
