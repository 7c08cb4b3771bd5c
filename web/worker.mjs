// The verification worker: replays the bundle with the WASM core (pkg/ is
// the npm package @git-locks/core, copied next to the page at build time)
// and takes from the core (Store.timeline) which resources and generations
// each transition touched, the leases for the timeline, with how each one
// ended, and the waiters' tickets, with how each left the queue: the page
// derives no rule of its own. With a
// member key (the bytes of a key file, or a pasted seed) the sealed commits
// of a PRIVATE store replay in full and their states are decrypted; the key
// is zeroed when the job ends and never leaves the worker.
// Messages in:  {bundle: Blob | ArrayBuffer, pins?, owner?, allowTestClock?, memberKey?: ArrayBuffer}
// (the expected pins and owner are the core's rules: a mismatch is an
// invalid verdict, pins-mismatch at the tip or owner-mismatch at the root)
// Messages out: {type:'progress', phase, done, total}, {type:'result', ...,
//               member: {actor} | null, timings: {open_ms, replay_ms,
//               timeline_ms}}, {type:'error', code, message}
// The bundle is read here in 1 MiB slices straight into the core's indexer
// (Store.openBlob); the core reads each commit's changed records.
import { init, keyActor, Store } from './pkg/browser.mjs';

const ready = init();

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
  const { pins, owner, allowTestClock } = event.data;
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
    // The core replays the history and, in the same pass, derives the
    // timeline of leases from the records each commit changed
    // (Store.timeline).
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
    if (owner) options.owner = owner;
    if (memberKey) options.memberKey = memberKey;
    // tickets: absent from a core before the queue (docs/FORMAT.md "Tickets").
    const { summary, transitions, leases, tickets = [], policy, end_time: lastTime } = store.timeline(options);
    // replay_ms: the one pass (replay and timeline); timeline_ms stays for
    // the benchmark's table (0: no second pass).
    const timings = { open_ms: Math.round(t1 - t0), replay_ms: Math.round(performance.now() - t1), timeline_ms: 0 };
    self.postMessage({
      type: 'result', tip, summary, transitions, leases, tickets, pins: pinsOf(policy), endTime: lastTime, member, timings,
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
