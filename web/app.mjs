// The page: loads a bundle (drop, file chooser, ?bundle=URL, or the live
// bundle of `git-locks web`), hands it to worker.mjs, and shows the verdict
// (with its level: full, or structural only for the sealed commits of a
// PRIVATE store verified without a member key), the pins in force, the
// timeline of leases and the table of transitions. A member key, dropped or
// pasted, is held in this page and given to the worker only: no request
// ever carries it, and nothing stores it.
// Query parameters: bundle=URL, live=1 (poll live.json and verify again when
// the tip moves), audience=, serviceKey=, owner= (expected pins), testClock=1,
// maxBundleMiB=N (the largest bundle the page tries; default below).
//
// The bundle stays a Blob (a File, or a fetched body) in this page: only the
// worker reads its bytes, so the tab holds them once, not three times.
// Scripts driving the page (the benchmark, tests) read the last result with
// gitlocksPage.result().

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const PAGE_SIZE = 100;
const SVG = 'http://www.w3.org/2000/svg';

const view = { result: null, page: 0, rows: [] };
let worker = null;
// The bundle (a Blob) and where it came from, for verifying again.
let bytes = null;
let bytesSource = null;
// Bundles above this size are refused before they are read: verifying one
// takes about TAB_BASE_MIB + MEMORY_PER_BUNDLE_BYTE x its size in the tab
// (measured with web/bench/page_bench.mjs: 318, 389 and 1,057 MiB for
// bundles of 15.7, 31.3 and 146.4 MiB; see README.md), and a tab that runs
// out of memory is killed without a word. `git-locks verify` has no limit.
const TAB_BASE_MIB = 256;
const MEMORY_PER_BUNDLE_BYTE = 5.5;
const DEFAULT_MAX_BUNDLE_MIB = 64;
const maxBundleMiB = Number(params.get('maxBundleMiB')) > 0 ? Number(params.get('maxBundleMiB')) : DEFAULT_MAX_BUNDLE_MIB;
let liveTip = null;
// The member key's bytes (a key file's contents or a pasted seed), or null.
// The worker gets a transferred copy, which it zeroes when it is done.
let memberKey = null;

// ---------------------------------------------------------------- loading

function expectedPins() {
  const audience = $('pin-audience').value.trim();
  const serviceKey = $('pin-key').value.trim().toLowerCase();
  const owner = $('pin-owner').value.trim().toLowerCase();
  return { pins: audience || serviceKey ? { audience, serviceKey } : null, owner: owner || null };
}

const mibText = (n) => `${(n / 1048576).toFixed(1)} MiB`;

function verify(blob, source) {
  bytes = blob;
  bytesSource = source;
  $('reverify').disabled = false;
  if (worker) worker.terminate();
  worker = null;
  if (blob.size > maxBundleMiB * 1048576) {
    setProgress(0, 1, 'failed');
    showError({
      code: 'too-large',
      message: `the bundle is ${mibText(blob.size)}, more than this page verifies (${maxBundleMiB} MiB): ` +
        `it would need about ${mibText(TAB_BASE_MIB * 1048576 + blob.size * MEMORY_PER_BUNDLE_BYTE)} in this tab. ` +
        'Verify it with `git-locks verify --full` (no size limit), or open the page with ' +
        `?maxBundleMiB=${Math.ceil(blob.size / 1048576)} on a machine with the memory to spare`,
    }, source);
    document.body.dataset.state = 'done';
    return;
  }
  worker = new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
  const { pins, owner } = expectedPins();
  document.body.dataset.state = 'running';
  setProgress(0, 1, 'verify');
  $('summary').className = 'summary none';
  $('summary').textContent = `Verifying ${source}…`;
  const started = performance.now();
  worker.onmessage = ({ data }) => {
    if (data.type === 'progress') {
      setProgress(data.done, data.total, data.phase);
    } else if (data.type === 'result') {
      setProgress(1, 1, 'done');
      data.source = source;
      data.expectedOwner = owner;
      data.expectedPins = pins;
      data.ms = Math.round(performance.now() - started);
      show(data);
      document.body.dataset.state = 'done';
    } else {
      setProgress(0, 1, 'failed');
      if (data.message.startsWith('member key:')) $('member-key-status').textContent = `This key cannot be used: ${data.message}.`;
      showError(data, source);
      document.body.dataset.state = 'done';
    }
  };
  worker.onerror = (e) => {
    showError({ code: 'store-read', message: e.message || 'the worker failed to start' }, source);
    document.body.dataset.state = 'done';
  };
  // A Blob is passed by reference: the worker reads it, this page never does.
  const message = { bundle: blob, pins, owner, allowTestClock: $('test-clock').checked };
  const transfer = [];
  if (memberKey) {
    message.memberKey = memberKey.slice().buffer;
    transfer.push(message.memberKey);
  }
  worker.postMessage(message, transfer);
}

