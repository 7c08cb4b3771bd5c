// The export check: every extern "C" function of src/binding.cpp is in the
// export list (exports.json) and called by the JS API (js/api.js), or listed
// in exports-excluded.json with a reason; every exported name exists in the
// built module; and the JS API, the assembled entries and index.d.ts name
// exactly the same functions.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';

import { loadPackage, packageDir, wasmSourceDir } from './support.mjs';

const read = (f) => fs.readFileSync(path.join(wasmSourceDir, f), 'utf8');
const binding = read('src/binding.cpp');
const exportList = JSON.parse(read('exports.json'));
const excluded = JSON.parse(read('exports-excluded.json'));
const apiSource = read('js/api.js');
const dts = read('index.d.ts');
// Exported for the JS side's memory management, not binding functions.
const runtime = new Set(['_malloc', '_free']);

function bindingFunctions() {
  const start = binding.indexOf('extern "C" {');
  assert.ok(start >= 0, 'binding.cpp has an extern "C" block');
  const names = [...binding.slice(start).matchAll(/^(?:[\w:]+\*?)\s+(gitlocks_\w+)\(/gm)].map((m) => m[1]);
  assert.ok(names.length >= 8, `found only ${names.length} binding functions`);
  return names;
}

test('every binding function is exported or excluded with a reason', () => {
  for (const [name, reason] of Object.entries(excluded))
    assert.ok(typeof reason === 'string' && reason.length > 10, `exclusion of ${name} needs a reason`);
  for (const name of bindingFunctions()) {
    const exported = exportList.includes('_' + name);
    assert.ok(exported !== name in excluded, `${name}: ${exported ? 'both exported and excluded' : 'neither exported nor excluded'}`);
  }
  for (const e of exportList)
    assert.ok(runtime.has(e) || bindingFunctions().includes(e.slice(1)), `${e} is exported but is no binding function`);
});

test('every exported binding function is used by the JS API', () => {
  for (const name of bindingFunctions()) {
    if (name in excluded) continue;
    assert.ok(apiSource.includes(`'${name}'`) || apiSource.includes(`_${name}(`), `${name} is exported but unused in js/api.js`);
  }
});

test('the built module exports every listed function', async () => {
  const emcc = path.join(packageDir, '..', 'emcc');
  const factory = createRequire(import.meta.url)(path.join(emcc, 'gitlocks-core.js'));
  const m = await factory({ wasmBinary: fs.readFileSync(path.join(emcc, 'gitlocks-core.wasm')), getRandomValue: () => 4 });
  for (const e of exportList) assert.equal(typeof m[e], 'function', `${e} missing from the module`);
});

test('the JS API, the package entries and index.d.ts name the same functions', async () => {
  const apiBlock = apiSource.slice(apiSource.lastIndexOf('const api = {'));
  const apiNames = [...apiBlock.slice(0, apiBlock.indexOf('};')).matchAll(/^\s+(\w+),$/gm)].map((m) => m[1]).sort();
  assert.ok(apiNames.length >= 10);
  const runtimeNames = Object.keys(loadPackage()).filter((k) => k !== 'default').sort();
  assert.deepEqual(runtimeNames, apiNames);
  const esm = await import(path.join(packageDir, 'index.mjs'));
  assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), apiNames);
  const browser = fs.readFileSync(path.join(packageDir, 'browser.mjs'), 'utf8');
  assert.ok(browser.includes(`export const { ${[...apiNames].sort().join(', ')} }`) ||
    apiNames.every((n) => new RegExp(`export const \\{[^}]*\\b${n}\\b`).test(browser)), 'browser.mjs exports every API name');
  const declared = [...dts.matchAll(/^export declare (?:function|class) (\w+)/gm)].map((m) => m[1]).sort();
  assert.deepEqual(declared, apiNames);
  const iface = dts.slice(dts.indexOf('export interface GitLocksApi {'));
  const members = [...iface.slice(0, iface.indexOf('}')).matchAll(/^\s+(\w+): typeof \1;$/gm)].map((m) => m[1]).sort();
  assert.deepEqual(members, apiNames);
});
