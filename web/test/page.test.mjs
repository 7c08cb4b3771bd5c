// The verification page in headless Chromium, served by a plain static
// server: a history made with the real CLI is all green with the right
// counts; a generated history tampered at one commit flags that commit with
// the native reference's reason; a large history keeps the page responsive
// and ends with the progress bar at 100 %. Screenshots go to the artifacts
// folder. GITLOCKS_WEB_BIG_COMMITS sets the size of the large history
// (default 1500; the 20,000-commit run is documented in web/README.md).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { after, before, test } from 'node:test';

import {
  artifact, bundleOf, cliRepo, genBundle, launch, nativeVerdicts, run, serveSite, siteDir, verdictOf,
} from './support.mjs';

let context;
let site;
const bundles = {};

before(async () => {
  assert.ok(fs.existsSync(path.join(siteDir, 'pkg', 'browser.mjs')), `no site in ${siteDir}: build the wasm preset`);
  const cliStore = await cliRepo('cli');
  bundles['/cli.bundle'] = bundleOf(cliStore.repo, path.join(cliStore.dir, 'cli.bundle'));
  bundles.cliCommits = cliStore.commits;
  bundles.cliTickets = cliStore.tickets;
  bundles['/gen.bundle'] = genBundle('gen', ['--commits', '120', '--seed', '5']).bundle;
  bundles['/tampered.bundle'] = genBundle('tampered', ['--commits', '80', '--seed', '6', '--tamper', '40:state-byte']).bundle;
  // A store with a cut after its 60th commit (docs/FORMAT.md "The cut"): the bundle of
  // refs/locks/state alone holds the cut and the 29 commits after it.
  const cut = genBundle('cut', ['--commits', '90', '--seed', '8', '--checkpoint-every', '30', '--cut-every', '60']);
  const cutRepo = path.join(cut.dir, 'repo.git');
  run('git', ['init', '-q', '--bare', cutRepo]);
  run('git', ['-C', cutRepo, 'fetch', '-q', cut.bundle, 'refs/locks/*:refs/locks/*']);
  bundles['/cut-tail.bundle'] = path.join(cut.dir, 'tail.bundle');
  run('git', ['-C', cutRepo, 'bundle', 'create', '-q', bundles['/cut-tail.bundle'], 'refs/locks/state'],
    { stdio: 'ignore' });
  const big = Number(process.env.GITLOCKS_WEB_BIG_COMMITS || 1500);
  bundles.bigCommits = big;
  bundles['/big.bundle'] = genBundle('big', ['--commits', String(big), '--seed', '7']).bundle;
  const files = Object.fromEntries(Object.entries(bundles).filter(([k]) => k.startsWith('/')));
  site = await serveSite(files);
  context = await launch();
});

after(async () => {
  if (context) await context.close();
  if (site) site.server.close();
});