// ---------------------------------------------------------------- member key

function setMemberKey(key, how) {
  if (memberKey) memberKey.fill(0);
  memberKey = key && key.length ? key : null;
  $('member-key-forget').disabled = !memberKey;
  $('member-key-status').textContent = memberKey ?
    `Member key ${how}; it stays in this page.` :
    'No member key: PRIVATE stores are verified structurally.';
  if (bytes) verify(bytes, bytesSource);
}

function loadKeyFile(file) {
  file.arrayBuffer().then((b) => setMemberKey(new Uint8Array(b), `read from ${file.name}`));
}

async function fetchBundle(url) {
  const res = await fetch(url, { cache: 'no-store' });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.blob();
}

function loadUrl(url) {
  fetchBundle(url).then((b) => verify(b, url), (e) => showError({ code: 'store-read', message: e.message }, url));
}

function loadFile(file) {
  verify(file, file.name);
}

const short16 = (hex) => `${short(hex, 16)}…`;

// ---------------------------------------------------------------- progress

function setProgress(done, total, phase) {
  // One bar over the two passes: reading the bundle into the core's index
  // (the first tenth), then the replay with the timeline of leases.
  let fraction = total ? done / total : 0;
  if (phase === 'read') fraction *= 0.1;
  else if (phase === 'verify') fraction = 0.1 + fraction * 0.9;
  else if (phase === 'done') fraction = 1;
  const pct = Math.floor(fraction * 100);
  $('progress').value = pct;
  $('progress-text').textContent = `${pct} %`;
  $('progress-label').textContent =
    phase === 'read' ? `Reading the bundle: ${mibText(done)} of ${mibText(total)}` :
    phase === 'verify' ? `Verifying commit ${done} of ${total}` :
    phase === 'done' ? 'Verification finished' : phase === 'failed' ? 'Verification failed' : 'Waiting for a bundle';
}

// ---------------------------------------------------------------- summary

const fmtTime = (ms) => (ms == null ? '—' : new Date(ms).toISOString().replace('T', ' ').replace('Z', ''));
const short = (hex, n = 12) => (hex ? hex.slice(0, n) : '—');

function text(tag, content, attrs = {}) {
  const el = document.createElement(tag);
  if (content != null) el.textContent = content;
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  return el;
}

function showError(e, source) {
  const s = $('summary');
  s.className = 'summary unverifiable';
  s.replaceChildren(text('strong', 'UNVERIFIABLE'), ` ${source}: ${e.code}: ${e.message}`);
  s.dataset.verdict = 'unverifiable';
  $('timeline-section').hidden = true;
  $('table-section').hidden = true;
  $('pins-in-force').hidden = true;
}

