// Runs every file under tests/vectors/ through the JS API, with the native
// runners' semantics (tests/unit/vectors_expr_test.cpp,
// vectors_plan_test.cpp, vectors_key_test.cpp; formats in
// tests/vectors/README.md): intervals, error codes and messages, actions,
// generations, state tree ids and actors must equal the recorded ones
// exactly. The outcomes come from browser/vector_outcomes.mjs, which
// browser.test.mjs runs in Chromium too and compares with these byte for
// byte. (Sealing vectors run in the WASM doctest build.)
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';

import { vectorOutcomes } from './browser/vector_outcomes.mjs';
import { findCli, loadVectorCorpus, loadPackage, nodeVectorHelpers, tempDir, vectorsDir } from './support.mjs';

const gl = loadPackage();
await gl.init();

const corpus = loadVectorCorpus();
const outcomes = vectorOutcomes(gl, corpus, nodeVectorHelpers);

function checkError(outcome, expect, where) {
  assert.ok(outcome.error, `${where}: expected error ${expect.error}, got ${JSON.stringify(outcome.value)}`);
  assert.equal(outcome.error.code, expect.error, `${where}: ${outcome.error.message}`);
  if (expect.message !== undefined)
    assert.ok(outcome.error.message.includes(expect.message), `${where}: "${outcome.error.message}" lacks "${expect.message}"`);
}

let exprCases = 0;
corpus.expr.forEach(({ file, doc }, f) => {
  test(`expr vectors: ${file}`, () => {
    assert.equal(doc.kind, 'expr');
    doc.cases.forEach((c, i) => {
      exprCases++;
      const where = `${file}: ${c.name}`;
      const r = outcomes.expr[f].cases[i];
      if (c.expect.error) checkError(r, c.expect, where);
      else if ('action' in c) assert.equal(r.value, true, `${where}: ${r.error && r.error.message}`);
      else assert.deepEqual(r.value, c.expect.interval, `${where}: ${r.error && `${r.error.code}: ${r.error.message}`}`);
    });
  });
});

let planCases = 0;
corpus.plan.forEach(({ file, doc }, f) => {
  doc.cases.forEach((c, i) => {
    planCases++;
    test(`plan vectors: ${file} / ${c.name}`, () => {
      const r = outcomes.plan[f].cases[i];
      assert.equal(r.init, undefined, `init: ${r.init && r.init.message}`);
      assert.equal(r.init_tree, c.init_state, 'init state');
      c.steps.forEach((s, k) => {
        const where = `step ${k}`;
        const o = r.steps[k];
        if (o.error) {
          assert.ok(s.expect.error, `${where}: unexpected ${o.error.code}: ${o.error.message}`);
          assert.equal(o.error.code, s.expect.error, `${where}: ${o.error.message}`);
          if (s.expect.reason) assert.equal(o.error.reason, s.expect.reason, `${where}: reason: ${o.error.message}`);
          return;
        }
        assert.ok(!s.expect.error, `${where}: expected ${s.expect.error}, got success`);
        assert.equal(o.action, s.expect.action, `${where}: action`);
        assert.deepEqual(o.interval, s.expect.interval, `${where}: interval`);
        for (const [res, gen] of Object.entries(s.expect.generations || {}))
          assert.equal(o.generations[res], gen, `${where}: generation of ${res}`);
        assert.equal(o.tree, s.expect.state, `${where}: state tree`);
      });
    });
  });
});

// Actor keys, through keyActor as a string and as bytes (the page passes the
// bytes of a dropped key file).
let keyCases = 0;
corpus.key.forEach(({ file, doc }, f) => {
  test(`key vectors: ${file}`, () => {
    assert.equal(doc.kind, 'key');
    doc.cases.forEach((c, i) => {
      keyCases++;
      const where = `${file}: ${c.name}`;
      for (const outcome of outcomes.key[f].cases[i]) {
        if ('bytesUnchanged' in outcome) assert.equal(outcome.bytesUnchanged, true, `${where}: the caller's bytes were changed`);
        if ('actor' in c.expect) {
          assert.ok(!outcome.error, `${where}: ${outcome.error && outcome.error.message}`);
          assert.equal(outcome.value, c.expect.actor, where);
        } else {
          checkError(outcome, c.expect, where);
          if (c.secret) assert.ok(!outcome.error.message.includes(c.secret), `${where}: the message quotes the key`);
        }
      }
    });
  });
});

