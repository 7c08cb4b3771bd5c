// The JavaScript API of @git-locks/core over the Emscripten module. This file
// holds one function, createGitLocksApi(factory, host); wasm/tools/assemble.mjs
// wraps it with the Emscripten glue into index.js (CommonJS, classic script,
// importScripts) and browser.mjs (ES module). `host` says how to find the
// .wasm file: {wasmBinary?: () => Uint8Array, wasmUrl?: string}.
function createGitLocksApi(factory, host) {
  'use strict';

  // An error of the core, or of using this API: `code` is one of the core's
  // stable errc names (the CLI's codes), e.g. "held-path", "bad-json",
  // "store-read", "usage"; `reason` its stable sub-code (the code itself
  // unless the core names a finer cause, e.g. "superseded"); `fields` the
  // core's structured fields, typed as the core types them: numbers for
  // instants, durations, counts, indexes and generations (e.g.
  // current_generation, expires_at_ms), strings for the rest (e.g. holder).
  class GitLocksError extends Error {
    constructor(code, message, reason, fields) {
      super(message);
      this.name = 'GitLocksError';
      this.code = code;
      this.reason = reason || code;
      this.fields = fields || {};
    }
  }

  let M = null;
  let loading = null;

  function randomValue() {
    const buf = new Uint32Array(1);
    globalThis.crypto.getRandomValues(buf);
    return buf[0] >>> 0;
  }

  // Loads and instantiates the module once; later calls return the same
  // promise. Options: wasmBinary (bytes of gitlocks-core.wasm), wasmUrl
  // (where to fetch it; browsers), getRandomValue (randomness for libsodium;
  // default: globalThis.crypto).
  function init(options) {
    options = options || {};
    if (loading) return loading;
    loading = Promise.resolve().then(() => {
      const settings = {
        getRandomValue: options.getRandomValue || randomValue,
        print: () => {},
        printErr: () => {},
      };
      const url = options.wasmUrl || host.wasmUrl;
      const href = url && typeof url === 'object' ? url.href : url;
      const binary = options.wasmBinary || (host.wasmBinary && !options.wasmUrl ? host.wasmBinary() : null);
      if (binary) settings.wasmBinary = binary;
      else if (href) settings.locateFile = (file) => (file.endsWith('.wasm') ? href : file);
      return factory(settings).then((m) => {
        M = m;
        M._gitlocksProgress = onProgress;
        M._gitlocksBatch = onBatch;
        return api;
      });
    });
    loading.catch(() => {
      loading = null;
    });
    return loading;
  }

  function mod() {
    if (!M) throw new GitLocksError('usage', 'the module is not loaded: await init() first');
    return M;
  }

  const encoder = new TextEncoder();
  const decoder = new TextDecoder();

  function toBytes(value, what) {
    if (typeof value === 'string') return encoder.encode(value);
    if (value instanceof Uint8Array) return value;
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    if (typeof SharedArrayBuffer === 'function' && value instanceof SharedArrayBuffer) return new Uint8Array(value);
    if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    throw new GitLocksError('usage', `${what} must be a string, Uint8Array or ArrayBuffer`);
  }

  function json(value, what) {
    let text;
    try {
      text = JSON.stringify(value === undefined ? null : value);
    } catch (e) {
      throw new GitLocksError('bad-json', `${what}: ${e.message}`);
    }
    return text;
  }

  // Signed material: a string or bytes are the exact stored form; an object
  // is encoded canonically first, by the core's one encoder (what it signs).
  function stored(value, what) {
    const isBuffer =
      value instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && value instanceof SharedArrayBuffer);
    if (value && typeof value === 'object' && !ArrayBuffer.isView(value) && !isBuffer)
      return encoder.encode(call('gitlocks_canonical_json', [str(value, what)]));
    return toBytes(value, what);
  }

  // The JSON answer of an export at `out` (freed here): its "ok" value, or
  // a GitLocksError.
  function answer(out) {
    const m = mod();
    const heap = m.HEAPU8;
    const end = heap.indexOf(0, out);
    const text = decoder.decode(heap.subarray(out, end));
    m._gitlocks_free(out);
    const result = JSON.parse(text);
    if (result.error)
      throw new GitLocksError(result.error.code, result.error.message, result.error.reason, result.error.fields);
    return result.ok;
  }

  // Calls an export with arguments given as JS values: strings and byte
  // arrays are copied into the heap (NUL-terminated; byte arrays are followed
  // by their length when `withLength`), numbers pass through. Copies of
  // `secret` arguments are overwritten with zeros before they are freed.
  // Returns the "ok" value or throws GitLocksError.
  function call(name, args) {
    const m = mod();
    const ptrs = [];
    const secrets = [];
    const callArgs = [];
    try {
      for (const a of args) {
        if (typeof a === 'number') {
          callArgs.push(a);
          continue;
        }
        const bytes = a.bytes;
        const p = m._malloc(bytes.length + 1);
        if (!p) throw new GitLocksError('usage', 'out of memory');
        ptrs.push(p);
        if (a.secret) secrets.push([p, bytes.length + 1]);
        m.HEAPU8.set(bytes, p);
        m.HEAPU8[p + bytes.length] = 0;
        callArgs.push(p);
        if (a.withLength) callArgs.push(bytes.length);
      }
      return answer(m['_' + name](...callArgs));
    } finally {
      for (const [p, n] of secrets) m.HEAPU8.fill(0, p, p + n);
      for (const p of ptrs) m._free(p);
    }
  }

  const str = (value, what) => ({ bytes: encoder.encode(json(value, what)) });
  const raw = (bytes) => ({ bytes, withLength: true });

  // A member key (the text of a git-locks actor key file, or the bare seed
  // in hex; a string or bytes) for a call, as two arguments: pointer and
  // length, or 0, 0 for none. `body(args)` runs the call; a copy this API
  // made of the key is zeroed afterwards (a caller's own string cannot be,
  // so pass bytes and zero them yourself to keep no copy).
  function withMemberKey(key, body) {
    if (key === undefined || key === null) return body([0, 0]);
    const bytes = typeof key === 'string' ? encoder.encode(key) : toBytes(key, 'memberKey');
    try {
      return body([{ bytes, withLength: true, secret: true }]);
    } finally {
      if (typeof key === 'string') bytes.fill(0);
    }
  }

  // Progress callbacks of running replays, by token.
  const progressCallbacks = new Map();
  let nextToken = 1;
  function onProgress(token, done, total) {
    const entry = progressCallbacks.get(token);
    if (!entry || entry.error) return;
    try {
      entry.fn({ done, total });
    } catch (e) {
      entry.error = e; // rethrown once the core returns
    }
  }

  // A commit argument: "" asks for refs/locks/state.
  function commitArg(commit) {
    if (commit !== undefined && commit !== null && typeof commit !== 'string')
      throw new GitLocksError('usage', 'a commit must be a string (or omitted for refs/locks/state)');
    return { bytes: encoder.encode(commit || '') };
  }

  function nowOf(options) {
    if (options.now === undefined) return Date.now();
    if (!Number.isSafeInteger(options.now)) throw new GitLocksError('usage', 'options.now must be an integer (ms)');
    return options.now;
  }

  // Batches of the long lists of a running timeline, by token: each a
  // canonical JSON array the core wrote into the heap at `ptr`.
  const batchSinks = new Map();
  function onBatch(token, kind, ptr, len) {
    const sink = batchSinks.get(token);
    if (!sink || sink.error) return;
    try {
      sink.fn(kind, JSON.parse(decoder.decode(M.HEAPU8.subarray(ptr, ptr + len))));
    } catch (e) {
      sink.error = e; // rethrown once the core returns
    }
  }

  // Runs body(token) with `fn` registered for the core's progress reports
  // under `token` (0: no callback). An error `fn` threw is rethrown once
  // the core returns.
  function withProgress(fn, body) {
    if (!fn) return body(0);
    const token = nextToken++;
    const entry = { fn, error: null };
    progressCallbacks.set(token, entry);
    try {
      const r = body(token);
      if (entry.error) throw entry.error;
      return r;
    } finally {
      progressCallbacks.delete(token);
    }
  }

  // Handles the caller must free: .delete() (or `using` where supported);
  // a FinalizationRegistry frees forgotten ones eventually.
  const registry =
    typeof FinalizationRegistry === 'function'
      ? new FinalizationRegistry((handle) => {
          if (M) M._gitlocks_store_free(handle);
        })
      : null;

  // A core PackStoreBuilder: pieces are copied into one reused heap buffer.
  const PIECE = 1 << 20;
  function builder() {
    const m = mod();
    const handle = m._gitlocks_store_builder_new();
    if (!handle) throw new GitLocksError('usage', 'out of memory');
    let buf = 0;
    let cap = 0;
    return {
      append(piece) {
        if (piece.length > cap) {
          if (buf) m._free(buf);
          buf = m._malloc(piece.length);
          cap = buf ? piece.length : 0;
          if (!buf) throw new GitLocksError('usage', 'out of memory');
        }
        m.HEAPU8.set(piece, buf);
        answer(m._gitlocks_store_builder_append(handle, buf, piece.length));
      },
      finish() {
        const r = answer(m._gitlocks_store_builder_finish(handle));
        return new Store(r.handle, r.refs);
      },
      free() {
        if (buf) m._free(buf);
        m._gitlocks_store_builder_free(handle);
      },
    };
  }

  // Feeds a builder with `feed(append)` and opens the store.
  function openPieces(feed) {
    const b = builder();
    try {
      feed((piece) => b.append(piece));
      return b.finish();
    } finally {
      b.free();
    }
  }

  // A Git bundle or packfile, indexed once, for replay and state reads.
  class Store {
    constructor(handle, refs) {
      this._handle = handle;
      this.refs = refs;
      if (registry) registry.register(this, handle, this);
    }

    // Opens a bundle (v2/v3, SHA-1, no prerequisites) or a bare packfile.
    // The bytes go to the core's indexer in pieces of 1 MiB: the module
    // never holds a second copy of the whole bundle.
    static open(bytes) {
      const b = toBytes(bytes, 'bundle');
      return openPieces((append) => {
        for (let at = 0; at < b.length; at += PIECE) append(b.subarray(at, at + PIECE));
      });
    }

    // Opens a bundle held in a Blob (a File, a fetched body), read in
    // slices of 1 MiB: neither the JS heap nor the module ever holds the
    // whole bundle, so a page can open bundles larger than it could read.
    // options.onProgress({done, total}) gets the bytes read so far.
    static async openBlob(blob, options) {
      if (!blob || typeof blob.size !== 'number' || typeof blob.slice !== 'function')
        throw new GitLocksError('usage', 'openBlob needs a Blob (or an object with size and slice())');
      const onProgress = options && options.onProgress;
      const pieces = [];
      for (let at = 0; at < blob.size; at += PIECE) pieces.push([at, Math.min(blob.size, at + PIECE)]);
      const b = builder();
      try {
        for (const [from, to] of pieces) {
          b.append(new Uint8Array(await blob.slice(from, to).arrayBuffer()));
          if (onProgress) onProgress({ done: to, total: blob.size });
        }
        return b.finish();
      } finally {
        b.free();
      }
    }

    // Opens a bundle or packfile arriving as an async iterable of byte
    // chunks (a Node stream such as a child process's stdout, a web
    // ReadableStream): each chunk goes to the core's indexer as it comes, so
    // the whole pack is never held in memory. options.onProgress({done})
    // gets the bytes read so far.
    static async openStream(source, options) {
      if (!source || typeof source[Symbol.asyncIterator] !== 'function')
        throw new GitLocksError('usage', 'openStream needs an async iterable of byte chunks');
      const onProgress = options && options.onProgress;
      const b = builder();
      try {
        let done = 0;
        for await (const chunk of source) {
          const bytes = toBytes(chunk, 'chunk');
          for (let at = 0; at < bytes.length; at += PIECE) b.append(bytes.subarray(at, at + PIECE));
          done += bytes.length;
          if (onProgress) onProgress({ done });
        }
        return b.finish();
      } finally {
        b.free();
      }
    }

    _live() {
      if (!this._handle) throw new GitLocksError('usage', 'the store was deleted');
      return this._handle;
    }

    // Verdicts for every commit from the root to options.tip (default:
    // refs/locks/state of the bundle). With options.memberKey, a member of a
    // PRIVATE store gets full verification of its sealed commits.
    replay(options) {
      options = options || {};
      const o = {};
      if (options.tip !== undefined) o.tip = options.tip;
      if (options.from !== undefined) o.from = options.from;
      if (options.fromCheckpoint !== undefined) o.from_checkpoint = options.fromCheckpoint;
      if (options.allowTestClock) o.allow_test_clock = true;
      if (options.pins) o.pins = { audience: options.pins.audience, service_key: options.pins.serviceKey };
      if (options.owner !== undefined) o.owner = options.owner;
      return withProgress(options.onProgress, (token) =>
        withMemberKey(options.memberKey, (key) =>
          call('gitlocks_store_replay', [this._live(), str(o, 'options'), ...key, token])));
    }

    // The state recorded by a commit, {commit, tree, policy, records}, once
    // the history that ends there verifies (else invalid-history): the
    // snapshot status() would answer from. The records of a PRIVATE store
    // need options.memberKey (decrypted with it); options.allowTestClock as
    // for status(). The store keeps the last commit it verified here, so
    // reading a history from the root verifies each commit once.
    readState(commit, options) {
      options = options || {};
      const o = options.allowTestClock ? { allow_test_clock: true } : {};
      return withMemberKey(options.memberKey, (key) =>
        call('gitlocks_store_read_state', [this._live(), { bytes: encoder.encode(String(commit)) }, str(o, 'options'), ...key]));
    }

    // The records a commit changed, against its parent's state:
    // {commit, tree, policy, before, after} (before: the parent's records
    // that changed or went; after: this commit's that changed or are new).
    // Verified as readState is; then O(the commit's changes), where
    // readState is O(the state). options as for readState.
    readChanges(commit, options) {
      options = options || {};
      const o = options.allowTestClock ? { allow_test_clock: true } : {};
      return withMemberKey(options.memberKey, (key) =>
        call('gitlocks_store_read_changes', [this._live(), { bytes: encoder.encode(String(commit)) }, str(o, 'options'), ...key]));
    }

    // What `git-locks status --json` prints at `commit` (default: the
    // bundle's refs/locks/state), answered by the core after it verified the
    // commit's whole history: {store, commit, now_ms, policy, policy_hash,
    // guard_time, leases: [row...]}. options: now (ms since the epoch;
    // default Date.now()), paths (as typed: only the path leases
    // overlapping one of them), all (expired leases too), me (the actor
    // whose rows are "mine"), memberKey (a PRIVATE store's records),
    // allowTestClock. Throws GitLocksError (invalid-history, bad-path, ...).
    status(commit, options) {
      options = options || {};
      const o = { now: nowOf(options) };
      if (options.paths !== undefined) o.paths = options.paths;
      if (options.all) o.all = true;
      if (options.me !== undefined) o.me = options.me;
      if (options.allowTestClock) o.allow_test_clock = true;
      if (options.owner !== undefined) o.owner = options.owner;
      return withMemberKey(options.memberKey, (key) =>
        call('gitlocks_store_status', [this._live(), commitArg(commit), str(o, 'options'), ...key]));
    }

    // What `git-locks check --json` prints for `commits` (commit ids, in
    // the order to report them), judged on the state at `tip` (default: the
    // store's refs/locks/state) after verifying its whole history, at
    // max(options.now, the state's last admitted T) (options.now: default
    // Date.now()): {op, store, state, now_ms, checked, refused, commits:
    // [{commit, signer, signature, paths, ok, refused: [...]}]}. The store
    // must hold each commit with its parents' trees, and a merge's bases.
    // options: now, memberKey (a PRIVATE store), allowTestClock. Throws
    // GitLocksError (invalid-history, not-member, store-read, ...).
    check(tip, commits, options) {
      return JSON.parse(this.checkText(tip, commits, options));
    }

    // check() as the exact text `git-locks --json check` prints (without
    // its newline): the core's encoding, byte for byte the CLI's.
    checkText(tip, commits, options) {
      options = options || {};
      if (!Array.isArray(commits) || !commits.every((c) => typeof c === 'string'))
        throw new GitLocksError('usage', 'check needs an array of commit ids');
      const o = { now: nowOf(options) };
      if (options.allowTestClock) o.allow_test_clock = true;
      if (options.owner !== undefined) o.owner = options.owner;
      return withMemberKey(options.memberKey, (key) =>
        call('gitlocks_store_check', [this._live(), commitArg(tip), str(commits, 'commits'), str(o, 'options'), ...key]));
    }

    // What `git-locks fence RESOURCE GENERATION --json` prints (without its
    // "op"): {resource, generation, live: true, lease, holder, name,
    // expires_at, commit} when `generation` of `resource` ("sem:NAME",
    // "path:PATH" or a bare PATH) is live at options.now (default
    // Date.now()) in options.commit (default: refs/locks/state). Otherwise
    // throws GitLocksError stale-generation with fields.current_generation.
    fence(resource, generation, options) {
      options = options || {};
      if (typeof resource !== 'string') throw new GitLocksError('usage', 'fence needs a resource string');
      if (!Number.isSafeInteger(generation)) throw new GitLocksError('usage', 'fence needs an integer generation');
      const o = { generation, now: nowOf(options) };
      if (options.allowTestClock) o.allow_test_clock = true;
      return withMemberKey(options.memberKey, (key) =>
        call('gitlocks_store_fence', [
          this._live(),
          commitArg(options.commit),
          { bytes: encoder.encode(resource) },
          str(o, 'options'),
          ...key,
        ]));
    }

    // The whole history replayed (as replay) and, in the same pass, the
    // core's timeline of leases over it: {end_time, leases: [{id, resource,
    // kind, mode, generation, holder, name, start, end, end_kind ("release"
    // | "expired" | "reclaim" | "force-release" | "handoff" | null while
    // open), expires_at, start_commit, end_commit?, released_by?,
    // released_by_name?, release_reason?, handed_to?, handed_to_name?}],
    // policy, summary,
    // tickets: [{id, holder, name, seq, wants, expires_at, start, end,
    // end_kind ("admitted" | "gave-up" | "lapsed" | null while queued),
    // start_commit, end_commit?}], transitions: [{index, commit, time,
    // command, actor, ok, level, reason, detail, resources, generations,
    // reclaims, state_error}], verdicts}. options: tip, pins, owner,
    // allowTestClock, memberKey, onProgress({done, total}) per commit. The
    // lists arrive from the core in batches: the module never holds them.
    timeline(options) {
      options = options || {};
      const o = {};
      if (options.tip !== undefined) o.tip = options.tip;
      if (options.allowTestClock) o.allow_test_clock = true;
      if (options.pins) o.pins = { audience: options.pins.audience, service_key: options.pins.serviceKey };
      if (options.owner !== undefined) o.owner = options.owner;
      const lists = [[], [], [], []]; // transitions, verdicts, leases, tickets
      const sink = { fn: (kind, items) => { for (const x of items) lists[kind].push(x); }, error: null };
      const sinkToken = nextToken++;
      batchSinks.set(sinkToken, sink);
      try {
        const r = withProgress(options.onProgress, (token) =>
          withMemberKey(options.memberKey, (key) =>
            call('gitlocks_store_timeline', [this._live(), str(o, 'options'), ...key, token, sinkToken])));
        if (sink.error) throw sink.error;
        // Keys in canonical order, as the native timeline prints them.
        return {
          end_time: r.end_time,
          leases: lists[2],
          policy: r.policy,
          summary: r.summary,
          tickets: lists[3],
          transitions: lists[0],
          verdicts: lists[1],
        };
      } finally {
        batchSinks.delete(sinkToken);
      }
    }

    // The policy a commit's state records: {commit, tree, policy}. In the
    // clear in every store, PRIVATE ones included (no key needed).
    readPolicy(commit) {
      return call('gitlocks_store_read_policy', [this._live(), { bytes: encoder.encode(String(commit)) }]);
    }

    delete() {
      if (!this._handle) return;
      if (registry) registry.unregister(this);
      mod()._gitlocks_store_free(this._handle);
      this._handle = 0;
    }
  }
  if (typeof Symbol === 'function' && Symbol.dispose) Store.prototype[Symbol.dispose] = Store.prototype.delete;

  // {version, packet_format, state_format}
  function version() {
    return call('gitlocks_version', []);
  }

  // {capabilities: [NAME, ...], format: 'gitlocks-capabilities-v1'}: what
  // this core can do (seed 002), the same list as `git-locks capabilities
  // --json`. Check a name explicitly; never infer it from version().
  function capabilities() {
    return call('gitlocks_capabilities', []);
  }

  // The exact interval [lo, hi] of admission times T for which every guard
  // holds (seed 002); throws GitLocksError (empty-interval, bad-expression,
  // unsupported-expression, arithmetic-overflow, bad-json).
  function deriveInterval(guards, body) {
    return call('gitlocks_derive_interval', [str(guards, 'guards'), str(body === undefined ? {} : body, 'body')]);
  }

  // Preflight of a whole action ({guards, effects} or {variants}): true, or
  // throws GitLocksError.
  function preflightAction(action) {
    return call('gitlocks_action_preflight', [str(action, 'action')]);
  }

  // The planner: plan(state, policy, body, context). state is null (no store
  // yet; body {"init": POLICY}) or {records: [...]}; policy is the policy in
  // force; context {actor, instance, now?}. Returns {action, body, guards,
  // interval, leases, state: {tree, policy, records}}. The host admits at a
  // time T inside `interval` (or sends the packet to its notary).
  function plan(state, policy, body, context) {
    return call('gitlocks_plan', [
      str(state === undefined ? null : state, 'state'),
      str(policy === undefined ? null : policy, 'policy'),
      str(body, 'body'),
      str(context || {}, 'context'),
    ]);
  }

  // Verifies a stored packet ({"packet":...,"sig":...}): {packet, digest}.
  function verifyPacket(packet) {
    return call('gitlocks_verify_packet', [raw(stored(packet, 'packet'))]);
  }

  // Verifies an attestation against its packet and the pinned notary:
  // {attestation, admitted_at_ms}. pins: {audience, serviceKey}.
  function verifyAttestation(attestation, packet, pins, options) {
    pins = pins || {};
    options = options || {};
    return call('gitlocks_verify_attestation', [
      raw(stored(attestation, 'attestation')),
      raw(stored(packet, 'packet')),
      str({ audience: pins.audience, service_key: pins.serviceKey }, 'pins'),
      str(options.allowTestClock ? { allow_test_clock: true } : {}, 'options'),
    ]);
  }

  // Replays a whole bundle (or packfile, with options.tip) and frees it:
  // {verdicts, summary}. Each verdict is the core's verdict_json object.
  function replay(bundle, options) {
    const store = bundle instanceof Store ? bundle : Store.open(bundle);
    try {
      return store.replay(options);
    } finally {
      if (store !== bundle) store.delete();
    }
  }

  function openStore(bytes) {
    return Store.open(bytes);
  }

  // The actor (Ed25519 public key, 64 hex) of a member key: which member it
  // is. Throws GitLocksError usage for anything that is not an actor key.
  function keyActor(memberKey) {
    if (memberKey === undefined || memberKey === null) throw new GitLocksError('usage', 'keyActor needs a member key');
    return withMemberKey(memberKey, (key) => call('gitlocks_key_actor', key)).actor;
  }

  // NFC and case-folded NFC of a string (the core's tables, whose Unicode
  // version comes along): {nfc, fold, unicodeVersion}.
  function unicodeForms(text) {
    if (typeof text !== 'string') throw new GitLocksError('usage', 'unicodeForms needs a string');
    const r = call('gitlocks_unicode_forms', [{ bytes: encoder.encode(text), withLength: true }]);
    return { nfc: r.nfc, fold: r.fold, unicodeVersion: r.unicode_version };
  }

  // A path as a store compares it (NFC; folded when options.caseInsensitive),
  // as the CLI makes of what a user typed. Throws GitLocksError bad-path.
  function normalizePath(text, options) {
    if (typeof text !== 'string') throw new GitLocksError('usage', 'normalizePath needs a string');
    const ci = options && options.caseInsensitive ? 1 : 0;
    return call('gitlocks_normalize_path', [{ bytes: encoder.encode(text), withLength: true }, ci]).path;
  }

  const api = {
    init,
    version,
    capabilities,
    deriveInterval,
    preflightAction,
    plan,
    verifyPacket,
    verifyAttestation,
    replay,
    openStore,
    keyActor,
    unicodeForms,
    normalizePath,
    Store,
    GitLocksError,
  };
  return api;
}