function show(r) {
  view.result = r;
  const { summary, pins } = r;
  const s = $('summary');
  // The expected owner and notary pins are the core's rules (the worker
  // passes them to the replay): a mismatch is an invalid commit, the root's
  // owner-mismatch or the tip's pins-mismatch, like any other.
  let verdict;
  let why;
  if (summary.commits === 0) {
    verdict = 'unverifiable';
    why = 'the bundle holds no commits';
  } else if (summary.invalid > 0) {
    verdict = 'invalid';
    const first = r.transitions.find((t) => !t.ok);
    why = `${summary.invalid} of ${summary.commits} commits are invalid; the first is #${first.index} ` +
      `${short(first.commit)} (${first.command}): ${first.reason}${first.detail ? ` — ${first.detail}` : ''}`;
  } else {
    verdict = 'valid';
    why = `all ${summary.commits} commits verified`;
  }
  s.className = `summary ${verdict}`;
  s.dataset.verdict = verdict;
  const parts = [text('strong', verdict.toUpperCase()), ` — ${why}. `,
    text('span', `Tip ${short(summary.tip)} of ${r.source}; ${r.leases.length} leases; ${(r.ms / 1000).toFixed(1)} s.`)];
  parts.push(levelLine(r));
  if (summary.cut_start) {
    // docs/FORMAT.md "The cut": a bundle of refs/locks/state alone after `checkpoint --cut`.
    parts.push(text('p', `Starts at the cut ${short(summary.cut_start)}: the history before it is not in this ` +
      'bundle, so the state there is taken from its owner\'s signed checkpoint (a bundle with ' +
      'refs/locks/archive/* is verified from the root).', { id: 'cut-start', class: 'checked' }));
  }
  if (r.expectedPins) {
    parts.push(text('p', `Checked against the expected notary pins: audience "${r.expectedPins.audience}", ` +
      `key ${short(r.expectedPins.serviceKey, 16)}….`, { class: 'checked' }));
  }
  if (r.expectedOwner) {
    parts.push(text('p', `Checked against the expected owner key ${short(r.expectedOwner, 16)}….`, { class: 'checked' }));
  }
  s.replaceChildren(...parts);

  const dl = $('pins-in-force');
  dl.replaceChildren();
  const row = (k, v, id) => {
    dl.append(text('dt', k), text('dd', v ?? 'none (no guard time)', { id, title: v ?? '' }));
  };
  row('Store', pins.store, 'pin-store-value');
  row('Owner key', pins.owner, 'pin-owner-value');
  row('Notary audience', pins.audience, 'pin-audience-value');
  row('Notary key', pins.serviceKey, 'pin-key-value');
  dl.hidden = false;

  $('timeline-section').hidden = false;
  $('table-section').hidden = false;
  const n = r.transitions.length;
  const ws = $('window-start');
  ws.max = String(Math.max(0, n - 1));
  const size = Number($('window-size').value) || n;
  ws.value = String(Math.max(0, n - size));
  renderTimeline();
  view.page = 0;
  filterRows();
}

// Full, or structural only (the core's note, word for word), and why.
function levelLine(r) {
  const { summary, member } = r;
  if (!summary.note) {
    const how = summary.private ?
      `Full verification with the member key of ${short16(member && member.actor)}: every sealed commit decrypted, ` +
        're-planned and checked.' :
      'Full verification: every commit re-planned and checked.';
    return text('p', how, { id: 'level', class: 'level full', 'data-level': 'full' });
  }
  let why;
  if (!member) why = 'sealed commits of a PRIVATE store; enter a member key for full verification';
  else if (!summary.member) why = `the key of ${short16(member.actor)} is not a member of this PRIVATE store`;
  else why = `epochs the member key of ${short16(member.actor)} cannot open; the other commits were verified in full`;
  return text('p', `${summary.structural} of ${summary.commits} commits: ${summary.note} (${why}).`,
    { id: 'level', class: 'level structural', 'data-level': 'structural' });
}

// ---------------------------------------------------------------- table

