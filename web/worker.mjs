// The verification worker: replays the bundle with the WASM core (pkg/ is
// the npm package @git-locks/core, copied next to the page at build time)
// and derives, from the records each commit changed, which resources and
// generations a transition touched and the leases for the timeline. With a
// member key (the bytes of a key file, or a pasted seed) the sealed commits
// of a PRIVATE store replay in full and their states are decrypted; the key
// is zeroed when the job ends and never leaves the worker.
// Messages in:  {bundle: Blob | ArrayBuffer, pins?, allowTestClock?, memberKey?: ArrayBuffer}
// Messages out: {type:'progress', phase, done, total}, {type:'result', ...,
//               member: {actor} | null, timings: {open_ms, replay_ms,
//               timeline_ms}}, {type:'error', code, message}
// The bundle is read here in 1 MiB slices straight into the core's indexer
// (Store.openBlob), and each commit's timeline from the records it changed
// (Store.readChanges).
import { init, keyActor, Store } from './pkg/browser.mjs';

const ready = init();

function leaseKey(record) {
  return record.kind === 'sem' ? `sem:${record.name}` : record.name;
}

// Every lease of a state, by id.
function leasesOf(records) {
  const out = new Map();
  for (const r of records) {
    if (!Array.isArray(r.leases)) continue;
    for (const l of r.leases) {
      out.set(l.id, {
        resource: leaseKey(r), kind: r.kind, mode: l.mode || 'slot', generation: l.generation,
        holder: l.holder, name: l.name || '', expires_at: l.expires_at,
      });
    }
  }
  return out;
}

function pinsOf(policy) {
  const g = policy && policy.guard_time;
  return {
    owner: (policy && policy.owner) || null,
    audience: g ? g.audience : null,
    serviceKey: g ? g.service_key : null,
    store: (policy && policy.store) || null,
  };
}

