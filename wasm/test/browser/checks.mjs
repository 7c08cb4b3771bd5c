// Checks run in every browser context: load, derive an interval, a typed
// error, and replay the bundle served at /store.bundle.
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
    return { interval, code, progress, lines: r.verdicts.map((v) => JSON.stringify(v) + '\n').join('') };
  } catch (e) {
    return { error: `${e && e.name}: ${e && e.message}` };
  }
}