function filterRows() {
  const r = view.result;
  if (!r) return;
  const q = $('filter').value.trim().toLowerCase();
  const only = $('only').value;
  view.rows = r.transitions.filter((t) => {
    if (only === 'invalid' && t.ok) return false;
    if (only === 'valid' && !t.ok) return false;
    if (!q) return true;
    return [t.command, t.actor, t.commit, t.reason, t.detail, ...t.resources, String(t.index)]
      .some((f) => f && f.toLowerCase().includes(q));
  });
  view.page = Math.min(view.page, Math.max(0, Math.ceil(view.rows.length / PAGE_SIZE) - 1));
  renderTable();
}

function renderTable() {
  const tbody = $('transitions').tBodies[0];
  const pages = Math.max(1, Math.ceil(view.rows.length / PAGE_SIZE));
  const rows = view.rows.slice(view.page * PAGE_SIZE, (view.page + 1) * PAGE_SIZE);
  tbody.replaceChildren(...rows.map((t) => {
    const tr = document.createElement('tr');
    tr.className = t.ok ? 'ok' : 'bad';
    tr.dataset.commit = t.commit;
    tr.append(
      text('td', String(t.index)),
      text('td', fmtTime(t.time)),
      text('td', t.command),
      text('td', short(t.actor, 10), { title: t.actor }),
      text('td', t.resources.join(', ') || '—'),
      text('td', t.generations.join(', ') || '—'),
      text('td', t.ok ? (t.level === 'structural' ? 'valid (structural)' : 'valid') : 'INVALID', { class: 'verdict' }),
      text('td', t.ok ? '' : `${t.reason}${t.detail ? `: ${t.detail}` : ''}`),
    );
    tr.firstChild.title = t.commit;
    return tr;
  }));
  $('count').textContent = `${view.rows.length} of ${view.result.transitions.length} commits`;
  $('page-text').textContent = `page ${view.page + 1} of ${pages}`;
  $('prev').disabled = view.page === 0;
  $('next').disabled = view.page >= pages - 1;
}

// ---------------------------------------------------------------- timeline

function svg(tag, attrs = {}, title) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (title) {
    const t = document.createElementNS(SVG, 'title');
    t.textContent = title;
    el.append(t);
  }
  return el;
}

// The queue's record (docs/FORMAT.md "Queue record").
const QUEUE_RESOURCE = 'queue:tickets';
// The lane of a ticket's want: its path (a directory, "src/" in a ticket,
// is named "src" as its lease is), or "sem:NAME" as a slot's lease.
const wantLane = (w) => (w.sem != null ? `sem:${w.sem}` : w.path.replace(/\/$/, ''));
const wantText = (w) => (w.sem != null ? `sem:${w.sem}` : w.mode === 'shared' ? `${w.path} (shared)` : w.path);

// "bob waited (ticket #3) for src/a.c from … to …: admitted", or for a
// ticket still in the queue at the tip, since when and its expiry.
function ticketTitle(k, endTime) {
  const who = k.name || short(k.holder, 10);
  const wants = k.wants.map(wantText).join(', ');
  if (k.end == null) {
    const lapsed = endTime != null && endTime > k.expires_at;
    return `${who} waits (ticket #${k.seq}) for ${wants} since ${fmtTime(k.start)}: still queued at the tip, ` +
      `its ticket ${lapsed ? 'lapsed' : 'expires'} at ${fmtTime(k.expires_at)}`;
  }
  const how = k.end_kind === 'gave-up' ? 'gave up' :
    k.end_kind === 'lapsed' ? `lapsed (expired at ${fmtTime(k.expires_at)}), dropped by another actor` : k.end_kind;
  return `${who} waited (ticket #${k.seq}) for ${wants} from ${fmtTime(k.start)} to ${fmtTime(k.end)}: ${how}`;
}

