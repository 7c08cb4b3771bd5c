// Types of @git-locks/core. Checked by `tsc --noEmit` against
// wasm/test/types/usage.ts, and against the binding's exports by
// wasm/test/exports.test.mjs.

/** Stable error codes of the core (errc names), the same the CLI prints. */
export type ErrorCode =
  | 'held-path'
  | 'full-semaphore'
  | 'family-policy'
  | 'stale-generation'
  | 'not-holder'
  | 'guard-window'
  | 'empty-interval'
  | 'limit-mismatch'
  | 'stale-retries-exhausted'
  | 'not-member'
  | 'wait-timeout'
  | 'already-held'
  | 'lease-lost'
  | 'deadlock'
  | 'usage'
  | 'bad-path'
  | 'bad-json'
  | 'non-canonical'
  | 'bad-expression'
  | 'unsupported-expression'
  | 'arithmetic-overflow'
  | 'unknown-format'
  | 'store-read'
  | 'store-write'
  | 'bad-signature'
  | 'invalid'
  | 'invalid-history';

/** Thrown by every function: `code` names what went wrong. */
export declare class GitLocksError extends Error {
  constructor(code: ErrorCode, message: string, reason?: string, fields?: { [name: string]: string | number });
  readonly name: 'GitLocksError';
  readonly code: ErrorCode;
  /** The stable sub-code: the code itself, or a finer cause such as "superseded", "policy-changed". */
  readonly reason: string;
  /**
   * Structured fields, typed as the core types them: instants, durations, counts, indexes and
   * generations (names ending in _ms, polls, op_index, line, generation, current_generation, ...)
   * are numbers; names, ids, paths and codes are strings. E.g. current_generation, holder, op_index.
   */
  readonly fields: { [name: string]: string | number };
}

/** JSON values in the core's data model (integers only, no floats). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** A 40-hex Git object id. */
export type Oid = string;
/** Inclusive interval [lo, hi] of admission times T, milliseconds. */
export type Interval = [lo: number, hi: number];
/** Exact stored bytes of signed material, or the object (encoded canonically). */
export type Signed = string | Uint8Array | ArrayBufferLike | JsonObject;
export type Bytes = Uint8Array | ArrayBufferLike | ArrayBufferView;
/**
 * A member's actor key: the contents of a git-locks key file
 * (`{"format":"gitlocks-actor-key-v1","seed":HEX64}`) or the bare 64-hex
 * seed, as a string or bytes. It stays in the module only for the call and
 * is wiped afterwards; pass bytes (and zero them) to keep no copy yourself.
 */
export type MemberKey = string | Bytes;

export interface InitOptions {
  /** Bytes of gitlocks-core.wasm (skips fetching/reading it). */
  wasmBinary?: Uint8Array | ArrayBufferLike;
  /** Where to fetch gitlocks-core.wasm (browsers; default: next to the script). A URL object works too. */
  wasmUrl?: string | { readonly href: string };
  /** A uniformly random 32-bit unsigned integer; default: globalThis.crypto. */
  getRandomValue?: () => number;
}

export interface VersionInfo {
  version: string;
  packet_format: string;
  state_format: string;
}

/** A capability of the core (seed 002); names are only ever added. */
export type Capability =
  | 'owner_guard_time_enable'
  | 'private_time_add_guard_windows'
  | 'owner_guard_time_migrate'
  | 'owner_checkpoint'
  | 'policy_checkpoints'
  | 'witness_cosignatures'
  | 'lease_handoff'
  | 'lease_intent'
  | 'lease_queue';

/** What this core can do: the same report as `git-locks capabilities --json`. */
export interface Capabilities {
  capabilities: Capability[];
  format: 'gitlocks-capabilities-v1';
}

/** A guard expression (seed 002 JSON form). */
export type GuardExpression = JsonObject;

/** A record of the state tree, as stored: {kind, name, ...}. */
export interface StateRecord extends JsonObject {
  kind: 'path' | 'sem' | 'family';
  name: string;
}