// NFC, case folding and path forms, through unicodeForms and normalizePath.
let unicodeCases = 0;
corpus.unicode.forEach(({ file, doc }, f) => {
  test(`unicode vectors: ${file}`, () => {
    assert.equal(doc.kind, 'unicode');
    doc.cases.forEach((c, i) => {
      unicodeCases++;
      const where = `${file}: ${c.name}`;
      const r = outcomes.unicode[f].cases[i];
      assert.equal(r.forms.unicodeVersion, doc.unicode_version, where);
      assert.equal(r.forms.nfc, c.expect.nfc, `${where}: nfc`);
      assert.equal(r.forms.fold, c.expect.fold, `${where}: fold`);
      for (const key of ['path', 'path_ci']) {
        const want = c.expect[key];
        const outcome = r[key];
        if (typeof want === 'string') {
          assert.ok(!outcome.error, `${where}: ${key}: ${outcome.error && outcome.error.message}`);
          assert.equal(outcome.value, want, `${where}: ${key}`);
        } else {
          assert.ok(outcome.error, `${where}: ${key}: expected ${want.error}`);
          assert.equal(outcome.error.code, want.error, `${where}: ${key}`);
        }
      }
    });
  });
});

// The claims-rule vectors: every named commit's verdict as cases.json
// writes it (signers by name: actorHex derives each key from its name, as
// gen.sh does), and, when the native CLI is built, its `--json check` of
// each commit alone byte for byte the module's.
let checkCases = 0;
corpus.check.forEach((entry, f) => {
  test(`check vectors: ${entry.file}`, () => {
    const { doc } = entry;
    assert.equal(doc.kind, 'check');
    const r = outcomes.check[f].outcome;
    assert.ok(!r.error, r.error && `${r.error.code}: ${r.error.message}`);
    const report = JSON.parse(r.value);
    assert.equal(report.checked, doc.cases.length);
    assert.equal(report.now_ms, doc.now_ms);
    assert.equal(report.state, entry.refs[doc.state]);
    doc.cases.forEach((c, i) => {
      checkCases++;
      const got = report.commits[i];
      const where = `${c.commit}: ${c.why}`;
      assert.equal(got.commit, entry.refs[`refs/vectors/${c.commit}`], where);
      assert.equal(got.signer, c.signer === null ? null : nodeVectorHelpers.actorHex(c.signer), where);
      assert.equal(got.signature, c.signer === null ? 'unsigned' : 'valid', where);
      assert.equal(got.paths, c.paths, where);
      assert.deepEqual(got.refused.map((x) => ({ path: x.path, code: x.code, reason: x.reason })), c.refused, where);
      assert.equal(got.ok, c.refused.length === 0, where);
    });
    assert.equal(report.refused, doc.cases.filter((c) => c.refused.length).length);
  });
});

const cli = findCli();
test('check vectors: the native CLI prints the same JSON for each commit', { skip: cli ? false : 'no native CLI built' }, () => {
  const entry = corpus.check[0];
  const repo = tempDir('check-vectors');
  execFileSync('git', ['init', '-q', repo]);
  execFileSync('git', ['-C', repo, 'fetch', '-q', path.join(vectorsDir, 'check', entry.doc.bundle), 'refs/*:refs/*']);
  const bytes = Uint8Array.from(Buffer.from(entry.bundle, 'base64'));
  const store = gl.openStore(bytes);
  try {
    for (const c of entry.doc.cases) {
      const id = entry.refs[`refs/vectors/${c.commit}`];
      const native = spawnSync(cli, ['--repo', repo, '--json', 'check', `${id}^!`], {
        encoding: 'utf8',
        env: { ...process.env, GIT_LOCKS_NOW_MS: String(entry.doc.now_ms), GIT_LOCKS_KEY: path.join(repo, 'no.key') },
      });
      assert.equal(native.status, c.refused.length ? 1 : 0, `${c.commit}: ${native.stderr}`);
      assert.equal(native.stdout, store.checkText('', [id], { now: entry.doc.now_ms }) + '\n', c.commit);
    }
  } finally {
    store.delete();
  }
});

test('vector corpus is not silently empty', () => {
  assert.ok(checkCases >= 14, `only ${checkCases} check cases`);
  assert.ok(exprCases >= 70, `only ${exprCases} expression cases`);
  assert.ok(planCases >= 40, `only ${planCases} planner cases`);
  assert.ok(keyCases >= 15, `only ${keyCases} key cases`);
  assert.ok(unicodeCases >= 15, `only ${unicodeCases} unicode cases`);
});