function renderTimeline() {
  const r = view.result;
  const n = r.transitions.length;
  const size = Number($('window-size').value) || n;
  const from = Math.min(Number($('window-start').value), Math.max(0, n - 1));
  const to = Math.min(n - 1, from + size - 1);
  const ts = r.transitions.slice(from, to + 1);
  const times = ts.map((t) => t.time).filter((t) => t != null);
  const box = $('timeline');
  if (!times.length) {
    box.replaceChildren(text('p', 'No timed commits in this window.'));
    return;
  }
  const t0 = Math.min(...times);
  let t1 = Math.max(...times);
  const inWindow = r.leases.filter((l) => l.start != null &&
    l.start_commit <= to && (l.end_commit == null || l.end_commit >= from));
  // The waiters' tickets (docs/FORMAT.md "Tickets"): absent from the
  // documents of cores before the queue.
  const ticketsInWindow = (r.tickets || []).filter((k) => k.start != null &&
    k.start_commit <= to && (k.end_commit == null || k.end_commit >= from));
  for (const l of inWindow) if (l.end == null) t1 = Math.max(t1, Math.min(l.expires_at, t1 + (t1 - t0) * 0.1 + 1));
  if (t1 <= t0) t1 = t0 + 1;
  // A ticket is drawn on the lanes of what it waits for, so the queue's own
  // record (queue:tickets, in the table's resources) has no lane.
  const lanes = [...new Set([...inWindow.map((l) => l.resource),
    ...ticketsInWindow.flatMap((k) => k.wants.map(wantLane)),
    ...ts.flatMap((t) => t.resources).filter((k) => k !== QUEUE_RESOURCE)])].sort();
  const MAX_LANES = 60;
  const shown = lanes.slice(0, MAX_LANES);
  const laneOf = new Map(shown.map((k, i) => [k, i]));
  const left = 170, width = 1100, laneH = 22, top = 24;
  const height = top + Math.max(1, shown.length) * laneH + 24;
  const x = (t) => left + ((Math.max(t0, Math.min(t1, t)) - t0) / (t1 - t0)) * (width - left - 10);
  const root = svg('svg', {
    viewBox: `0 0 ${width} ${height}`, width: '100%', role: 'img',
    'aria-labelledby': 'timeline-desc',
  });
  const desc = svg('desc', { id: 'timeline-desc' });
  const bad = ts.filter((t) => !t.ok);
  desc.textContent = `Leases of ${shown.length} resources over commits ${from}–${to} ` +
    `(${fmtTime(t0)} to ${fmtTime(t1)}); ${ticketsInWindow.length} waiting tickets; ` +
    `${bad.length} invalid commits in this window.`;
  root.append(desc);
  root.append(svg('text', { x: left, y: 14, class: 'axis' }), svg('text', { x: width - 10, y: 14, class: 'axis end' }));
  root.children[1].textContent = fmtTime(t0);
  root.children[2].textContent = fmtTime(t1);
  // The hatching of a waiting bar (style.css .wait).
  const hatch = svg('pattern', { id: 'wait-hatch', width: 4, height: 4, patternUnits: 'userSpaceOnUse',
    patternTransform: 'rotate(45)' });
  hatch.append(svg('rect', { width: 4, height: 4, class: 'hatch-bg' }), svg('rect', { width: 2, height: 4, class: 'hatch' }));
  root.append(svg('defs'));
  root.lastChild.append(hatch);
  shown.forEach((name, i) => {
    const y = top + i * laneH;
    root.append(svg('rect', { x: 0, y, width, height: laneH, class: i % 2 ? 'lane odd' : 'lane' }));
    const label = svg('text', { x: 6, y: y + 15, class: 'lane-label' }, name);
    label.append(document.createTextNode(name.length > 24 ? `${name.slice(0, 23)}…` : name));
    root.append(label);
  });
  for (const l of inWindow) {
    const lane = laneOf.get(l.resource);
    if (lane === undefined) continue;
    const y = top + lane * laneH + 4;
    const end = l.end ?? l.expires_at;
    const x0 = x(l.start), x1 = Math.max(x0 + 2, x(Math.min(end, l.expires_at)));
    const how = l.end == null ? `live, expires ${fmtTime(l.expires_at)}` :
      l.end_kind === 'force-release' ?
        `force-released by ${l.released_by_name || short(l.released_by, 12)}: ${l.release_reason} at ${fmtTime(l.end)} (expiry ${fmtTime(l.expires_at)})` :
      l.end_kind === 'handoff' ?
        `handed off to ${l.handed_to_name || short(l.handed_to, 12)} at ${fmtTime(l.end)} (expiry ${fmtTime(l.expires_at)})` :
        `${l.end_kind} at ${fmtTime(l.end)} (expiry ${fmtTime(l.expires_at)})`;
    const title = `${l.resource} — generation ${l.generation}, ${l.mode} by ${l.name || short(l.holder, 10)}; ` +
      `admitted ${fmtTime(l.start)}, ${how}`;
    root.append(svg('rect', { x: x0, y, width: x1 - x0, height: laneH - 8, rx: 3, class: `bar ${l.kind === 'sem' ? 'sem' : l.mode}` }, title));
    if (x1 - x0 > 22) {
      const g = svg('text', { x: x0 + 3, y: y + 11, class: 'gen' });
      g.textContent = `g${l.generation}`;
      root.append(g);
    }
    if (l.end_kind === 'force-release') {
      root.append(svg('text', { x: x(l.end) - 5, y: y + 12, class: 'mark force-release' },
        `force-released by ${l.released_by_name || short(l.released_by, 12)}: ${l.release_reason}`));
      root.lastChild.append(document.createTextNode('✕'));
    }
    if (l.end_kind === 'handoff') {
      root.append(svg('text', { x: x(l.end) - 5, y: y + 12, class: 'mark handoff' },
        `handed off to ${l.handed_to_name || short(l.handed_to, 12)} at ${fmtTime(l.end)}`));
      root.lastChild.append(document.createTextNode('→'));
    }
    if (l.end_kind === 'reclaim') {
      root.append(svg('text', { x: x(l.end) - 5, y: y + 12, class: 'mark reclaim' }, `reclaimed at ${fmtTime(l.end)}`));
      root.lastChild.append(document.createTextNode('▲'));
    }
  }
  // Each ticket: a thin hatched bar with a dotted edge along the bottom of
  // each lane it waits for, over the leases it waited behind, from the
  // commit that took it to the one that dropped it (or to the window's end
  // while it stands).
  for (const k of ticketsInWindow) {
    const title = ticketTitle(k, r.endTime);
    const x0 = x(k.start);
    const x1 = Math.max(x0 + 4, x(k.end ?? t1));
    for (const want of new Set(k.wants.map(wantLane))) {
      const lane = laneOf.get(want);
      if (lane === undefined) continue;
      root.append(svg('rect', {
        x: x0, y: top + lane * laneH + laneH - 7, width: x1 - x0, height: 6,
        class: `wait ${k.end_kind || 'queued'}`, 'data-ticket': k.id,
      }, title));
    }
  }
  for (const t of bad) {
    if (t.time == null) continue;
    const xs = x(t.time);
    const why = `invalid commit #${t.index} ${short(t.commit)} (${t.command}): ${t.reason}${t.detail ? ` — ${t.detail}` : ''}`;
    const lanesHit = t.resources.filter((k) => laneOf.has(k));
    root.append(svg('line', { x1: xs, x2: xs, y1: top, y2: height - 24, class: 'invalid-line' }, why));
    for (const k of lanesHit.length ? lanesHit : [null]) {
      const y = k == null ? height - 8 : top + laneOf.get(k) * laneH + 16;
      const m = svg('text', { x: xs - 5, y, class: 'mark refused', tabindex: '0', 'aria-label': why }, why);
      m.append(document.createTextNode('✕'));
      root.append(m);
    }
  }
  const note = lanes.length > MAX_LANES ? [text('p', `${lanes.length - MAX_LANES} more resources not drawn; narrow the window.`)] : [];
  box.replaceChildren(root, ...note);
  $('window-text').textContent = `#${from} to #${to} of ${n}`;
  const list = $('invalid-list');
  list.replaceChildren(...r.transitions.filter((t) => !t.ok).slice(0, 50).map((t) =>
    text('li', `#${t.index} ${short(t.commit)} ${fmtTime(t.time)} ${t.command}: ${t.reason}` +
      `${t.detail ? ` — ${t.detail}` : ''}`, { class: 'invalid-item' })));
}

