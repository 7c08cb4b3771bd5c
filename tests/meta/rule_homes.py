#!/usr/bin/env python3
"""Every rule in one place (issue 32, docs/HACKING.md "Where a rule lives"):
the listed greps over the sources. Each rule names the text that only its
home may contain (a helper's call, a field read by name, a system call) and
the files allowed to contain it, each with the reason; `users` are files
that must call the home (so a host cannot quietly grow its own copy and stop
calling it). The check fails, naming file and line, when the text appears
anywhere else, when a home no longer contains it (the list rotted), or when a
named user no longer calls it.

    tests/meta/rule_homes.py --source DIR
"""

import argparse
import os
import re
import sys

SCANNED = ("lib", "tools", "wasm/src", "web")
EXTENSIONS = (".cpp", ".hpp", ".h", ".mjs", ".js")

RULES = [
    {
        "rule": "which member keys open a PRIVATE state: state_codec (the key of the policy's current epoch)",
        "pattern": r"make_private_codec\(",
        "homes": {
            "lib/include/gitlocks/state.hpp": "its declaration",
            "lib/src/state.cpp": "its definition and state_codec",
            "lib/src/plan_admin.cpp": "the rekey itself, which opens the old and the new epoch",
        },
        "users": {
            "lib/src/replay.cpp": r"state_codec\(",
            "lib/src/plan.cpp": r"state_codec\(",
            "lib/src/trust.cpp": r"state_codec\(",
            "tools/cli/cmd_doctor.cpp": r"state_codec\(",
        },
    },
    {
        "rule": "a member's keys: those sealed to it in a policy's keyrings (Vault::open of the typed policy)",
        "pattern": r"Vault::open\(",
        "homes": {
            "lib/src/vault.cpp": "its definition",
            "lib/src/replay.cpp": "open_member_vault: the keyring of the history's tip",
            "tools/cli/vault_host.cpp": "why a snapshot carries no keys for this identity (not a member, or its key "
            "does not open): the error a command gets",
        },
    },
    {
        "rule": "the keys a verifier brings to a history: verifier_keys (a PRIVATE store's member vault from the "
        "tip's keyring, and whose keys they are)",
        "pattern": r"open_member_vault\(",
        "homes": {
            "lib/include/gitlocks/replay.hpp": "its declaration",
            "lib/src/replay.cpp": "its definition and verifier_keys",
        },
        "users": {
            "lib/src/lease_timeline.cpp": r"verifier_keys\(",
            "tools/cli/checkpoint.cpp": r"verifier_keys\(",
            "tools/cli/cmd_verify.cpp": r"identity_keys\(",
            "tools/cli/cmd_doctor.cpp": r"identity_keys\(",
            "tools/cli/cmd_query.cpp": r"identity_keys\(",
            "tools/cli/cmd_guard_time.cpp": r"verifier_keys\(",
            "tools/native-replay/replay_driver.cpp": r"verifier_keys\(",
            "wasm/src/binding.cpp": r"verifier_keys\(",
        },
    },
    {
        "rule": "the pins a transition is judged under: result_pins (the policy of its result)",
        # Before: a writer derived them from the outcome's action and body.
        "pattern": r"\[\"admin\"\]|\"guard-time-(set|enable)\"",
        "homes": {
            "lib/src/plan_admin.cpp": "the planner of the admin ops",
            "lib/include/gitlocks/ops.hpp": "their builders",
            "lib/include/gitlocks/capabilities.hpp": "what the build can do, in words",
            "tools/cli/cmd_guard_time.cpp": "the command's name in its packet",
            "lib/src/plan.cpp": "action_name: how a packet spells the planner's Action",
        },
        "users": {"lib/src/replay.cpp": r"result_pins\(", "lib/src/transition.cpp": r"result_pins\("},
    },
    {
        "rule": "guard expressions over T: expr.cpp reads seed 002's documents and writes a typed TimeGuard's "
        "(the planner states typed guards, guard_interval derives their interval)",
        "pattern": r"\"time_add\"|\{\"from\", \"(time|body)\"\}",
        "homes": {
            "lib/src/expr.cpp": "the seed 002 evaluator and TimeGuard::document",
            "lib/include/gitlocks/expr.hpp": "the forms, documented",
        },
        "users": {
            "lib/src/plan.cpp": r"guard_interval\(",
            "lib/src/policy.cpp": r"ttl_time_guards\(",
        },
    },
    {
        "rule": "a notary's T: Attestation::admitted_at_ms, read once by open_attestation",
        "pattern": r"\[\"admitted_at_ms\"\]",
        "homes": {
            "lib/src/attest.cpp": "open_attestation",
            "lib/src/plan.cpp": "an error field it sets",
            "tools/cli/cmd_guard_time.cpp": "its own guard-time record file (not an attestation)",
        },
    },
    {
        "rule": "a packet's own clock reading: PacketFields::claimed_at_ms (packet_fields reads it once; "
        "recorded_admission_time takes it typed) and loose_claimed_at_ms for the unverified commits `log` shows",
        "pattern": r"\[\"claimed_at_ms\"\]|find\(\"claimed_at_ms\"\)",
        "homes": {
            "lib/src/packet.cpp": "check_packet validates it, packet_fields types it, loose_claimed_at_ms",
        },
    },
    {
        "rule": "intention markers and family holders: model.hpp Marker and FamilyHolder",
        "pattern": r"\"below\"|\"holders\"",
        "homes": {
            "lib/include/gitlocks/model.hpp": "the types' documentation",
            "lib/src/model.cpp": "their readers and writers",
            "lib/src/records.cpp": "the record schema's validation",
        },
    },
    {
        "rule": "a policy document is written from the typed Policy by policy_document (guard time, membership, "
        "a PRIVATE store's creation): no member of a stored policy is edited by name",
        "pattern": r"\[\"(guard_time|pending|keyring|visibility|require_claim|enforce|admins|bots|case_insensitive)\"\]"
        r"\s*=[^=]",
        "homes": {
            "lib/src/policy.cpp": "policy_document",
            "lib/src/trust.cpp": "the trust checkpoint's own document (its guard_time), not a policy",
            "lib/src/query.cpp": "status's answer (its guard_time), not a policy",
            "tools/cli/cmd_lease.cpp": "init's creation policy from --case-insensitive, before it is parsed",
            "tools/cli/cmd_member.cpp": "member's answer (pending), not a policy",
        },
        "users": {"lib/src/plan_admin.cpp": r"policy_document\(", "lib/src/vault.cpp": r"policy_document\("},
    },
    {
        "rule": "a file that a crash never leaves torn: fsio.h write_file",
        "pattern": r"\bfsync\(",
        "homes": {"tools/common/fsio.cpp": "write_file"},
    },
    {
        "rule": "hex: hex.hpp",
        "pattern": r"\"0123456789abcdef\"",
        "homes": {"lib/src/hex.cpp": "to_hex and the decoders"},
    },
    {
        "rule": "libgit2's process-wide settings: LibraryOptions, applied by the core's store",
        "pattern": r"git_libgit2_opts",
        "homes": {"lib/src/git_store.cpp": "applies LibraryOptions once"},
    },
    {
        "rule": "libgit2 only through gitlocks::core",
        "pattern": r"git2\.h",
        "homes": {"lib/src/git_store.cpp": "the one libgit2 store"},
    },
    {
        "rule": "where the chain goes on below a commit: its first parent, or a cut's prev when that is here "
        "(chain_parent, cut_prev; docs/FORMAT.md \"The cut\")",
        "pattern": r"checkpoint_of\(",
        "homes": {
            "lib/include/gitlocks/plan.hpp": "its declaration",
            "lib/src/plan.cpp": "its definition",
            "lib/src/replay.cpp": "the checkpoint's link to the commit it follows, and cut_prev",
            "lib/src/transition.cpp": "only a checkpoint of the tip is committed as a cut",
        },
        "users": {
            "lib/src/trust.cpp": r"chain_parent\(|chain_predecessor\(",
            "lib/src/query.cpp": r"chain_parent\(",
            "tools/cli/cmd_query.cpp": r"chain_parent\(",
            "tools/cli/cmd_guard_time.cpp": r"chain_parent\(",
            "tools/cli/cmd_verify.cpp": r"chain_predecessor\(",
        },
    },
    {
        "rule": "no platform switch in the core: hosts pass options in",
        "pattern": r"__EMSCRIPTEN__",
        "homes": {},
        "scanned": ("lib",),
    },
]


