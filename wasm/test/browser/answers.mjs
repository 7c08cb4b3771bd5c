// Asking a WASM Store one query of the shared corpus (support.mjs
// queryCorpus), in Node and in every browser context alike.
// The same query asked of a WASM Store, as cliAnswer shapes it. The error
// is compared on what both hosts carry: code, reason, detail (the core's
// message) and the fields the core gives.
export function wasmAnswer(store, now, q, { allowTestClock = false } = {}) {
  try {
    if (q.kind === 'status') return { ok: store.status(undefined, { now, ...q.options, allowTestClock }) };
    return { ok: store.fence(q.resource, q.generation, { now, allowTestClock }) };
  } catch (e) {
    if (!e || e.name !== 'GitLocksError') throw e;
    return { error: { code: e.code, reason: e.reason, detail: e.message, ...e.fields } };
  }
}