test('a history made with the real CLI is all green, with the right counts', async () => {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${site.base}/?bundle=cli.bundle`);
  const v = await verdictOf(page, 120_000);
  await page.screenshot({ path: artifact('valid-cli.png'), fullPage: true });
  assert.deepEqual(errors, []);
  assert.equal(v.verdict, 'valid', v.summary);
  assert.match(v.summary, new RegExp(`all ${bundles.cliCommits} commits verified`));
  assert.equal(v.count, `${bundles.cliCommits} of ${bundles.cliCommits} commits`);
  assert.equal(v.badRows.length, 0);
  assert.equal(v.progress, 100);
  assert.equal(v.progressText, '100 %');
  assert.match(v.owner, /^[0-9a-f]{64}$/);
  assert.ok(v.bars >= 6, `timeline bars: ${v.bars}`);
  // alice's src/a.c handed to bob: her bar ends with the hand-off mark, bob's begins there.
  const handoffMarks = await page.$$eval('#timeline .mark.handoff', (ms) => ms.map((m) => m.textContent));
  assert.equal(handoffMarks.length, 1, JSON.stringify(handoffMarks));
  assert.match(handoffMarks[0], /^handed off to bob at /);
  // carol's intent on src/ (over bob's lock below it) is drawn as an intent.
  assert.equal(await page.locator('#timeline .bar.intent').count(), 1);
  // The table shows the resources each transition touched.
  const cells = await page.$$eval('#transitions tbody tr', (trs) => trs.map((tr) => [tr.cells[2].textContent, tr.cells[4].textContent]));
  assert.ok(cells.some(([cmd, res]) => cmd === 'claim' && res.includes('src/a.c') && res.includes('src/b.c')), JSON.stringify(cells));
  assert.ok(cells.some(([, res]) => res.includes('sem:ci')), JSON.stringify(cells));
  // Filtering by resource narrows the table.
  await page.fill('#filter', 'docs');
  assert.equal(await page.textContent('#count'), `2 of ${bundles.cliCommits} commits`);
  // Expected pins: the store has no guard time, so pinning a notary makes it invalid.
  await page.fill('#filter', '');
  await page.fill('#pin-audience', 'notary.example');
  await page.fill('#pin-key', 'ab'.repeat(32));
  await page.click('#reverify');
  const pinned = await verdictOf(page, 120_000);
  assert.equal(pinned.verdict, 'invalid', pinned.summary);
  assert.match(pinned.summary, /pins-mismatch — the expected notary pins \(notary\.example \/ (ab){32}\) are not in force: the store has no guard time/);
  // The core's verdict: the tip is the invalid commit, and only the tip.
  assert.deepEqual(pinned.badRows.map((r) => [r.index, r.reason.split(':')[0]]), [[bundles.cliCommits - 1, 'pins-mismatch']]);
  // The owner pin: another key makes the root invalid (owner-mismatch); the right key is valid again.
  await page.fill('#pin-audience', '');
  await page.fill('#pin-key', '');
  const other = v.owner.replace(/^./, (c) => (c === '0' ? '1' : '0'));
  await page.fill('#pin-owner', other);
  await page.click('#reverify');
  const wrongOwner = await verdictOf(page, 120_000);
  assert.equal(wrongOwner.verdict, 'invalid', wrongOwner.summary);
  assert.deepEqual(wrongOwner.badRows.map((r) => [r.index, r.reason.split(':')[0]]), [[0, 'owner-mismatch']]);
  assert.match(wrongOwner.summary, new RegExp(`the store's owner is ${v.owner}, expected ${other}`));
  await page.fill('#pin-owner', v.owner);
  await page.click('#reverify');
  assert.equal((await verdictOf(page, 120_000)).verdict, 'valid');
  await page.close();
});

// The ticket's TTL a waiter takes (docs/CLI.md "Waiting"), and the page's time format (UTC).
const TICKET_TTL_MS = 30_000;
const fmt = (ms) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