/** The planner's view of a source state: null creates a store. */
export type PlanState = null | { records: StateRecord[] };

export interface PlanContext {
  /** The signer's Ed25519 public key, 64 hex digits. */
  actor: string;
  /** The operation id (64 hex): makes lease ids unique. */
  instance: string;
  /** Host clock in ms: propose mode (fills reclaims, generations, expiries). */
  now?: number;
}

export interface LeaseRef {
  resource: string;
  lease: string;
  generation: number;
  expires_at: number;
}

export interface PlanResult {
  action: string;
  body: JsonObject;
  guards: GuardExpression[];
  interval: Interval;
  leases: LeaseRef[];
  state: { tree: Oid; policy: JsonObject; records: StateRecord[] };
}

export interface OpenedPacket {
  packet: JsonObject;
  /** sha256 hex of the stored form. */
  digest: string;
}

export interface Pins {
  audience: string;
  /** The notary's Ed25519 public key, 64 hex digits. */
  serviceKey: string;
}

export interface VerifiedAttestation {
  attestation: JsonObject;
  admitted_at_ms: number;
}

/** One commit's verdict: the core's verdict_json, keys in canonical order. */
export interface Verdict {
  actor: string;
  command: string;
  commit: Oid;
  /** Present when ok is false. */
  detail?: string;
  /** "full" (re-planned and checked), or "structural" (a private commit the
   * verifier holds no key for: signatures, chain, bindings and time only). */
  level: 'full' | 'structural';
  ok: boolean;
  /** Stable code such as "result-mismatch"; "" when ok. */
  reason: string;
  time: number | null;
}

export interface ReplaySummary {
  commits: number;
  invalid: number;
  /** Commits verified structurally only (private commits without keys). */
  structural: number;
  tip: Oid | null;
  first_invalid: Oid | null;
  /** The store at the tip is PRIVATE. */
  private: boolean;
  /** A member key was given and opened the tip's keyring: sealed commits replay in full. */
  member: boolean;
  /**
   * "structural verification only: not a semantic validation", exactly when
   * `git-locks verify` says so: some commits were verified structurally, or a
   * PRIVATE store was verified without a member's key.
   */
  note?: string;
  /** The checkpoints among the replayed commits: those that verified, and those that did not. */
  checkpoints: { valid: number; invalid: number };
  /**
   * The cut the replay started at because the history before it is not in
   * the bundle (docs/FORMAT.md "The cut": a bundle of refs/locks/state alone
   * after `git-locks checkpoint --cut`); null when it started at the root,
   * at `from` or at a checkpoint whose history is there.
   */
  cut_start: Oid | null;
  /** Where the replay started: the root, `from`, or the newest checkpoint (`fromCheckpoint`). */
  start?: 'root' | 'from' | 'checkpoint';
  /** The commit it continued from (`from` or the checkpoint); null from the root. */
  start_commit?: Oid | null;
}

export interface ReplayResult {
  verdicts: Verdict[];
  summary: ReplaySummary;
}

export interface Progress {
  done: number;
  total: number;
}

export interface ReplayOptions {
  /** The last commit to verify (required for a bare packfile). */
  tip?: Oid;
  /** Trust this commit and its ancestors; verify from here on. */
  from?: Oid;
  /**
   * Start at the newest checkpoint of the store's owner (of `owner` when
   * given) within 100,000 commits of the tip, re-executed from its parent,
   * as a fresh clone of the CLI does; at the root when there is none or it
   * does not verify (docs/FORMAT.md "Checkpoints"). Not with `from`.
   */
  fromCheckpoint?: boolean;
  /** Accept attestations made with a notary's test clock. */
  allowTestClock?: boolean;
  /** Guard-time pins the store must use: every attestation's, and in force at the tip (else the tip is pins-mismatch). */
  pins?: Pins;
  /** The store's expected owner key (64 hex): another owner makes the root's verdict owner-mismatch. */
  owner?: string;
  /** Called after every commit, synchronously. */
  onProgress?: (progress: Progress) => void;
  /**
   * A member's key for a PRIVATE store: its sealed commits are then replayed
   * in full (level "full"). A key that is not a member's gives structural
   * verification; one that is not an actor key throws (usage).
   */
  memberKey?: MemberKey;
}

