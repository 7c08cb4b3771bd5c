// index.d.ts against typed usage files, with the locked TypeScript
// (devDependency, installed by tools/dev-deps.sh into the build tree):
// `tsc --noEmit --strict` from CommonJS and ES module code that imports the
// package by name.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import { devDir, packageDir, scratch, wasmSourceDir } from './support.mjs';

test('tsc --noEmit accepts the typed usage and rejects the misuse', () => {
  const tsc = path.join(devDir, 'node_modules', 'typescript', 'bin', 'tsc');
  assert.ok(fs.existsSync(tsc), `no TypeScript in ${devDir}: run wasm/tools/dev-deps.sh ${devDir}`);
  const dir = scratch('types');
  const scope = path.join(dir, 'node_modules', '@git-locks');
  fs.mkdirSync(scope, { recursive: true });
  fs.symlinkSync(packageDir, path.join(scope, 'core'), 'dir');
  for (const f of ['usage.ts', 'usage-esm.mts']) fs.copyFileSync(path.join(wasmSourceDir, 'test', 'types', f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'types-check', private: true }));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      strict: true, noEmit: true, target: 'es2022', module: 'node16', moduleResolution: 'node16',
      lib: ['es2022'], types: [], noUnusedLocals: true, skipLibCheck: false,
    },
    files: ['usage.ts', 'usage-esm.mts'],
  }));
  const r = spawnSync(process.execPath, [tsc, '-p', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});