test('each waiter\'s ticket is a waiting bar on the lane it waited for, ending as it left the queue', async () => {
  const page = await context.newPage();
  await page.goto(`${site.base}/?bundle=cli.bundle`);
  assert.equal((await verdictOf(page, 120_000)).verdict, 'valid');
  await page.screenshot({ path: artifact('tickets-cli.png'), fullPage: true });
  // What cliRepo's waiters did (support.mjs): carol admitted to lib/x.c;
  // dave killed and his ticket dropped by erin after its expiry; erin gave
  // up on lib/ after 1 s, gus on a slot of semaphore ci (lane sem:ci);
  // frank (lib/x.c and README.md, shared) killed with
  // his ticket still in the queue. A ticket is drawn on the lane of each
  // path it wants, a directory's lane named as its lease is (lib/ -> lib).
  const t = bundles.cliTickets;
  assert.deepEqual(Object.keys(t).sort(), ['carol', 'dave', 'erin', 'frank', 'gus']);
  const wants = (k) => k.wants.map((w) => (w.sem ? `sem:${w.sem}` : w.mode === 'shared' ? `${w.path} (shared)` : w.path))
    .join(', ');
  const waited = (who, k) => `${who} waited (ticket #${k.seq}) for ${wants(k)} from ${fmt(k.start)} to ${fmt(k.end)}`;
  const expected = [
    { lane: 'lib/x.c', cls: 'wait admitted', title: `${waited('carol', t.carol)}: admitted` },
    { lane: 'lib/x.c', cls: 'wait lapsed', title: `${waited('dave', t.dave)}: ` +
        `lapsed (expired at ${fmt(t.dave.start + TICKET_TTL_MS)}), dropped by another actor` },
    { lane: 'lib', cls: 'wait gave-up', title: `${waited('erin', t.erin)}: gave up` },
    { lane: 'sem:ci', cls: 'wait gave-up', title: `${waited('gus', t.gus)}: gave up` },
    ...['lib/x.c', 'README.md'].map((lane) => ({ lane, cls: 'wait queued',
      title: `frank waits (ticket #${t.frank.seq}) for ${wants(t.frank)} since ${fmt(t.frank.start)}: ` +
        `still queued at the tip, its ticket expires at ${fmt(t.frank.start + TICKET_TTL_MS)}` })),
  ];
  const drawn = await page.evaluate(() => {
    const lanes = [...document.querySelectorAll('#timeline text.lane-label title')].map((l) => l.textContent);
    const rows = [...document.querySelectorAll('#timeline rect.lane')].map((r) => Number(r.getAttribute('y')));
    const laneAt = (y) => lanes[rows.findLastIndex((top) => top <= y)];
    const rect = (r) => ({
      lane: laneAt(Number(r.getAttribute('y'))), cls: r.getAttribute('class'), title: r.querySelector('title').textContent,
      x0: Number(r.getAttribute('x')), x1: Number(r.getAttribute('x')) + Number(r.getAttribute('width')),
    });
    return {
      lanes,
      waits: [...document.querySelectorAll('#timeline rect.wait')].map(rect),
      bars: [...document.querySelectorAll('#timeline rect.bar')].map(rect),
      end: Number(document.querySelector('#timeline text.axis.end').getAttribute('x')),
      legend: document.querySelector('.legend .key.wait')?.nextSibling.textContent.trim(),
    };
  });
  assert.deepEqual(drawn.waits.map(({ lane, cls, title }) => ({ lane, cls, title })), expected);
  const [carol, dave, erin, , frank, frankToo] = drawn.waits;
  // Carol's wait ends where her lease on lib/x.c begins (one transition).
  const lease = drawn.bars.find((b) => b.lane === 'lib/x.c' && / exclusive by carol; /.test(b.title));
  assert.ok(lease, JSON.stringify(drawn.bars.map((b) => b.title)));
  assert.equal(lease.x0, carol.x0);
  // Dave's ticket stood for a minute, until erin dropped it as she took hers.
  assert.ok(dave.x1 - dave.x0 > 10 * (carol.x1 - carol.x0), JSON.stringify([dave, carol]));
  assert.ok(Math.abs(dave.x1 - erin.x0) < 0.01, JSON.stringify([dave, erin]));
  // Frank's ticket stands at the tip: drawn to the end of the timeline.
  for (const f of [frank, frankToo]) assert.ok(Math.abs(f.x1 - drawn.end) < 0.01, JSON.stringify([f, drawn.end]));
  // The queue's record has no lane of its own; the legend names the bar.
  assert.ok(!drawn.lanes.includes('queue:tickets'), JSON.stringify(drawn.lanes));
  assert.equal(drawn.legend, 'waiting (a ticket in the queue)');
  // The table lists the queue's transitions: one `ticket` per waiter.
  const commands = await page.$$eval('#transitions tbody tr', (trs) => trs.map((tr) => tr.cells[2].textContent));
  assert.equal(commands.filter((c) => c === 'ticket').length, Object.keys(t).length, JSON.stringify(commands));
  await page.close();
});

