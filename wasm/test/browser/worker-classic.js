// A classic worker: importScripts defines the global GitLocks; the .wasm URL
// is given because a worker's base address is its own script's.
importScripts('./pkg/index.js');
const wasmUrl = new URL('./pkg/gitlocks-core.wasm', self.location.href).href;
import('./checks.mjs').then(({ run }) =>
  GitLocks.init({ wasmUrl }).then(() => run(null, GitLocks)).then((r) => postMessage(r)));