def source_files(root, dirs):
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = [s for s in subdirs if s not in ("node_modules", "vendor", "build")]
            for f in files:
                if f.endswith(EXTENSIONS):
                    path = os.path.join(base, f)
                    yield os.path.relpath(path, root).replace(os.sep, "/"), path


def check(root):
    problems = []
    texts = {}
    for rule in RULES:
        pattern = re.compile(rule["pattern"])
        seen_homes = set()
        for rel, path in source_files(root, rule.get("scanned", SCANNED)):
            if rel not in texts:
                with open(path, encoding="utf-8", errors="replace") as f:
                    texts[rel] = f.read().splitlines()
            for n, line in enumerate(texts[rel], 1):
                if not pattern.search(line):
                    continue
                if rel in rule["homes"]:
                    seen_homes.add(rel)
                else:
                    problems.append(f"{rel}:{n}: {rule['rule']}: /{rule['pattern']}/ outside its home: {line.strip()}")
        for home in rule["homes"]:
            if home not in seen_homes:
                problems.append(f"{home}: {rule['rule']}: the listed home no longer contains /{rule['pattern']}/")
        for user, call in rule.get("users", {}).items():
            path = os.path.join(root, user)
            with open(path, encoding="utf-8", errors="replace") as f:
                if not re.search(call, f.read()):
                    problems.append(f"{user}: {rule['rule']}: no longer calls /{call}/")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="the source tree")
    args = ap.parse_args()
    problems = check(args.source)
    for p in problems:
        print(p)
    print(f"rule_homes: {len(RULES)} rules, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