export interface ReadStateOptions {
  /** A member's key: the records of a PRIVATE state are decrypted with it (else not-member). */
  memberKey?: MemberKey;
  /** Accept attestations of a notary running its test clock while verifying the history. */
  allowTestClock?: boolean;
}

export interface StateSnapshot {
  commit: Oid;
  tree: Oid;
  policy: JsonObject;
  records: StateRecord[];
}

/** What Store.openBlob reads: a Blob or File (browsers, Node >= 18), or anything with its size and slice(). */
export interface BlobLike {
  readonly size: number;
  slice(start?: number, end?: number): { arrayBuffer(): Promise<ArrayBuffer> };
}

/** The records one commit changed, against its parent's state. */
export interface StateChanges {
  commit: Oid;
  tree: Oid;
  policy: JsonObject;
  /** The parent's records that this commit changed or removed. */
  before: StateRecord[];
  /** This commit's records that are new or changed. */
  after: StateRecord[];
}

export interface PolicySnapshot {
  commit: Oid;
  tree: Oid;
  policy: JsonObject;
}

/** An indexed bundle or packfile. Caller-owned: call delete() when done. */
export declare class Store {
  private constructor();
  /** Opens a Git bundle (v2/v3, SHA-1, no prerequisites) or a bare packfile. */
  static open(bytes: Bytes): Store;
  /** Opens a bundle held in a Blob (a File), read in 1 MiB slices: the whole bundle is never in memory twice. */
  static openBlob(blob: BlobLike, options?: { onProgress?: (p: { done: number; total: number }) => void }): Promise<Store>;
  /** The bundle's refs (refs/locks/state when present). */
  readonly refs: { [name: string]: Oid };
  replay(options?: ReplayOptions): ReplayResult;
  /** The state of a commit once the history that ends there verifies (else invalid-history). */
  readState(commit: Oid, options?: ReadStateOptions): StateSnapshot;
  /** The records a commit changed, verified as readState: O(its changes), not O(its state). */
  readChanges(commit: Oid, options?: ReadStateOptions): StateChanges;
  /** The policy a commit recorded; in the clear in PRIVATE stores too. */
  readPolicy(commit: Oid): PolicySnapshot;
  /** `git-locks status --json` at a commit (default refs/locks/state), after verifying its history. */
  status(commit?: Oid | null, options?: StatusOptions): StatusDocument;
  /** Opens a bundle or packfile from an async iterable of chunks (a Node stream, a ReadableStream), indexed as it arrives. */
  static openStream(
    source: AsyncIterable<Uint8Array>,
    options?: { onProgress?: (p: { done: number }) => void },
  ): Promise<Store>;
  /** `git-locks check --json` for `commits` on the state at `tip` (default refs/locks/state), after verifying its history. */
  check(tip: Oid | null | undefined, commits: Oid[], options?: CheckOptions): CheckDocument;
  /** check() as the exact text `git-locks --json check` prints (no newline). */
  checkText(tip: Oid | null | undefined, commits: Oid[], options?: CheckOptions): string;
  /** `git-locks fence`: the answer when live; throws stale-generation (fields.current_generation) when not. */
  fence(resource: string, generation: number, options?: FenceOptions): FenceAnswer;
  /** The replay and the core's timeline of leases, with how each lease ended. */
  timeline(options?: TimelineOptions): TimelineResult;
  /** Frees the store now (a finaliser frees forgotten ones eventually). */
  delete(): void;
}

export interface StatusOptions {
  /** The instant to answer at, ms since the epoch (default Date.now()). */
  now?: number;
  /** Paths as typed: only the path leases overlapping one of them (no semaphores). */
  paths?: string[];
  /** Expired leases too. */
  all?: boolean;
  /** The actor (64 hex) whose rows are "mine". */
  me?: string;
  memberKey?: MemberKey;
  allowTestClock?: boolean;
  /** The store's expected owner (64 hex, as `git config locks.owner`): another owner's store is invalid-history (owner-mismatch). */
  owner?: string;
}

