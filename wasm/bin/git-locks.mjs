#!/usr/bin/env node
// The npm package's `git-locks` bin: the read-only commands `check`, `verify`
// and `status` of the native CLI, run with Node and `git` alone. Git lists
// the commits and packs the objects; the WebAssembly core verifies the
// history and applies the rules, so stdout and the exit status are byte for
// byte the native CLI's (docs/CLI.md). It never writes to the repository
// and never creates a key file.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const gitlocks = createRequire(import.meta.url)('../index.js');
const { GitLocksError, Store } = gitlocks;

const kExit = { ok: 0, refused: 1, store: 2, usage: 64 };
const kStateRef = 'refs/locks/state';
const kPrivatePolicyFormat = 'gitlocks-policy-v3';

// The native CLI's rows of its command table, for `COMMAND --help`.
const commands = {
  check: {
    run: cmdCheck,
    usage: 'check RANGE...',
    summary:
      'the claims rule over the commits of RANGE (e.g. origin/main..HEAD), as the server hook applies it: exit 0 all ' +
      'clear, 1 a commit changes a path under another holder\'s claim, 2 the store cannot be read',
  },
  verify: {
    run: cmdVerify,
    usage: 'verify [--full] [--quiet] [--allow-test-clock]',
    summary:
      'replay refs/locks/state from the root and check every commit (exit 0 all valid, 1 any invalid, 2 unreadable)',
  },
  status: { run: cmdStatus, usage: 'status [--all] [PATH...]', summary: 'live leases (with --all also expired ones)' },
};

const help = `Usage: git-locks [--repo DIR] [--json] [--key FILE] COMMAND [ARGS]

The read-only commands of git-locks, from the npm package @git-locks/core:
the WebAssembly core run by Node, with git for the objects. For the same
repository and the same $GIT_LOCKS_NOW_MS, stdout and the exit status are
those of the native git-locks, byte for byte.

Commands:
  check RANGE...           the claims rule over the commits of RANGE (e.g.
                           origin/main..HEAD): exit 0 all clear, 1 a commit
                           changes a path under another holder's claim, 2 the
                           store cannot be read or verified
  verify [--full]          replay refs/locks/state and check every commit. The
                           bin keeps no trust checkpoint and no verified tip:
                           it always replays from the root (as native
                           verify --full) and detects no rewrite against an
                           earlier run
  status [--all] [PATH...] live leases (with --all also expired ones)

Global flags:
  --repo DIR     the repository (default: the one around the working directory)
  --json         on success print one JSON object on stdout (verify: JSON Lines)
  --key FILE     a member's actor key file, to read a PRIVATE store (default:
                 $GIT_LOCKS_KEY, else ~/.config/git-locks/actor.key); only
                 read, never created
  --allow-test-clock
                 accept attestations of a notary on its test clock
  --help, --version

Only the local refs/locks/state is read: no --remote, no locks.remote. Every
other command (claim, release, init, ...) is the native git-locks's.

Environment:
  GIT_LOCKS_NOW_MS  the instant to check at (ms since the epoch), else the clock
  GIT_LOCKS_KEY     key file (after --key)

Exit status: 0 success, 1 refused or invalid, 2 store unreadable, 64 usage.
Errors are JSON lines on stderr: {"error","code","reason","op","detail",...}.
`;

// ---- errors, as tools/cli/report.cpp prints them

const refusedCodes = new Set([
  'held-path', 'full-semaphore', 'family-policy', 'stale-generation', 'not-holder', 'guard-window',
  'empty-interval', 'limit-mismatch', 'stale-retries-exhausted', 'not-member', 'wait-timeout', 'already-held',
  'lease-lost',
]);
const usageCodes = new Set([
  'usage', 'bad-path', 'bad-json', 'non-canonical', 'bad-expression', 'unsupported-expression',
  'arithmetic-overflow',
]);

