// Figures of the verification page in headless Chromium (issue 16, goal 6),
// printed as a table; asserts nothing. For each history size:
//   - the bundle (bytes, bytes per commit), made by gitlocks-gen-history;
//   - the native core's replay of that bundle with the lease timeline
//     (gitlocks-native-replay --timeline: open the bundle in memory, replay
//     every commit, the timeline in the same run), timed in the same run;
//   - the page: opened with ?bundle=, in a fresh browser per size, the
//     worker's own timings (open; replay and timeline, one pass), the peak RSS of
//     the tab (VmHWM of the renderer process, which runs the page and its
//     worker), how many distinct values the progress bar showed, and whether
//     its verdicts (commit, ok, reason of every commit) equal the native ones;
//   - WASM replay vs native replay, commits/s (goal >= 0.5x), and the tab's
//     peak (goal < 512 MiB at 200,000 commits).
// A bundle the page refuses as too large is reported with the page's message.
//
//   node web/bench/page_bench.mjs [--commits 1000,10000,20000] [--seed 42]
//                                 [--bundle FILE ...] [--max-mib N]
// (--max-mib raises the page's size limit, ?maxBundleMiB=, to measure beyond it)
//
// Needs the wasm preset's site (build/wasm/web/site), its dev dependencies
// (build/wasm/web/dev, made by the web tests' set-up) and the release
// preset's native helpers. Bundles are cached in build/wasm/web/bench-cache.
import crypto from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { genHistory, launch, nativeReplay, serveSite, siteDir, sourceDir } from '../test/support.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const sizes = opt('--commits', '1000,10000,20000').split(',').filter(Boolean).map(Number);
const seed = opt('--seed', '42');
const extraBundles = args.flatMap((a, i) => (a === '--bundle' ? [args[i + 1]] : []));
// The page's own size limit, raised to measure what lies beyond it.
const maxMiB = opt('--max-mib', null);
const cache = path.join(sourceDir, 'build', 'wasm', 'web', 'bench-cache');
fs.mkdirSync(cache, { recursive: true });

const mib = (n) => n / 1048576;
const digest = (lines) => crypto.createHash('sha256').update(lines.join('\n')).digest('hex');

function bundleFor(n) {
  const file = path.join(cache, `h${n}-s${seed}.bundle`);
  if (!fs.existsSync(file)) {
    process.stderr.write(`generating ${n} commits (seed ${seed})...\n`);
    execFileSync(genHistory, ['--commits', String(n), '--seed', seed, '--bundle', `${file}.tmp`], { stdio: 'ignore' });
    fs.renameSync(`${file}.tmp`, file);
  }
  return file;
}

// The native reference: wall time, CPU time, peak RSS and verdict digest of
// the same work the page does (the replay and the core's lease timeline:
// gitlocks-native-replay --timeline).
function native(bundle) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S %M', nativeReplay, '--bundle', bundle, '--timeline'],
    { encoding: 'utf8', maxBuffer: 1 << 30 });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0 && r.status !== 1) throw new Error(`native replay failed: ${r.stderr}`);
  const [user, sys, kb] = r.stderr.trim().split('\n').pop().split(' ').map(Number);
  const { verdicts } = JSON.parse(r.stdout);
  return {
    wall, cpu: user + sys, rssMiB: kb / 1024, commits: verdicts.length,
    invalid: verdicts.filter((v) => !v.ok).length,
    digest: digest(verdicts.map((v) => `${v.commit} ${v.ok} ${v.reason || ''}`)),
  };
}