/** One row of `git-locks status --json`. */
export interface StatusRow {
  kind: 'path' | 'sem';
  resource: string;
  lease: string;
  holder: string;
  name: string;
  generation: number;
  expires_at: number;
  expires_in_ms: number;
  created_at: number;
  live: boolean;
  mine: boolean;
  path?: string;
  mode?: 'exclusive' | 'shared' | 'intent';
  sem?: string;
  limit?: number;
  note?: string;
}

/** The document `git-locks status --json` prints. */
export interface StatusDocument {
  store: string;
  commit: Oid;
  now_ms: number;
  policy: { min_ttl_ms: number; max_ttl_ms: number; families: Json; owner: string };
  policy_hash: string;
  guard_time: { enabled: boolean; audience?: string; service_key?: string };
  leases: StatusRow[];
  /** The live tickets of the store's queue, in order (docs/FORMAT.md "Tickets"). */
  queue: StatusTicket[];
}

export interface StatusTicket {
  ticket: string;
  seq: number;
  holder: string;
  holder_name: string;
  wants: TicketWant[];
  expires_at: number;
  created_at: number;
}

export interface CheckOptions {
  /** The host's clock, ms since the epoch (default Date.now()); the check is made at max(now, the state's last T). */
  now?: number;
  /** A member's key: a PRIVATE store cannot be checked without one (not-member). */
  memberKey?: MemberKey;
  allowTestClock?: boolean;
  /** The store's expected owner (64 hex, as `git config locks.owner`): another owner's store is invalid-history (owner-mismatch). */
  owner?: string;
}

/** A changed path the rule refuses (docs/CLI.md "check"). */
export interface CheckRefusal {
  path: string;
  code: 'held-path' | 'family-policy' | 'bad-path';
  reason: string;
  message: string;
  /** commit, path, signer; for a claim in the way claimed_path, holder, holder_name, lease, expires_at_ms (a number), family. */
  fields: { [name: string]: string | number };
}

/** The verdict on one commit. */
export interface CommitCheck {
  commit: Oid;
  /** The signer's actor key when `signature` is "valid", else null. */
  signer: string | null;
  /** "valid", "unsigned", or why the signature was not accepted. */
  signature: string;
  /** How many paths the commit changes. */
  paths: number;
  ok: boolean;
  refused: CheckRefusal[];
}

/** The document `git-locks check --json` prints. */
export interface CheckDocument {
  op: 'check';
  store: string;
  state: Oid;
  now_ms: number;
  checked: number;
  refused: number;
  commits: CommitCheck[];
}

export interface FenceOptions {
  /** The commit to answer at (default refs/locks/state). */
  commit?: Oid;
  now?: number;
  memberKey?: MemberKey;
  allowTestClock?: boolean;
}

/** `git-locks fence --json` without its "op": the generation is live. */
export interface FenceAnswer {
  resource: string;
  generation: number;
  live: true;
  lease: string;
  holder: string;
  name: string;
  expires_at: number;
  commit: Oid;
}

export interface TimelineOptions {
  tip?: Oid;
  allowTestClock?: boolean;
  pins?: Pins;
  /** As ReplayOptions.owner. */
  owner?: string;
  memberKey?: MemberKey;
  /** Called after every commit of the one pass (replay and timeline together). */
  onProgress?: (progress: Progress) => void;
}

export interface TimelineTransition {
  index: number;
  commit: Oid;
  /** Admission time T, or the last known one. */
  time: number | null;
  command: string;
  actor: string;
  ok: boolean;
  level: 'full' | 'structural';
  reason: string;
  detail: string;
  resources: string[];
  generations: number[];
  /** Resources whose lease another one took in this commit. */
  reclaims: string[];
  /** Why this commit's records could not be read (e.g. not-member), or null. */
  state_error: ErrorCode | null;
}

