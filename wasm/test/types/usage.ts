// Typed usage of @git-locks/core, compiled with `tsc --noEmit` (strict) by
// wasm/test/types.test.mjs: it must compile, and each @ts-expect-error line
// must be an error.
import gitlocks, {
  GitLocksError,
  Store,
  capabilities,
  deriveInterval,
  init,
  keyActor,
  openStore,
  plan,
  preflightAction,
  replay,
  verifyAttestation,
  verifyPacket,
  version,
} from '@git-locks/core';
import type { Capability, ErrorCode, Interval, Json, PlanResult, ReplayResult, Verdict } from '@git-locks/core';

export async function main(bundle: Uint8Array, packet: string, attestation: Uint8Array): Promise<void> {
  const api = await init({ getRandomValue: () => 4 });
  const same: typeof gitlocks = api;
  const v: string = version().version + same.version().state_format;
  const caps: Capability[] = capabilities().capabilities;
  const timeAdd: boolean = caps.includes('private_time_add_guard_windows') && same.capabilities().format === 'gitlocks-capabilities-v1';
  // @ts-expect-error: not a capability name
  const unknownCapability: Capability = 'time_travel';

  const iv: Interval = deriveInterval([{ op: 'lte', left: { from: 'time' }, right: { from: 'literal', value: 9 } }], {});
  const lo: number = iv[0];
  const ok: true = preflightAction({ guards: [], effects: [] });

  const created: PlanResult = plan(null, null, { init: {} }, { actor: 'a', instance: 'b' });
  const next = plan({ records: created.state.records }, created.state.policy, { ops: [] }, { actor: 'a', instance: 'c', now: 5 });
  const tree: string = next.state.tree;

  const opened = verifyPacket(packet);
  const digest: string = opened.digest;
  const att = verifyAttestation(attestation, packet, { audience: 'x', serviceKey: 'y' }, { allowTestClock: false });
  const t: number = att.admitted_at_ms;

  const result: ReplayResult = replay(bundle, { onProgress: ({ done, total }) => void (done / total) });
  const first: Verdict = result.verdicts[0];
  const when: number | null = first.time;
  const detail: string | undefined = first.detail;

  const store: Store = openStore(bundle.buffer);
  try {
    const tip: string | undefined = store.refs['refs/locks/state'];
    const state = store.readState(tip ?? '');
    const sealed = store.readState(tip ?? '', { memberKey: new Uint8Array(0) });
    const full = store.replay({ memberKey: '{"format":"gitlocks-actor-key-v1","seed":"00"}' });
    const member: boolean = full.summary.member && full.summary.private;
    const note: string | undefined = full.summary.note;
    const actor: string = keyActor('00'.repeat(32));
    const owner: Json = store.readPolicy(tip ?? '').policy.owner;
    void [sealed, member, note, actor, owner];
    const kinds: Array<'path' | 'sem' | 'family'> = state.records.map((r) => r.kind);
    store.replay({ tip, from: undefined, pins: { audience: 'a', serviceKey: 'b' }, allowTestClock: true });
    void kinds;
    const status = store.status(tip, { now: 1, paths: ['src/'], all: true, me: 'ab' });
    const rows: Array<{ resource: string; live: boolean; mode?: string }> = status.leases;
    const fenced = store.fence('sem:ci', 3, { now: 1 });
    const live: true = fenced.live;
    const timeline = store.timeline({ onProgress: ({ done, total }) => void [done, total] });
    const ended: Array<'release' | 'expired' | 'reclaim' | 'force-release' | 'handoff' | null> = timeline.leases.map((l) => l.end_kind);
    const errors: Array<string | null> = timeline.transitions.map((t) => t.state_error);
    const left: Array<'admitted' | 'gave-up' | 'lapsed' | null> = timeline.tickets.map((k) => k.end_kind);
    const waitedFor: string[] = timeline.tickets.flatMap((k) => k.wants.map((w) => ('sem' in w ? `sem:${w.sem}` : `${w.path} ${w.mode}`)));
    const places: number[] = timeline.tickets.map((k) => k.seq);
    const queued: Array<[number, string]> = status.queue.map((q) => [q.seq, q.holder_name]);
    void [rows, live, ended, errors, status.policy_hash, left, waitedFor, places, queued];
    // @ts-expect-error: a ticket is admitted, never released
    const released: Array<'release'> = timeline.tickets.map((k) => k.end_kind);
    void released;
    const checked = store.check(tip, ['ab'.repeat(20)], { now: 1, memberKey: new Uint8Array(0) });
    const refusedPaths: string[] = checked.commits.flatMap((c) => c.refused.map((r) => r.path));
    const signer: string | null = checked.commits[0].signer;
    const text: string = store.checkText(undefined, [], { allowTestClock: true });
    void [refusedPaths, signer, text, checked.now_ms];
    async function* chunks(): AsyncIterable<Uint8Array> {
      yield bundle;
    }
    const streamed = await Store.openStream(chunks(), { onProgress: ({ done }) => void done });
    streamed.delete();
  } finally {
    store.delete();
  }

  try {
    replay(new ArrayBuffer(0));
  } catch (e) {
    if (e instanceof GitLocksError) {
      const code: ErrorCode = e.code;
      const message: string = e.message;
      const reason: string = e.reason;
      const current: string | number | undefined = e.fields.current_generation;
      void [code, message, reason, current];
    }
  }

  // @ts-expect-error: the context needs an instance
  plan(null, null, {}, { actor: 'a' });
  // @ts-expect-error: replay options have no such field
  replay(bundle, { progress: () => {} });
  // @ts-expect-error: pins use serviceKey
  verifyAttestation(attestation, packet, { audience: 'x', service_key: 'y' });
  // @ts-expect-error: not an error code
  const bad: ErrorCode = 'no-such-code';
  // @ts-expect-error: stores are opened, not constructed
  new Store();
  // @ts-expect-error: a member key is text or bytes
  replay(bundle, { memberKey: { seed: '00' } });

  void [v, caps, timeAdd, unknownCapability, lo, ok, tree, digest, t, when, detail, bad];
}
