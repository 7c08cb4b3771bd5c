// What the package answers to every case of the shared vectors under
// tests/vectors/ (expr, plan, key, unicode, check; formats in tests/vectors/README.md),
// as plain JSON: the same function runs in Node (vectors.test.mjs, which
// checks each outcome against the hand-written expectation) and in every
// Chromium context (browser.test.mjs, which requires the browser's outcomes
// to equal Node's byte for byte). No assertion here: outcomes only.
//
// corpus: {expr: [DOC], plan: [DOC], key: [DOC], unicode: [DOC]}, each DOC
// {file, doc}. helpers: {actorHex(name), sha256hex(text)} — in Node from
// node:crypto, in a browser from tables Node computed.

// A call's outcome: {value} or {error: {code, reason, message}}.
function attempt(gl, fn) {
  try {
    return { value: fn() };
  } catch (e) {
    if (!(e instanceof gl.GitLocksError)) throw e;
    return { error: { code: e.code, reason: e.reason, message: e.message } };
  }
}

// "$K.J" names the J-th lease created by step K of the same case.
function resolveRefs(v, stepLeases) {
  if (typeof v === 'string' && v.length > 1 && v[0] === '$') {
    const [k, j] = v.slice(1).split('.').map(Number);
    return stepLeases[k] && stepLeases[k][j] ? stepLeases[k][j].lease : v;
  }
  if (Array.isArray(v)) return v.map((e) => resolveRefs(e, stepLeases));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, resolveRefs(e, stepLeases)]));
  return v;
}

// default_policy("aa…a", owner) of lib/src/policy.cpp.
function defaultPolicy(h) {
  return {
    format: 'gitlocks-policy-v1',
    store: 'a'.repeat(64),
    owner: h.actorHex('owner'),
    min_ttl_ms: 1000,
    max_ttl_ms: 3600000,
    families: [],
  };
}

function exprCase(gl, c) {
  if ('action' in c) return attempt(gl, () => gl.preflightAction(c.action));
  return attempt(gl, () => gl.deriveInterval(c.guards, c.body ?? {}));
}

// A planner scenario run as the native runner runs it (vectors_plan_test.cpp):
// the store created by the owner, then each step planned on the previous
// state and admitted at T = max(now, T of the tip). Per step: the error, or
// {action, interval, generations of every record, tree}.
function planCase(gl, c, h) {
  const policy = { ...defaultPolicy(h), ...(c.policy || {}) };
  const init = attempt(gl, () =>
    gl.plan(null, null, { init: policy }, { actor: h.actorHex('owner'), instance: h.sha256hex(`${c.name}:init`), now: 0 }));
  if (init.error) return { init: init.error, steps: [] };
  let state = init.value.state;
  let lastT = 0;
  const stepLeases = [];
  const steps = c.steps.map((s, i) => {
    const body = { created_at: s.now, name: s.actor, ops: resolveRefs(s.ops, stepLeases) };
    const ctx = { actor: h.actorHex(s.actor), instance: h.sha256hex(`${c.name}:${i}`), now: s.now };
    const r = attempt(gl, () => gl.plan({ records: state.records }, state.policy, body, ctx));
    const t = Math.max(s.now, lastT);
    if (r.error) {
      stepLeases.push([]);
      return { error: r.error };
    }
    const out = r.value;
    if (!(out.interval[0] <= t && t <= out.interval[1])) {
      stepLeases.push([]);
      return { error: { code: 'guard-window', reason: 'guard-window', message: `admission time ${t} is outside the guard interval` } };
    }
    stepLeases.push(out.leases);
    state = out.state;
    lastT = t;
    const generations = {};
    for (const rec of out.state.records) if ('generation' in rec) generations[`${rec.kind}:${rec.name}`] = rec.generation;
    return { action: out.action, interval: out.interval, generations, tree: out.state.tree };
  });
  return { init_tree: init.value.state.tree, steps };
}

// Actor keys through keyActor, as a string and as bytes; whether the
// caller's bytes came back unchanged.
function keyCase(gl, c) {
  return [c.text, new TextEncoder().encode(c.text)].map((input) => {
    const copy = typeof input === 'string' ? null : input.slice();
    const outcome = attempt(gl, () => gl.keyActor(input));
    if (copy) outcome.bytesUnchanged = input.length === copy.length && input.every((b, i) => b === copy[i]);
    return outcome;
  });
}

function unicodeCase(gl, c) {
  const forms = gl.unicodeForms(c.input);
  return {
    forms,
    path: attempt(gl, () => gl.normalizePath(c.input, { caseInsensitive: false })),
    path_ci: attempt(gl, () => gl.normalizePath(c.input, { caseInsensitive: true })),
  };
}

// The claims-rule vectors (tests/vectors/check): the store of the bundle,
// verified by the module, and its check of every named commit at now_ms,
// as the exact text `git-locks --json check` prints.
function checkOutcome(gl, entry) {
  const bytes = Uint8Array.from(atob(entry.bundle), (ch) => ch.charCodeAt(0));
  const ids = entry.doc.cases.map((c) => entry.refs[`refs/vectors/${c.commit}`]);
  const store = gl.openStore(bytes);
  try {
    return attempt(gl, () => store.checkText('', ids, { now: entry.doc.now_ms }));
  } finally {
    store.delete();
  }
}

export function vectorOutcomes(gl, corpus, helpers) {
  const run = {
    expr: (c) => exprCase(gl, c),
    plan: (c) => planCase(gl, c, helpers),
    key: (c) => keyCase(gl, c),
    unicode: (c) => unicodeCase(gl, c),
  };
  const out = {};
  for (const kind of Object.keys(run))
    out[kind] = (corpus[kind] || []).map(({ file, doc }) => ({ file, cases: doc.cases.map((c) => run[kind](c)) }));
  out.check = (corpus.check || []).map((entry) => ({ file: entry.file, outcome: checkOutcome(gl, entry) }));
  return out;
}
