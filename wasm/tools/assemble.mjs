// Assembles the npm package directory from the Emscripten output and the JS
// sources: index.js (CommonJS, classic <script>, importScripts), index.mjs
// (Node ESM, the same instance as index.js), browser.mjs (ES module for
// browsers and module workers), index.d.ts, gitlocks-core.wasm, package.json,
// README.md, and the bin bin/git-locks.mjs.
//
//   node assemble.mjs EMCC_DIR WASM_SOURCE_DIR PACKAGE_DIR
import fs from 'node:fs';
import path from 'node:path';

const [emccDir, srcDir, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error('usage: node assemble.mjs EMCC_DIR WASM_SOURCE_DIR PACKAGE_DIR');
  process.exit(64);
}

// The MODULARIZE glue up to the factory; its module.exports / AMD tail is
// replaced by our own exports.
let glue = fs.readFileSync(path.join(emccDir, 'gitlocks-core.js'), 'utf8');
const tail = glue.indexOf("\nif (typeof exports === 'object' && typeof module === 'object')");
if (tail < 0 || !glue.includes('var createGitLocksModule')) throw new Error('unexpected Emscripten glue layout');
glue = glue.slice(0, tail);
const api = fs.readFileSync(path.join(srcDir, 'js', 'api.js'), 'utf8');
const names = [
  'init', 'version', 'capabilities', 'deriveInterval', 'preflightAction', 'plan', 'verifyPacket',
  'verifyAttestation', 'replay', 'openStore', 'keyActor', 'unicodeForms', 'normalizePath', 'Store', 'GitLocksError',
];

fs.rmSync(outDir, { recursive: true, force: true });
fs.mkdirSync(outDir, { recursive: true });

fs.writeFileSync(path.join(outDir, 'index.js'), `// @git-locks/core — CommonJS; also a classic <script> or importScripts()
// entry that defines the global GitLocks.
(function (root) {
'use strict';
${glue}
${api}
var isNode = typeof process === 'object' && process.versions != null && process.versions.node != null;
var host = {};
if (isNode && typeof __dirname === 'string') {
  host.wasmBinary = function () {
    return require('fs').readFileSync(require('path').join(__dirname, 'gitlocks-core.wasm'));
  };
}
var api = createGitLocksApi(createGitLocksModule, host);
api.default = api;
if (typeof module === 'object' && module.exports) module.exports = api;
else root.GitLocks = api;
})(typeof self !== 'undefined' ? self : globalThis);
`);

fs.writeFileSync(path.join(outDir, 'index.mjs'), `// @git-locks/core — ES module entry for Node: the CommonJS build, loaded once.
import { createRequire } from 'node:module';

const api = createRequire(import.meta.url)('./index.js');
export const { ${names.join(', ')} } = api;
export default api;
`);

fs.writeFileSync(path.join(outDir, 'browser.mjs'), `// @git-locks/core — ES module for browsers and module workers (no bundler
// needed); the .wasm is fetched from next to this file unless init() is given
// wasmUrl or wasmBinary.
${glue}
${api}
const api = createGitLocksApi(createGitLocksModule, { wasmUrl: new URL('./gitlocks-core.wasm', import.meta.url).href });
export const { ${names.join(', ')} } = api;
export default api;
`);

fs.copyFileSync(path.join(emccDir, 'gitlocks-core.wasm'), path.join(outDir, 'gitlocks-core.wasm'));
for (const f of ['index.d.ts', 'README.md']) fs.copyFileSync(path.join(srcDir, f), path.join(outDir, f));
// The bin (bin/git-locks.mjs), which loads ../index.js.
fs.mkdirSync(path.join(outDir, 'bin'), { recursive: true });
fs.copyFileSync(path.join(srcDir, 'bin', 'git-locks.mjs'), path.join(outDir, 'bin', 'git-locks.mjs'));
fs.chmodSync(path.join(outDir, 'bin', 'git-locks.mjs'), 0o755);
const pkg = JSON.parse(fs.readFileSync(path.join(srcDir, 'package.json'), 'utf8'));
delete pkg.devDependencies;
delete pkg.scripts;
delete pkg.private;
fs.writeFileSync(path.join(outDir, 'package.json'), JSON.stringify(pkg, null, 2) + '\n');
