// Capabilities (seed 002): the npm module's capabilities() is the native
// CLI's `git-locks capabilities --json`, byte for byte — one list, made by
// the core, whichever host asks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

import { findCli, loadPackage, tempDir } from './support.mjs';

const gl = loadPackage();
await gl.init();

test('capabilities() names the seed 002 capabilities in the core report format', () => {
  assert.deepEqual(gl.capabilities(), {
    capabilities: ['owner_guard_time_enable', 'private_time_add_guard_windows', 'owner_guard_time_migrate',
      'owner_checkpoint', 'policy_checkpoints', 'witness_cosignatures', 'lease_handoff', 'lease_intent',
      'lease_queue'],
    format: 'gitlocks-capabilities-v1',
  });
});

test('capabilities() equals `git-locks capabilities --json` byte for byte', () => {
  const cli = findCli();
  // tests/run.sh builds the release preset first: a missing CLI is a failure.
  assert.ok(cli, 'git-locks CLI not built (build the release preset first, or set GITLOCKS_CLI)');
  const r = spawnSync(cli, ['--json', 'capabilities'], { encoding: 'utf8', cwd: tempDir('capabilities') });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  assert.equal(JSON.stringify(gl.capabilities()) + '\n', r.stdout);
});
