// Shared set-up of the node tests: where things are (environment from ctest,
// with defaults for a manual run from the repository root), the package
// under test, and stores made by the native helpers in real repositories.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const wasmSourceDir = process.env.GITLOCKS_WASM_SOURCE_DIR || path.resolve(here, '..');
const root = path.resolve(wasmSourceDir, '..');
const build = path.join(root, 'build', 'wasm', 'wasm');
export const packageDir = process.env.GITLOCKS_PACKAGE_DIR || path.join(build, 'package');
export const nativeDir = process.env.GITLOCKS_NATIVE_DIR || path.join(root, 'build', 'release', 'native-helpers');
export const vectorsDir = process.env.GITLOCKS_VECTORS_DIR || path.join(root, 'tests', 'vectors');
export const devDir = process.env.GITLOCKS_DEV_DIR || path.join(build, 'dev');
export const scratchRoot = process.env.GITLOCKS_SCRATCH_DIR || path.join(build, 'scratch');

// The package's CommonJS entry (the same instance index.mjs re-exports).
export function loadPackage() {
  return createRequire(import.meta.url)(path.join(packageDir, 'index.js'));
}

export function scratch(name) {
  fs.mkdirSync(scratchRoot, { recursive: true });
  return fs.mkdtempSync(path.join(scratchRoot, `${name}-`));
}

// A fresh directory under the system's temp dir, removed when the process
// exits (set GITLOCKS_KEEP_TMP=1 to keep it for a post-mortem).
const created = [];
process.on('exit', () => {
  if (process.env.GITLOCKS_KEEP_TMP) return;
  for (const dir of created) fs.rmSync(dir, { recursive: true, force: true });
});
export function tempDir(name) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `gitlocks-${name}-`));
  created.push(dir);
  return dir;
}

export function run(cmd, args, options = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', maxBuffer: 1 << 30, ...options });
}

// The git-locks CLI of the release preset (tests/run.sh builds it before the
// wasm one), or GITLOCKS_CLI; undefined when it is not built.
export function findCli() {
  const candidates = [process.env.GITLOCKS_CLI, path.join(root, 'build', 'release', 'tools', 'cli', 'git-locks')];
  return candidates.find((c) => c && fs.existsSync(c));
}

export const genHistory = path.join(nativeDir, 'gitlocks-gen-history');
export const nativeReplay = path.join(nativeDir, 'gitlocks-native-replay');

// A store made by the native generator, pushed into a real bare repository;
// the bundle is made by `git bundle create ... refs/locks/state`.
// Returns {repo, bundle, tip}.
export function makeStore(name, genArgs) {
  const dir = tempDir(name);
  const repo = path.join(dir, 'repo.git');
  const pack = path.join(dir, 'gen.pack');
  run('git', ['init', '-q', '--bare', repo]);
  const tip = run(genHistory, [...genArgs, '--pack', pack], { stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  run('git', ['-C', repo, 'index-pack', '--stdin'], { input: fs.readFileSync(pack) });
  run('git', ['-C', repo, 'update-ref', 'refs/locks/state', tip]);
  const bundle = path.join(dir, 'store.bundle');
  run('git', ['-C', repo, 'bundle', 'create', '-q', bundle, 'refs/locks/state'], { stdio: 'ignore' });
  return { dir, repo, bundle, tip };
}

// Verdict lines of the native reference (exit 1 just means invalid commits).
export function nativeVerdicts(args) {
  try {
    return run(nativeReplay, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    if (e.status === 1) return e.stdout;
    throw e;
  }
}

export function gitShow(repo, spec) {
  return execFileSync('git', ['-C', repo, 'show', spec], { maxBuffer: 1 << 30 });
}