test('a generated history with reclaims, extends and sweeps is all green', async () => {
  const page = await context.newPage();
  await page.goto(`${site.base}/?bundle=gen.bundle`);
  const v = await verdictOf(page, 300_000);
  await page.screenshot({ path: artifact('valid-generated.png'), fullPage: true });
  assert.equal(v.verdict, 'valid', v.summary);
  assert.match(v.count, /^120 of 120 commits$/);
  assert.equal(v.refusedMarks, 0);
  assert.ok(await page.locator('#timeline .mark.reclaim').count() > 0, 'no reclaim marked');
  await page.close();
});

test('a bundle of the chain since a cut starts at the cut and says so', async () => {
  const expected = nativeVerdicts(bundles['/cut-tail.bundle']);
  assert.equal(expected.length, 30);
  assert.equal(expected[0].command, 'checkpoint');
  assert.ok(expected.every((v) => v.ok));
  const page = await context.newPage();
  await page.goto(`${site.base}/?bundle=cut-tail.bundle`);
  const v = await verdictOf(page, 300_000);
  await page.screenshot({ path: artifact('cut-tail.png'), fullPage: true });
  assert.equal(v.verdict, 'valid', v.summary);
  assert.match(v.count, /^30 of 30 commits$/);
  assert.match(v.summary, new RegExp(`Starts at the cut ${expected[0].commit.slice(0, 12)}: the history before it ` +
    'is not in this bundle'));
  await page.close();
});

test('a tampered history flags the tampered commit with the native reason', async () => {
  const expected = nativeVerdicts(bundles['/tampered.bundle']).filter((v) => !v.ok);
  assert.ok(expected.length > 0);
  const page = await context.newPage();
  await page.goto(`${site.base}/?bundle=tampered.bundle`);
  let v = await verdictOf(page, 300_000);
  assert.equal(v.verdict, 'invalid', v.summary);
  await page.selectOption('#only', 'invalid');
  v = await verdictOf(page);
  await page.screenshot({ path: artifact('tampered.png'), fullPage: true });
  assert.equal(v.badRows.length, expected.length);
  assert.equal(v.badRows[0].commit, expected[0].commit);
  assert.equal(v.badRows[0].index, 40);
  assert.ok(v.badRows[0].reason.startsWith(expected[0].reason), `${v.badRows[0].reason} vs ${expected[0].reason}`);
  assert.match(v.summary, new RegExp(`the first is #40 ${expected[0].commit.slice(0, 12)} .*${expected[0].reason}`));
  assert.ok(v.refusedMarks > 0, 'no invalid mark on the timeline');
  const item = await page.textContent('#invalid-list li');
  assert.ok(item.includes(expected[0].reason));
  await page.close();
});

test('a large history keeps the page responsive and ends at 100 %', async () => {
  const page = await context.newPage();
  await page.goto(`${site.base}/`);
  // Measure the main thread's longest pause while the worker verifies.
  await page.evaluate(() => {
    window.maxGap = 0;
    window.samples = [];
    let last = performance.now();
    window.ticker = setInterval(() => {
      const now = performance.now();
      window.maxGap = Math.max(window.maxGap, now - last);
      last = now;
      window.samples.push(document.getElementById('progress').value);
    }, 50);
  });
  await page.setInputFiles('#file', bundles['/big.bundle']);
  const v = await verdictOf(page, 840_000);
  const { maxGap, samples } = await page.evaluate(() => ({ maxGap: window.maxGap, samples: window.samples }));
  await page.screenshot({ path: artifact('large.png'), fullPage: false });
  assert.equal(v.verdict, 'valid', v.summary);
  assert.equal(v.count, `${bundles.bigCommits} of ${bundles.bigCommits} commits`);
  assert.equal(v.progress, 100);
  assert.equal(v.progressText, '100 %');
  assert.ok(new Set(samples).size > 5, `the bar moved through ${[...new Set(samples)]}`);
  assert.ok(maxGap < 1000, `main thread blocked for ${maxGap} ms`);
  // Keyboard: the drop zone is focusable and the pager works.
  await page.focus('#drop');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'drop');
  await page.click('#next');
  assert.match(await page.textContent('#page-text'), /^page 2 of /);
  await page.close();
});

