// Checks run in every browser context: load, derive an interval, a typed
// error, replay the bundle served at /store.bundle, and answer the shared
// corpus's queries (/queries.json: status, fence) and the lease timeline,
// and run the shared vectors of tests/vectors/ (/vectors.json: the corpus
// and the tables of actor keys and hashes Node computed).
import { wasmAnswer } from './answers.mjs';
import { vectorOutcomes } from './vector_outcomes.mjs';

export async function run(entry, api) {
  try {
    const gl = api || (await import(entry));
    await gl.init();
    const interval = gl.deriveInterval([{ op: 'lte', left: { from: 'time' }, right: { from: 'literal', value: 9 } }]);
    let code = null;
    try {
      gl.openStore(new Uint8Array([1, 2, 3]));
    } catch (e) {
      code = e instanceof gl.GitLocksError ? e.code : String(e);
    }
    const bundle = new Uint8Array(await (await fetch('/store.bundle')).arrayBuffer());
    let progress = 0;
    const r = gl.replay(bundle, { onProgress: ({ done }) => { progress = done; } });
    const { now, queries } = await (await fetch('/queries.json')).json();
    const store = gl.openStore(bundle);
    let answers;
    let timeline;
    try {
      answers = queries.map((q) => wasmAnswer(store, now, q));
      timeline = JSON.stringify(store.timeline()) + '\n';
    } finally {
      store.delete();
    }
    const { corpus, tables } = await (await fetch('/vectors.json')).json();
    const helpers = { actorHex: (n) => tables.actors[n], sha256hex: (t) => tables.sha[t] };
    const vectors = JSON.stringify(vectorOutcomes(gl, corpus, helpers));
    return {
      interval, code, progress, lines: r.verdicts.map((v) => JSON.stringify(v) + '\n').join(''), answers, timeline, vectors,
    };
  } catch (e) {
    return { error: `${e && e.name}: ${e && e.message}` };
  }
}