export interface TimelineLease {
  id: string;
  /** A path, or "sem:NAME". */
  resource: string;
  kind: 'path' | 'sem';
  mode: 'exclusive' | 'shared' | 'intent' | 'slot';
  generation: number;
  holder: string;
  name: string;
  start: number | null;
  end: number | null;
  /** How it ended; null while it is open. */
  end_kind: 'release' | 'expired' | 'reclaim' | 'force-release' | 'handoff' | null;
  expires_at: number;
  start_commit: number;
  end_commit?: number;
  /** end_kind "force-release": the admin and the reason. */
  released_by?: string;
  released_by_name?: string;
  release_reason?: string;
  /** end_kind "handoff": the key and name it was handed to. */
  handed_to?: string;
  handed_to_name?: string;
}

/** What a ticket waits for: a path in a mode (never intent), or a semaphore by name. */
export type TicketWant = { path: string; mode: 'exclusive' | 'shared' } | { sem: string };

/** A waiter's ticket in the store's queue (docs/FORMAT.md "Tickets"), from the commit that took it to the one that dropped it. */
export interface TimelineTicket {
  id: string;
  /** The waiter's key and name. */
  holder: string;
  name: string;
  /** Its place in the queue. */
  seq: number;
  wants: TicketWant[];
  /** The last expiry seen (renewals move it). */
  expires_at: number;
  start: number | null;
  end: number | null;
  /** How it left the queue: admitted (dropped by its holder with a lease), gave-up (dropped by its holder without one), lapsed (dropped by another after its expiry); null while it stands. */
  end_kind: 'admitted' | 'gave-up' | 'lapsed' | null;
  start_commit: number;
  end_commit?: number;
}

export interface TimelineResult extends ReplayResult {
  transitions: TimelineTransition[];
  leases: TimelineLease[];
  /** The waiters' tickets, in the order they were taken. */
  tickets: TimelineTicket[];
  /** The last readable policy, as stored. */
  policy: JsonObject | null;
  end_time: number | null;
}

/** Loads the module once; every other function needs it to have resolved. */
export declare function init(options?: InitOptions): Promise<GitLocksApi>;
export declare function version(): VersionInfo;
/** The capabilities of this core; check a name explicitly, never infer it from version(). */
export declare function capabilities(): Capabilities;
export declare function deriveInterval(guards: GuardExpression[] | Json, body?: Json): Interval;
export declare function preflightAction(action: Json): true;
export declare function plan(state: PlanState, policy: JsonObject | null, body: JsonObject, context: PlanContext): PlanResult;
export declare function verifyPacket(packet: Signed): OpenedPacket;
export declare function verifyAttestation(
  attestation: Signed,
  packet: Signed,
  pins: Pins,
  options?: { allowTestClock?: boolean },
): VerifiedAttestation;
export declare function replay(bundle: Bytes | Store, options?: ReplayOptions): ReplayResult;
export declare function openStore(bytes: Bytes): Store;
/** The actor (Ed25519 public key, 64 hex) of a member key; the key never comes back. */
export declare function keyActor(memberKey: MemberKey): string;
/** NFC and case-folded NFC of a string, with the Unicode version of the core's tables. */
export declare function unicodeForms(text: string): { nfc: string; fold: string; unicodeVersion: string };
/** A path as a store compares it (NFC; case-folded when caseInsensitive); throws bad-path. */
export declare function normalizePath(path: string, options?: { caseInsensitive?: boolean }): string;

export interface GitLocksApi {
  init: typeof init;
  version: typeof version;
  capabilities: typeof capabilities;
  deriveInterval: typeof deriveInterval;
  preflightAction: typeof preflightAction;
  plan: typeof plan;
  verifyPacket: typeof verifyPacket;
  verifyAttestation: typeof verifyAttestation;
  replay: typeof replay;
  openStore: typeof openStore;
  keyActor: typeof keyActor;
  unicodeForms: typeof unicodeForms;
  normalizePath: typeof normalizePath;
  Store: typeof Store;
  GitLocksError: typeof GitLocksError;
}

declare const api: GitLocksApi;
export default api;