test('the lease timeline equals one derived from every whole state', async () => {
  // The independent derivation: the state of every commit, read whole with
  // the npm package in Node, diffed with the previous one.
  const gl = createRequire(import.meta.url)(path.join(siteDir, '..', '..', 'wasm', 'package', 'index.js'));
  await gl.init();
  const store = gl.openStore(fs.readFileSync(bundles['/gen.bundle']));
  const want = [];
  try {
    const { verdicts } = store.replay();
    const open = new Map();
    let prev = new Map();
    let lastTime = null;
    verdicts.forEach((v, i) => {
      const time = v.time ?? lastTime;
      if (v.time != null) lastTime = v.time;
      const cur = new Map();
      for (const r of store.readState(v.commit).records)
        for (const l of r.leases || []) cur.set(l.id, { resource: r.kind === 'sem' ? `sem:${r.name}` : r.name, l });
      const added = [];
      for (const [id, { resource, l }] of cur) {
        if (prev.has(id)) {
          if (prev.get(id).l.expires_at !== l.expires_at) want[open.get(id)].expires_at = l.expires_at;
          continue;
        }
        added.push(resource);
        open.set(id, want.length);
        want.push({ id, resource, holder: l.holder, generation: l.generation, start: time, startCommit: i,
          expires_at: l.expires_at, end: null, endKind: null });
      }
      for (const [id, { resource, l }] of prev) {
        if (cur.has(id)) continue;
        const lease = want[open.get(id)];
        lease.end = time;
        lease.endKind = added.includes(resource) && v.command !== 'sweep' ? 'reclaim' :
          time != null && time > l.expires_at ? 'expired' : 'release';
      }
      prev = cur;
    });
  } finally {
    store.delete();
  }
  assert.ok(want.length > 50, `${want.length} leases`);
  assert.ok(want.some((l) => l.endKind === 'reclaim') && want.some((l) => l.endKind === 'expired') &&
    want.some((l) => l.endKind === 'release'), 'every way a lease ends occurs');
  const page = await context.newPage();
  await page.goto(`${site.base}/?bundle=gen.bundle`);
  assert.equal((await verdictOf(page, 300_000)).verdict, 'valid');
  const got = await page.evaluate(() => globalThis.gitlocksPage.result().leases.map((l) => ({
    id: l.id, resource: l.resource, holder: l.holder, generation: l.generation, start: l.start,
    startCommit: l.start_commit, expires_at: l.expires_at, end: l.end, endKind: l.end_kind,
  })));
  assert.deepEqual(got, want);
  await page.close();
});

test('a bundle larger than the page verifies is refused at once with the limit named', async () => {
  const page = await context.newPage();
  const size = fs.statSync(bundles['/big.bundle']).size;
  assert.ok(size > 1048576, `the big bundle is ${size} bytes`);
  await page.goto(`${site.base}/?bundle=big.bundle&maxBundleMiB=1`);
  const v = await verdictOf(page, 30_000);
  assert.equal(v.verdict, 'unverifiable');
  const mib = (size / 1048576).toFixed(1);
  assert.equal(v.summary.trim(), `UNVERIFIABLE big.bundle: too-large: the bundle is ${mib} MiB, more than this page ` +
    'verifies (1 MiB): it would need about ' + `${((256 * 1048576 + size * 5.5) / 1048576).toFixed(1)} MiB in this tab. ` +
    'Verify it with `git-locks verify --full` (no size limit), or open the page with ' +
    `?maxBundleMiB=${Math.ceil(size / 1048576)} on a machine with the memory to spare`);
  assert.equal(v.progressText, '0 %');
  // Raised to its size, the same bundle verifies.
  await page.goto(`${site.base}/?bundle=big.bundle&maxBundleMiB=${Math.ceil(size / 1048576)}`);
  assert.equal((await verdictOf(page, 840_000)).verdict, 'valid');
  await page.close();
});