self.onmessage = async (event) => {
  const { pins, allowTestClock } = event.data;
  let bundle = event.data.bundle;
  const memberKey = event.data.memberKey ? new Uint8Array(event.data.memberKey) : null;
  let store;
  try {
    await ready;
    // Which member the key is (a key that is no actor key throws usage here).
    const member = memberKey ? { actor: keyActor(memberKey) } : null;
    // A Blob is read in 1 MiB slices straight into the core's indexer: the
    // tab never holds the whole bundle as bytes.
    const t0 = performance.now();
    const blob = bundle instanceof Blob ? bundle : new Blob([bundle]);
    bundle = null;
    store = await Store.openBlob(blob, {
      onProgress: ({ done, total }) => self.postMessage({ type: 'progress', phase: 'read', done, total }),
    });
    const t1 = performance.now();
    const tip = store.refs['refs/locks/state'];
    if (!tip) throw Object.assign(new Error('the bundle holds no refs/locks/state'), { code: 'store-read' });
    let next = 0;
    const options = {
      allowTestClock: !!allowTestClock,
      onProgress: ({ done, total }) => {
        if (done >= next || done === total) {
          next = done + Math.max(1, Math.floor(total / 200));
          self.postMessage({ type: 'progress', phase: 'verify', done, total });
        }
      },
    };
    if (pins) options.pins = pins;
    if (memberKey) options.memberKey = memberKey;
    const { verdicts, summary } = store.replay(options);
    const t2 = performance.now();
    const stateOptions = memberKey ? { memberKey } : undefined;

    // Second pass: the records every commit changed, for the timeline.
    const total = verdicts.length;
    const transitions = [];
    const leases = [];          // {id, resource, kind, mode, generation, holder, name, start, end, endKind, expires_at}
    const open = new Map();     // lease id -> index in leases
    let live = new Map();       // lease id -> lease, in force after the last readable commit
    let gap = false;            // the last commit's state could not be read
    let lastTime = null;
    let policy = null;
    next = 0;
    for (let i = 0; i < total; i++) {
      const v = verdicts[i];
      const time = v.time ?? lastTime;
      if (v.time != null) lastTime = v.time;
      const resources = new Set();
      const generations = new Set();
      const reclaims = [];
      let stateError = null;
      // The leases of the records this commit changed, before and after:
      // only those records (O(the commit's changes), not O(its state)). After
      // a commit whose state could not be read, the whole state, compared
      // with the leases last seen, as the diff of that gap.
      let before = null;
      let after = null;
      try {
        if (gap) {
          const s = store.readState(v.commit, stateOptions);
          policy = s.policy;
          before = new Map(live);
          after = leasesOf(s.records);
        } else {
          const c = store.readChanges(v.commit, stateOptions);
          policy = c.policy;
          before = leasesOf(c.before);
          after = leasesOf(c.after);
        }
      } catch (e) {
        stateError = e.code || 'store-read';
        // A PRIVATE state without a key for its epoch: the policy (owner,
        // pins) is still in the clear.
        try {
          policy = store.readPolicy(v.commit).policy;
        } catch {
          // unreadable: stateError says so
        }
      }
      if (!stateError) {
        const added = [];
        for (const [id, l] of after) {
          const was = before.get(id);
          if (!was) {
            if (open.has(id)) continue;
            added.push(l.resource);
            resources.add(l.resource);
            generations.add(l.generation);
            open.set(id, leases.length);
            leases.push({ id, ...l, start: time, end: null, endKind: null, startCommit: i });
          } else if (was.expires_at !== l.expires_at) {
            resources.add(l.resource);
            generations.add(l.generation);
            if (open.has(id)) leases[open.get(id)].expires_at = l.expires_at;
          }
          live.set(id, l);
        }
        for (const [id, l] of before) {
          if (after.has(id)) continue;
          live.delete(id);
          if (!open.has(id)) continue;
          resources.add(l.resource);
          generations.add(l.generation);
          const lease = leases[open.get(id)];
          open.delete(id);
          lease.end = time;
          lease.endCommit = i;
          if (added.includes(l.resource) && v.command !== 'sweep') {
            lease.endKind = 'reclaim';
            reclaims.push(l.resource);
          } else if (time != null && time > l.expires_at) {
            lease.endKind = 'expired';
          } else {
            lease.endKind = 'release';
          }
        }
        if (gap) live = after;
      }
      gap = stateError != null;
      transitions.push({
        index: i, commit: v.commit, time, command: v.command, actor: v.actor, ok: v.ok, level: v.level,
        reason: v.reason, detail: v.detail || '', resources: [...resources].sort(),
        generations: [...generations].sort((a, b) => a - b), reclaims, stateError,
      });
      if (i + 1 >= next || i + 1 === total) {
        next = i + 1 + Math.max(1, Math.floor(total / 200));
        self.postMessage({ type: 'progress', phase: 'timeline', done: i + 1, total });
      }
    }
    const timings = {
      open_ms: Math.round(t1 - t0), replay_ms: Math.round(t2 - t1), timeline_ms: Math.round(performance.now() - t2),
    };
    self.postMessage({
      type: 'result', tip, summary, transitions, leases, pins: pinsOf(policy), endTime: lastTime, member, timings,
    });
  } catch (e) {
    // The module aborts when its memory cannot grow (a RuntimeError), and
    // the JS heap throws a RangeError: both mean the bundle is too large.
    const oom = e instanceof RangeError || (typeof WebAssembly !== 'undefined' && e instanceof WebAssembly.RuntimeError);
    self.postMessage(oom ?
      { type: 'error', code: 'too-large', message: `this tab ran out of memory verifying the bundle (${e.message}): verify it with \`git-locks verify --full\`` } :
      { type: 'error', code: e.code || 'store-read', message: e.message || String(e) });
  } finally {
    if (store) store.delete();
    if (memberKey) memberKey.fill(0);
  }
};