// Every process below `pid`.
function descendants(pid) {
  const children = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!children.has(ppid)) children.set(ppid, []);
      children.get(ppid).push(Number(d));
    } catch {
      // gone
    }
  }
  const out = [];
  const walk = (p) => {
    for (const c of children.get(p) || []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

// The renderers among them, with their peak RSS (VmHWM) in MiB.
function renderers() {
  const out = [];
  for (const p of descendants(process.pid)) {
    try {
      const cmd = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8');
      if (!cmd.includes('--type=renderer')) continue;
      const status = fs.readFileSync(`/proc/${p}/status`, 'utf8');
      const hwm = Number(/VmHWM:\s+(\d+)/.exec(status)[1]) / 1024;
      out.push({ pid: p, hwm });
    } catch {
      // gone
    }
  }
  return out;
}

async function page(bundle) {
  const site = await serveSite({ '/h.bundle': bundle });
  const context = await launch();
  try {
    const tab = context.pages()[0] || (await context.newPage());
    const errors = [];
    tab.on('pageerror', (e) => errors.push(e.message));
    const t0 = Date.now();
    await tab.goto(`${site.base}/?bundle=h.bundle${maxMiB ? `&maxBundleMiB=${maxMiB}` : ''}`);
    const progress = new Set();
    let peak = 0;
    for (;;) {
      const s = await tab.evaluate(() => ({
        state: document.body.dataset.state, value: document.getElementById('progress').value,
        label: document.getElementById('progress-label').textContent,
      }));
      if (s.state === 'running') progress.add(`${s.value} ${s.label}`);
      for (const r of renderers()) peak = Math.max(peak, r.hwm);
      if (s.state === 'done') break;
      if (Date.now() - t0 > 3_600_000) throw new Error('the page did not finish within an hour');
      await new Promise((r) => setTimeout(r, 250));
    }
    const wall = (Date.now() - t0) / 1000;
    for (const r of renderers()) peak = Math.max(peak, r.hwm);
    const out = await tab.evaluate(() => {
      const s = document.getElementById('summary');
      const r = globalThis.gitlocksPage && globalThis.gitlocksPage.result();
      return {
        verdict: s.dataset.verdict, summary: s.textContent,
        timings: r ? r.timings : null,
        lines: r ? r.transitions.map((t) => `${t.commit} ${t.ok} ${t.reason || ''}`) : null,
        commits: r ? r.summary.commits : null,
      };
    });
    return { ...out, wall, peak, progress: progress.size, errors, digest: out.lines ? digest(out.lines) : null };
  } finally {
    await context.close();
    site.server.close();
  }
}

if (!fs.existsSync(path.join(siteDir, 'index.html'))) throw new Error(`no site in ${siteDir}: build the wasm preset`);
const inputs = sizes.map((n) => ({ name: `${n} commits`, file: bundleFor(n) }))
  .concat(extraBundles.map((f) => ({ name: path.basename(f), file: f })));
const rows = [];
for (const { name, file } of inputs) {
  const bytes = fs.statSync(file).size;
  process.stderr.write(`${name}: native replay...\n`);
  const nat = native(file);
  process.stderr.write(`${name}: page...\n`);
  const pg = await page(file);
  rows.push({ name, bytes, nat, pg });
  const t = pg.timings;
  const ratio = t && nat.cpu > 0 ? nat.cpu / ((t.open_ms + t.replay_ms) / 1000) : null;
  console.log(JSON.stringify({
    history: name, commits: nat.commits, bundle_mib: +mib(bytes).toFixed(1), bytes_per_commit: Math.round(bytes / nat.commits),
    native_replay_s: +nat.cpu.toFixed(2), native_rss_mib: +nat.rssMiB.toFixed(1),
    page_verdict: pg.verdict, page_wall_s: +pg.wall.toFixed(1), page_timings_ms: t,
    wasm_vs_native: ratio == null ? null : +ratio.toFixed(2), tab_peak_mib: +pg.peak.toFixed(1),
    progress_values: pg.progress, verdicts_equal: pg.digest == null ? null : pg.digest === nat.digest,
    page_errors: pg.errors, summary: pg.verdict === 'valid' ? undefined : pg.summary,
  }));
}

console.log('\nverification page in headless Chromium (one fresh browser per history)');
console.log('| history | bundle | B/commit | native open + replay (CPU) | page open + replay (WASM) | WASM/native | page total | tab peak RSS | progress values | verdicts = native |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const { name, bytes, nat, pg } of rows) {
  const t = pg.timings;
  const refused = pg.verdict !== 'valid' && pg.verdict !== 'invalid';
  const ratio = t && nat.cpu > 0 ? nat.cpu / ((t.open_ms + t.replay_ms) / 1000) : null;
  console.log(`| ${name} | ${mib(bytes).toFixed(1)} MiB | ${Math.round(bytes / nat.commits)} | ` +
    `${nat.cpu.toFixed(2)} s (${nat.cpu > 0 ? `${Math.round(nat.commits / nat.cpu)}/s` : 'below the 10 ms resolution of time(1)'}) | ` +
    `${refused ? `refused: ${pg.summary.trim()}` : t ? `${((t.open_ms + t.replay_ms) / 1000).toFixed(2)} s (${Math.round(nat.commits / ((t.open_ms + t.replay_ms) / 1000))}/s)` : '?'} | ` +
    `${ratio == null || refused ? '—' : `${ratio.toFixed(2)}× (goal ≥ 0.5×: ${ratio >= 0.5 ? 'met' : 'MISSED'})`} | ` +
    `${pg.wall.toFixed(1)} s | ${pg.peak.toFixed(0)} MiB | ${pg.progress} | ` +
    `${pg.digest == null ? '?' : pg.digest === nat.digest ? 'yes' : 'NO'} |`);
}
const big = rows.find((r) => r.nat.commits >= 200000);
console.log(big ?
  `goal: a 200,000-commit bundle verified with the tab below 512 MiB: ${big.pg.verdict === 'valid' && big.pg.peak < 512 ? 'met' : 'MISSED'} (tab peak ${big.pg.peak.toFixed(0)} MiB, ${big.pg.verdict})` :
  'goal: a 200,000-commit bundle verified with the tab below 512 MiB: not measured in this run (--commits 200000 or --bundle FILE)');