function classify(code) {
  if (refusedCodes.has(code)) return ['refused', kExit.refused];
  if (usageCodes.has(code)) return ['usage', kExit.usage];
  if (code === 'store-write') return ['store-write', kExit.store];
  return ['store-read', kExit.store];
}

const fail = (code, message, fields) => new GitLocksError(code, message, code, fields);

// One JSON object with its keys sorted at every level, as nlohmann's dump
// prints a json object (the error lines and the verify summary; the core's
// own documents come as text or in canonical order).
function sortedLine(value) {
  const sort = (v) => {
    if (Array.isArray(v)) return v.map(sort);
    if (v && typeof v === 'object') {
      const out = {};
      for (const k of Object.keys(v).sort()) out[k] = sort(v[k]);
      return out;
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

function printError(op, e) {
  const [kind, status] = classify(e.code);
  const o = { error: kind, code: e.code, reason: e.reason || e.code, op, detail: e.message };
  // Each field as the core typed it (numbers are numbers), as natively.
  for (const [k, v] of Object.entries(e.fields || {})) o[k] = v;
  process.stderr.write(sortedLine(o) + '\n');
  return status;
}

// ---- flags, as tools/cli/args.cpp parses them

const globalFlags = { repo: true, key: true, json: false, notary: true, remote: true, 'allow-test-clock': false };

function parseFlags(argv, specs, ctx) {
  specs = { ...specs, ...globalFlags };
  const out = { flags: {}, positionals: [] };
  for (let i = 0; i < argv.length; ++i) {
    const a = argv[i];
    if (a === '--') {
      out.positionals.push(...argv.slice(i + 1));
      break;
    }
    if (a.length < 2 || a[0] !== '-' || a === '-') {
      out.positionals.push(a);
      continue;
    }
    if (!a.startsWith('--')) throw fail('usage', `unknown flag '${a}'`);
    let name = a.slice(2);
    let value;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      value = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (!(name in specs)) throw fail('usage', `unknown flag '--${name}'`);
    if (!specs[name]) {
      if (value !== undefined) throw fail('usage', `flag '--${name}' takes no value`);
      value = '';
    } else if (value === undefined) {
      if (i + 1 >= argv.length) throw fail('usage', `flag '--${name}' needs a value`);
      value = argv[++i];
    }
    (out.flags[name] ||= []).push(value);
  }
  const last = (n) => (out.flags[n] && out.flags[n].length ? out.flags[n][out.flags[n].length - 1] : undefined);
  if (last('repo') !== undefined) ctx.repo = last('repo');
  if (last('key') !== undefined) ctx.key = last('key');
  if (out.flags.json) ctx.json = true;
  if (out.flags['allow-test-clock']) ctx.allowTestClock = true;
  if (out.flags.notary || out.flags.remote) throw remoteRefused();
  out.has = (n) => n in out.flags;
  return out;
}

const remoteRefused = () =>
  fail('usage', 'the npm bin reads only the local refs/locks/state (no --remote, --notary): use the native git-locks');

// GIT_LOCKS_NOW_MS or the clock (tools/cli/identity.cpp now_ms).
function nowMs() {
  const o = process.env.GIT_LOCKS_NOW_MS;
  if (!o) return Date.now();
  const what = 'GIT_LOCKS_NOW_MS';
  if (o.length > 16) throw fail('usage', `${what} must be a non-negative integer`);
  if (!/^[0-9]+$/.test(o)) throw fail('usage', `${what} must be a non-negative integer, not '${o}'`);
  const v = Number(o);
  if (v > Number.MAX_SAFE_INTEGER) throw fail('usage', `${what} is too large`);
  return v;
}

// ---- git

function git(ctx, args, { input, allowStatus = [0] } = {}) {
  const r = spawnSync('git', ctx.repo !== undefined ? ['-C', ctx.repo, ...args] : args, {
    input,
    maxBuffer: 1 << 30,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  if (r.error) throw fail('store-read', `cannot run git: ${r.error.message}`);
  if (allowStatus !== 'any' && !allowStatus.includes(r.status))
    throw fail('store-read', `git ${args[0]} exited ${r.status}: ${r.stderr.replace(/\n+$/, '')}`);
  return r;
}

// The tip of refs/locks/state, or null when there is no store. Refuses a
// repository whose store is a remote's (locks.remote): the bin reads the
// local ref only.
function readTip(ctx) {
  const r = git(ctx, ['rev-parse', '--verify', '--quiet', `${kStateRef}^{commit}`], { allowStatus: [0, 1] });
  if (git(ctx, ['config', '--get', 'locks.remote'], { allowStatus: [0, 1] }).stdout.trim()) throw remoteRefused();
  return r.status === 0 ? r.stdout.trim() : null;
}

const noStore = 'no lock store in this repository (refs/locks/state is missing): run `git-locks init`';

// The owner `git config locks.owner` pins (null when unset), as the native
// CLI reads it: 64 hex digits, in lower case; anything else is a usage error.
function pinnedOwner(ctx) {
  const raw = git(ctx, ['config', '--get', 'locks.owner'], { allowStatus: [0, 1] }).stdout.replace(/\n$/, '');
  if (!raw) return null;
  const key = raw.toLowerCase();
  if (!/^[0-9a-f]{64}$/.test(key))
    throw fail('usage', `git config locks.owner must be the store owner's public key (64 hex digits), not '${raw}'`);
  return key;
}

const kUnexpectedStoreNote =
  "not the expected store: its owner or notary pins are not the ones given (--expect-owner, --expect-pins); " +
  'check where it came from - resetting the ref cannot repair this';

// A pack streamed from a git command's stdout into the core's indexer.
async function openFromGit(ctx, args, input) {
  const child = spawn('git', ctx.repo !== undefined ? ['-C', ctx.repo, ...args] : args, {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => {
    child.on('error', (e) => resolve({ error: e }));
    child.on('close', (code) => resolve({ code }));
  });
  child.stdin.on('error', () => {});
  child.stdin.end(input || '');
  let store;
  try {
    store = await Store.openStream(child.stdout);
  } catch (e) {
    child.kill();
    await exited;
    if (stderr) throw fail('store-read', `git ${args[0]}: ${stderr.replace(/\n+$/, '')}`);
    throw e;
  }
  const end = await exited;
  if (end.error || end.code !== 0) {
    store.delete();
    throw fail('store-read', `git ${args[0]} failed: ${end.error ? end.error.message : stderr.replace(/\n+$/, '')}`);
  }
  return store;
}

// The key of a member, to read a PRIVATE store: --key, $GIT_LOCKS_KEY,
// else the default file, read only when it exists (never created).
function memberKey(ctx) {
  let file = ctx.key;
  const explicit = file !== undefined;
  if (explicit && file === '') throw fail('usage', '--key needs a file name');
  if (!explicit) file = process.env.GIT_LOCKS_KEY || undefined;
  if (!file) {
    const base = process.env.XDG_CONFIG_HOME || (process.env.HOME && path.join(process.env.HOME, '.config'));
    if (!base) return null;
    file = path.join(base, 'git-locks', 'actor.key');
  }
  let st;
  try {
    st = fs.statSync(file);
  } catch {
    if (explicit) throw fail('usage', `key file ${file} does not exist`);
    return null;
  }
  if (!st.isFile()) throw fail('usage', `key file ${file} is not a regular file`);
  if (st.mode & 0o077) {
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    throw fail('usage', `key file ${file} has mode ${mode}: it must not be accessible by group or others (chmod 600 ${file})`);
  }
  return new Uint8Array(fs.readFileSync(file));
}

function write(text) {
  return new Promise((resolve) => (text ? process.stdout.write(text, resolve) : resolve()));
}

// ---- check

const oidLine = /^[0-9a-f]{40}(?: |$)/;

// The objects the check needs, as lines for `git pack-objects`: the whole
// lock history, each commit with its parents' full trees, and for a merge
// of two parents the commits down to its merge bases, the bases' trees (the
// core merges each file against the base's version) and the bases' parents
// (the merge-base walk reads their dates).
function checkObjects(ctx, tip, listed) {
  const objects = new Map();
  const add = (text) => {
    for (let line of text.split('\n')) {
      if (line.startsWith('-')) line = line.slice(1); // --boundary
      if (oidLine.test(line) && !objects.has(line.slice(0, 40))) objects.set(line.slice(0, 40), line);
    }
  };
  add(git(ctx, ['rev-list', '--objects', tip]).stdout);
  // Comparing a commit with its parent reads trees only; a merge's files
  // are merged, so merges, their parents and bases come with their blobs.
  const trees = new Set();
  const whole = new Set();
  for (const [commit, ...parents] of listed) for (const id of [commit, ...parents]) (parents.length === 2 ? whole : trees).add(id);
  for (const [, ...parents] of listed) {
    if (parents.length !== 2) continue;
    const bases = git(ctx, ['merge-base', '--all', ...parents], { allowStatus: [0, 1] }).stdout.split('\n').filter(Boolean);
    if (!bases.length) continue;
    for (const b of bases) whole.add(b);
    add(git(ctx, ['rev-list', '--boundary', ...parents, '--not', ...bases.map((b) => `${b}^@`), '--']).stdout);
  }
  for (const id of whole) trees.delete(id);
  const list = (ids, filter) =>
    ids.size &&
    add(git(ctx, ['rev-list', '--objects', '--no-walk', ...filter, '--stdin'], { input: [...ids].join('\n') + '\n' }).stdout);
  list(trees, ['--filter=blob:none']);
  list(whole, []);
  return [...objects.values()].join('\n') + '\n';
}

async function cmdCheck(ctx, argv) {
  const a = parseFlags(argv, {}, ctx);
  if (!a.positionals.length) throw fail('usage', 'usage: check [--json] RANGE... (e.g. origin/main..HEAD)');
  for (const r of a.positionals)
    if (!r || r[0] === '-') throw fail('usage', `check takes revisions and ranges, not git options: ${r}`);
  const ready = gitlocks.init(); // the module compiles while git works
  ready.catch(() => {});
  const tip = readTip(ctx);
  if (!tip)
    throw fail('store-read', `${noStore} (in CI, fetch it first: git fetch origin refs/locks/state:refs/locks/state)`);
  const rl = git(ctx, ['rev-list', '--reverse', '--topo-order', '--parents', ...a.positionals, '--'], {
    allowStatus: 'any',
  });
  if (rl.status !== 0) throw fail('usage', `git rev-list cannot list the commits: ${rl.stderr.replace(/\n+$/, '')}`);
  const listed = rl.stdout.split('\n').filter(Boolean).map((l) => l.split(' '));
  const now = nowMs();
  const key = memberKey(ctx);
  await ready;
  const store = await openFromGit(ctx, ['pack-objects', '--stdout', '-q', '--window=0'], checkObjects(ctx, tip, listed));
  let text;
  try {
    const owner = pinnedOwner(ctx);
    text = store.checkText(tip, listed.map((l) => l[0]), {
      now,
      memberKey: key,
      allowTestClock: ctx.allowTestClock,
      ...(owner ? { owner } : {}),
    });
  } finally {
    store.delete();
    if (key) key.fill(0);
  }
  const doc = JSON.parse(text);
  const status = doc.refused === 0 ? kExit.ok : kExit.refused;
  if (ctx.json) {
    await write(text + '\n');
    return status;
  }
  let human = '';
  for (const c of doc.commits) for (const r of c.refused) human += `refused: ${r.message}\n`;
  human += `${doc.checked} commit${doc.checked === 1 ? '' : 's'} checked, ${doc.refused} refused\n`;
  await write(human);
  return status;
}

// ---- verify

function humanVerdict(v) {
  let line = v.ok ? 'ok      ' : 'INVALID ';
  line += `${v.commit} ${v.command || '?'}`;
  if (v.actor) line += ` by ${v.actor.slice(0, 12)}`;
  if (v.time !== null && v.time !== undefined) line += ` at ${v.time}`;
  if (v.level === 'structural') line += ' (structural)';
  if (!v.ok) line += `: ${v.reason}${v.detail ? ` — ${v.detail}` : ''}`;
  return line + '\n';
}

// The store of refs/locks/state alone, from `git bundle create -`; with
// `archives`, the history before its cuts too (refs/locks/archive/*,
// docs/FORMAT.md "The cut"), for a replay from the root.
async function openBundle(ctx, archives = false) {
  await gitlocks.init();
  const refs = archives ? [kStateRef, '--glob=refs/locks/archive/*'] : [kStateRef];
  const store = await openFromGit(ctx, ['bundle', 'create', '-q', '-', ...refs]);
  const tip = store.refs[kStateRef];
  if (!tip) {
    store.delete();
    throw fail('store-read', noStore);
  }
  return { store, tip };
}

// The `prev` of a checkpoint commit without a parent (a cut), read as
// stored; '' for any other commit.
function cutPrev(ctx, commit) {
  const r = git(ctx, ['cat-file', 'blob', `${commit}:txn/packet.json`], { allowStatus: [0, 128] });
  if (r.status !== 0) return '';
  try {
    const packet = JSON.parse(r.stdout).packet;
    const prev = packet.action === 'checkpoint' ? packet.body?.admin?.prev : undefined;
    return typeof prev === 'string' && /^[0-9a-f]{40}$/.test(prev) ? prev : '';
  } catch {
    return '';
  }
}

function isPrivate(store, tip) {
  return store.readPolicy(tip).policy.format === kPrivatePolicyFormat;
}

async function cmdVerify(ctx, argv) {
  const a = parseFlags(argv, { from: true, full: false, 'accept-rewrite': false, quiet: false }, ctx);
  if (a.positionals.length) throw fail('usage', 'verify takes no arguments');
  if (a.has('from') || a.has('accept-rewrite'))
    throw fail('usage', 'the npm bin keeps no verified tip: it always replays from the root (no --from, --accept-rewrite)');
  gitlocks.init().catch(() => {}); // the module compiles while git works
  if (!readTip(ctx)) throw fail('store-read', noStore);
  const { store, tip } = await openBundle(ctx, true);
  let r;
  let key = null;
  try {
    // A member's key only for a PRIVATE store, as natively.
    if (isPrivate(store, tip)) key = memberKey(ctx);
    const owner = pinnedOwner(ctx);
    r = store.replay({ tip, memberKey: key, allowTestClock: ctx.allowTestClock, ...(owner ? { owner } : {}) });
  } finally {
    store.delete();
    if (key) key.fill(0);
  }
  const sum = r.summary;
  const valid = sum.invalid === 0;
  let recovery = null;
  // A store of another owner than the pinned one: no reset makes it that one.
  const firstReason = sum.first_invalid ? r.verdicts.find((v) => !v.ok).reason : '';
  const unexpectedStore = firstReason === 'owner-mismatch' || firstReason === 'pins-mismatch';
  if (sum.first_invalid && !unexpectedStore) {
    const p = git(ctx, ['rev-parse', '--verify', '--quiet', `${sum.first_invalid}^1`], { allowStatus: [0, 1] });
    let lastValid = p.status === 0 ? p.stdout.trim() : '';
    // A cut (no parent, docs/FORMAT.md "The cut") follows its `prev`, as natively (chain_predecessor).
    if (!lastValid) lastValid = cutPrev(ctx, sum.first_invalid);
    recovery = lastValid ? `git update-ref ${kStateRef} ${lastValid} ${tip}` : `git update-ref -d ${kStateRef} ${tip}`;
  }
  const s = {
    tip,
    commits: sum.commits,
    invalid: sum.invalid,
    structural: sum.structural,
    ok: valid,
    first_invalid: sum.first_invalid,
    from: null,
    checkpoint: null,
    start: 'root',
    start_commit: null,
    checkpoints: sum.checkpoints,
    cut_start: sum.cut_start,
    recovery,
  };
  let text = '';
  if (sum.note) {
    s.note = sum.note;
    text += `${sum.note} for ${sum.structural} commit(s)${sum.private && !sum.member ? ' (this key is not a member of the PRIVATE store)' : ''}\n`;
  }
  const what = `${sum.commits} commit(s) from the root`;
  const cp = sum.checkpoints;
  if (cp.valid + cp.invalid > 0)
    text += `${cp.valid} checkpoint(s) on the way matched the replayed history${cp.invalid ? `, ${cp.invalid} did not` : ''}\n`;
  text += valid
    ? `verified ${what} up to ${tip}: all valid\n`
    : `verified ${what} up to ${tip}: ${sum.invalid} invalid${sum.first_invalid ? `, first at ${sum.first_invalid}` : ''}\n`;
  if (recovery)
    text += `to recover, the store's owner resets refs/locks/state to the last valid commit (after inspecting the verdicts above): ${recovery}\n`;
  if (unexpectedStore) {
    s.note = s.note ? `${s.note}; ${kUnexpectedStoreNote}` : kUnexpectedStoreNote;
    text += kUnexpectedStoreNote + '\n';
  }
  if (ctx.json) {
    await write(r.verdicts.map((v) => JSON.stringify(v) + '\n').join(''));
    process.stderr.write(sortedLine(s) + '\n');
  } else {
    await write(r.verdicts.map(humanVerdict).join('') + text);
  }
  return valid ? kExit.ok : kExit.refused;
}

// ---- status

function pad(s, width) {
  const n = Buffer.byteLength(s);
  return n < width ? s + ' '.repeat(width - n) : s;
}

// tools/cli/cmd_query.cpp's table, format_duration of lib/src/timefmt.cpp.
function formatDuration(ms) {
  const sign = ms < 0 ? '-' : '';
  const a = Math.abs(ms);
  if (a < 1000) return `${sign}${a}ms`;
  if (a < 60000) return `${sign}${Math.floor(a / 1000)}${a % 1000 >= 100 ? `.${Math.floor((a % 1000) / 100)}` : ''}s`;
  const s = Math.floor(a / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${s % 60 ? `${s % 60}s` : ''}`;
  return `${sign}${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? `${Math.floor((s % 3600) / 60)}m` : ''}`;
}

function statusTable(leases) {
  if (!leases.length) return '';
  let out = pad('RESOURCE', 32) + pad('MODE', 11) + pad('HOLDER', 28) + pad('GEN', 6) + pad('EXPIRES IN', 12) + 'LEASE\n';
  for (const e of leases) {
    const isPath = e.kind === 'path';
    const what = isPath ? e.path : `sem ${e.sem} (limit ${e.limit})`;
    const left = e.live ? formatDuration(e.expires_in_ms) : 'expired';
    const key = (e.holder || '').slice(0, 12);
    const holder = e.name ? `${e.name} (${key})` : key;
    out += `${pad(what, 31)} ${pad(isPath ? e.mode : 'slot', 11)}${pad(holder + (e.mine ? ' *' : ''), 27)} ` +
      `${pad(String(e.generation), 6)}${pad(left, 12)}${e.lease}\n`;
  }
  return out;
}

async function cmdStatus(ctx, argv) {
  const a = parseFlags(argv, { all: false }, ctx);
  await gitlocks.init();
  for (const p of a.positionals) gitlocks.normalizePath(p, { caseInsensitive: false });
  const now = nowMs();
  const tip0 = readTip(ctx);
  if (!tip0) {
    const doc = { commit: null, leases: [], now_ms: now, policy: null, store: null };
    await write(ctx.json ? JSON.stringify(doc) + '\n' : 'no lock store in this repository (run `git-locks init`)\n');
    return kExit.ok;
  }
  const { store, tip } = await openBundle(ctx);
  let doc;
  let key = null;
  try {
    const options = { now, all: a.has('all'), allowTestClock: ctx.allowTestClock };
    const owner = pinnedOwner(ctx);
    if (owner) options.owner = owner;
    if (a.positionals.length) options.paths = a.positionals;
    // A PRIVATE store is read with a member's key; otherwise the key only
    // marks the rows that are "mine", and a missing or broken one marks none.
    if (isPrivate(store, tip)) {
      key = memberKey(ctx);
      options.memberKey = key;
    } else {
      try {
        key = memberKey(ctx);
      } catch {
        key = null;
      }
    }
    if (key) {
      try {
        options.me = gitlocks.keyActor(key);
      } catch (e) {
        if (options.memberKey) throw e;
      }
    }
    doc = store.status(tip, options);
  } finally {
    store.delete();
    if (key) key.fill(0);
  }
  if (ctx.json) {
    await write(JSON.stringify(doc) + '\n');
    return kExit.ok;
  }
  const n = doc.leases.length;
  await write(
    `refs/locks/state -> ${doc.commit.slice(0, 12)} (store ${doc.store.slice(0, 12)}): ${n}` +
      `${a.has('all') ? ' leases' : ' live leases'}\n${statusTable(doc.leases)}`,
  );
  return kExit.ok;
}

// ---- main

async function main(args) {
  const ctx = { json: false, allowTestClock: false, op: 'git-locks' };
  try {
    let at = 0;
    for (; at < args.length; ++at) {
      const a = args[at];
      if (a === '--help' || a === '-h' || a === 'help') {
        await write(help);
        return kExit.ok;
      }
      if (a === '--version') {
        await gitlocks.init();
        await write(`git-locks ${gitlocks.version().version}\n`);
        return kExit.ok;
      }
      if (a === '--json') ctx.json = true;
      else if (a === '--allow-test-clock') ctx.allowTestClock = true;
      else if (a === '--repo' || a === '--key') {
        if (at + 1 >= args.length) throw fail('usage', `flag '${a}' needs a value`);
        ctx[a.slice(2)] = args[++at];
      } else if (a.startsWith('--repo=')) ctx.repo = a.slice(7);
      else if (a.startsWith('--key=')) ctx.key = a.slice(6);
      else if (a === '--remote' || a === '--notary' || a.startsWith('--remote=') || a.startsWith('--notary='))
        throw remoteRefused();
      else if (a.length > 1 && a[0] === '-') throw fail('usage', `unknown flag '${a}' (see git-locks --help)`);
      else break;
    }
    if (at >= args.length) throw fail('usage', 'no command given (see git-locks --help)');
    const cmd = Object.hasOwn(commands, args[at]) ? commands[args[at]] : null;
    if (!cmd)
      throw fail('usage', `unknown command '${args[at]}' (the npm bin runs check, verify and status; see git-locks --help)`);
    ctx.op = args[at];
    const rest = args.slice(at + 1);
    for (const r of rest) {
      if (r === '--') break;
      if (r === '--help' || r === '-h') {
        await write(`usage: git-locks ${cmd.usage}\n  ${cmd.summary}\n`);
        return kExit.ok;
      }
    }
    return await cmd.run(ctx, rest);
  } catch (e) {
    if (e instanceof GitLocksError) return printError(ctx.op, e);
    return printError(ctx.op, fail('store-read', String((e && e.message) || e)));
  }
}

// Exit now that stdout and stderr are written: the engine's background
// optimisation of the module would otherwise hold the process open.
process.exit(await main(process.argv.slice(2)));
