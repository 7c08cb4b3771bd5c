// `npm pack` makes an installable tarball holding exactly the files
// allowlist; installed offline into a scratch project it works from plain
// Node CommonJS and ESM, by its package name.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import zlib from 'node:zlib';

import { makeStore, packageDir, run, scratch } from './support.mjs';

const store = makeStore('tarball', ['--commits', '15', '--seed', '6']);
const expected = store.tip;

function pack() {
  const dest = scratch('pack');
  const out = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dest], { cwd: packageDir }));
  return { tgz: path.join(dest, out[0].filename), info: out[0] };
}

test('npm pack: only the allowlisted files, under 1 MiB gzip', () => {
  const { tgz, info } = pack();
  const files = info.files.map((f) => f.path).sort();
  assert.deepEqual(files, ['README.md', 'bin/git-locks.mjs', 'browser.mjs', 'gitlocks-core.wasm', 'index.d.ts', 'index.js', 'index.mjs', 'package.json']);
  const size = fs.statSync(tgz).size;
  assert.ok(size <= 1024 * 1024, `tarball is ${size} bytes`);
  assert.ok(zlib.gunzipSync(fs.readFileSync(tgz)).length > size);
});

test('installed offline from the tarball, used from CommonJS and ESM', () => {
  const { tgz } = pack();
  const project = scratch('consumer');
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
  run('npm', ['install', tgz, '--offline', '--no-audit', '--no-fund', '--ignore-scripts'], { cwd: project });
  const installed = JSON.parse(fs.readFileSync(path.join(project, 'node_modules', '@git-locks', 'core', 'package.json')));
  assert.equal(installed.name, '@git-locks/core');
  fs.copyFileSync(store.bundle, path.join(project, 'store.bundle'));
  const check = (lib) => `
    const bundle = fs.readFileSync(path.join(dir, 'store.bundle'));
    const r = ${lib}.replay(bundle);
    const iv = ${lib}.deriveInterval([{op: 'lte', left: {from: 'time'}, right: {from: 'literal', value: 9}}]);
    console.log(JSON.stringify({tip: r.summary.tip, invalid: r.summary.invalid, commits: r.verdicts.length, iv}));`;
  fs.writeFileSync(path.join(project, 'use.cjs'), `
    const fs = require('fs'); const path = require('path'); const dir = __dirname;
    const gitlocks = require('@git-locks/core');
    gitlocks.init().then(() => {${check('gitlocks')}
      try { gitlocks.plan(null, null, {}, {actor: 'x', instance: 'y'}); } catch (e) {
        if (!(e instanceof gitlocks.GitLocksError)) throw e; console.log(e.code); }
    });`);
  fs.writeFileSync(path.join(project, 'use.mjs'), `
    import fs from 'node:fs'; import path from 'node:path'; import { fileURLToPath } from 'node:url';
    import gitlocks, { init, replay, deriveInterval, GitLocksError } from '@git-locks/core';
    const dir = path.dirname(fileURLToPath(import.meta.url));
    await init();
    if (gitlocks.replay !== replay || typeof GitLocksError !== 'function') throw new Error('exports');
    ${check('gitlocks')}`);
  const want = JSON.stringify({ tip: expected, invalid: 0, commits: 15, iv: [0, 9] });
  const cjs = run('node', ['use.cjs'], { cwd: project }).trim().split('\n');
  assert.deepEqual(cjs, [want, 'bad-json']);
  assert.equal(run('node', ['use.mjs'], { cwd: project }).trim(), want);
});