// ---------------------------------------------------------------- live mode

async function pollLive(url) {
  try {
    const res = await fetch('live.json', { cache: 'no-store' });
    const info = await res.json();
    const p = $('live');
    p.hidden = false;
    if (info.tip && info.tip !== liveTip) {
      liveTip = info.tip;
      p.textContent = `Live: ${info.repo} — ${info.ref} at ${short(info.tip)}, verifying (checked ${new Date().toLocaleTimeString()})`;
      p.dataset.tip = info.tip;
      loadUrl(url);
    } else {
      p.textContent = `Live: ${info.repo} — ${info.ref} at ${short(info.tip)} (checked ${new Date().toLocaleTimeString()})`;
    }
  } catch (e) {
    $('live').textContent = `Live: the server did not answer (${e.message})`;
  }
  setTimeout(() => pollLive(url), 1000);
}

// ---------------------------------------------------------------- wiring

function wire() {
  const drop = $('drop');
  drop.tabIndex = 0;
  drop.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      $('file').click();
    }
  });
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    if (e.dataTransfer.files.length) loadFile(e.dataTransfer.files[0]);
  });
  $('file').addEventListener('change', (e) => { if (e.target.files.length) loadFile(e.target.files[0]); });
  $('pins-form').addEventListener('submit', (e) => {
    e.preventDefault();
    if (bytes) verify(bytes, bytesSource);
  });
  const keyDrop = $('key-drop');
  keyDrop.addEventListener('dragover', (e) => { e.preventDefault(); keyDrop.classList.add('over'); });
  keyDrop.addEventListener('dragleave', () => keyDrop.classList.remove('over'));
  keyDrop.addEventListener('drop', (e) => {
    e.preventDefault();
    keyDrop.classList.remove('over');
    if (e.dataTransfer.files.length) loadKeyFile(e.dataTransfer.files[0]);
  });
  $('member-key-file').addEventListener('change', (e) => {
    if (e.target.files.length) loadKeyFile(e.target.files[0]);
    e.target.value = '';
  });
  // The pasted text is taken out of the page at once: only the bytes remain.
  $('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const area = $('member-key-text');
    const pasted = area.value;
    area.value = '';
    if (pasted.trim()) setMemberKey(new TextEncoder().encode(pasted), 'pasted');
  });
  $('member-key-forget').addEventListener('click', () => setMemberKey(null));
  $('filter').addEventListener('input', () => { view.page = 0; filterRows(); });
  $('only').addEventListener('change', () => { view.page = 0; filterRows(); });
  $('prev').addEventListener('click', () => { view.page--; renderTable(); });
  $('next').addEventListener('click', () => { view.page++; renderTable(); });
  $('window-start').addEventListener('input', () => view.result && renderTimeline());
  $('window-size').addEventListener('change', () => view.result && renderTimeline());

  $('pin-audience').value = params.get('audience') || '';
  $('pin-key').value = params.get('serviceKey') || '';
  $('pin-owner').value = params.get('owner') || '';
  $('test-clock').checked = params.get('testClock') === '1';
  const url = params.get('bundle');
  if (url && params.get('live') === '1') pollLive(url);
  else if (url) loadUrl(url);
}

wire();
globalThis.gitlocksPage = Object.freeze({ result: () => view.result });
