// git-locks as Git's gpg.ssh.program (gpg.format=ssh). Git runs
//   PROGRAM -Y sign -n git -f KEYFILE [-U] BUFFERFILE
// and reads the armored signature from BUFFERFILE.sig (gpg-interface.c,
// sign_buffer_ssh). The signature is the core's (sshsig.hpp), made with the
// actor's Ed25519 key: byte for byte what ssh-keygen makes with that key.
// Git verifies with the same program (-Y find-principals, verify,
// check-novalidate): those run OpenSSH's own ssh-keygen. Failures are a line
// on stderr and exit 255, as ssh-keygen reports them to Git.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cli.h"
#include "fsio.h"
#include "gitlocks/sshsig.hpp"

namespace gitlocks::cli {
namespace {

constexpr int kSshKeygenFailure = 255;

struct SignRequest {
  std::string ns;                       // -n
  std::optional<std::string> key_file;  // -f
  bool public_key_file = false;         // -U: -f names a public key, the private one is elsewhere
  std::vector<std::string> files;       // none: stdin to stdout
};

// ssh-keygen's options for -Y sign, in any order, a value separate or
// attached (-n git, -ngit).
Result<SignRequest> parse_sign(const Argv& args) {
  SignRequest r;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;
    if (a == "-U") {
      r.public_key_file = true;
    } else if (a == "-q") {
      // quiet: nothing is printed on success anyway
    } else if (a[1] == 'n' || a[1] == 'f' || a[1] == 'O') {
      std::string value = a.substr(2);
      if (value.empty()) {
        if (i + 1 >= args.size()) return make_error(Errc::usage, "option " + a + " needs a value");
        value = args[++i];
      }
      if (a[1] == 'n') r.ns = value;
      else if (a[1] == 'f') r.key_file = value;
      else if (value != "hashalg=sha512")
        return make_error(Errc::usage, "unsupported option -O " + value + " (signatures are hashed with sha512)");
    } else {
      return make_error(Errc::usage, "unknown option " + a);
    }
  }
  r.files.assign(args.begin() + static_cast<long>(i), args.end());
  if (r.ns.empty()) return make_error(Errc::usage, "-n NAMESPACE is required");
  return r;
}

// $GIT_LOCKS_KEY when set, else the key file of -f. With -U, -f is the
// public key Git was configured with (user.signingKey "key::ssh-ed25519
// ..."): the actor key ($GIT_LOCKS_KEY, else the default key file) must be
// that key. Never creates a key: a signature by a new key helps nobody.
Result<Identity> signing_identity(const SignRequest& r) {
  const char* env = std::getenv("GIT_LOCKS_KEY");
  std::string path;
  if (r.public_key_file || (env && *env)) {
    GITLOCKS_TRY(p, key_file_path(std::nullopt));
    path = p;
  } else if (r.key_file) {
    path = *r.key_file;
  } else {
    return make_error(Errc::usage, "no key: give -f KEYFILE or set GIT_LOCKS_KEY");
  }
  GITLOCKS_TRY(id, load_identity(path, MissingKey::refuse));
  if (r.public_key_file) {
    if (!r.key_file) return make_error(Errc::usage, "-U needs -f PUBLIC-KEY-FILE");
    GITLOCKS_TRY(text, read_input(*r.key_file));
    auto pk = parse_ssh_public_key(text);
    if (!pk.ok()) return pk.error().prefixed(*r.key_file + ": ");
    if (*pk != id.key.public_key)
      return make_error(Errc::usage, "the signing key " + ssh_public_key_line(*pk) + " is not the actor key of " +
                                         path + " (" + ssh_public_key_line(id.key.public_key) + ")");
  }
  return id;
}

// FILE.sig, whole or not at all (fsio.h; git reads it at once, so no fsync).
Status write_file(const std::string& path, const std::string& data) {
  if (auto failed = fsio::write_file(path, data, {0644, fsio::Sync::none}))
    return make_error(Errc::usage, fsio::message(*failed, path));
  return Ok{};
}

Status sign(const Argv& args) {
  GITLOCKS_TRY(request, parse_sign(args));
  GITLOCKS_TRY(id, signing_identity(request));
  Status status = Ok{};
  if (request.files.empty()) {
    auto message = read_input("-");
    if (!message.ok()) status = message.error();
    else std::fputs(sshsig_sign(*message, request.ns, id.key).c_str(), stdout);
  }
  for (const auto& f : request.files) {
    auto message = read_input(f);
    if (!message.ok()) {
      status = message.error();
      break;
    }
    status = write_file(f + ".sig", sshsig_sign(*message, request.ns, id.key));
    if (!status.ok()) break;
  }
  wipe(id.key);
  return status;
}

// Replaces this process with ssh-keygen and the same arguments.
int exec_ssh_keygen(const Argv& args) {
  std::vector<std::string> owned = {"ssh-keygen"};
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  const int e = errno;
  const std::string op = args.size() > 1 ? args[1] : "";
  if (e == ENOENT)
    std::fprintf(stderr,
                 "git-locks -Y %s: ssh-keygen is not installed. git-locks makes SSH signatures itself (-Y sign); "
                 "checking them with Git (-Y %s) needs OpenSSH's ssh-keygen: install openssh-client\n",
                 op.c_str(), op.c_str());
  else std::fprintf(stderr, "git-locks -Y %s: cannot run ssh-keygen: %s\n", op.c_str(), std::strerror(e));
  return kSshKeygenFailure;
}

}  // namespace

int cmd_ssh_keygen(const Argv& args) {
  if (args.size() < 2 || args[1] != "sign") return exec_ssh_keygen(args);
  if (!crypto_init()) {
    std::fputs("git-locks -Y sign: libsodium failed to initialise\n", stderr);
    return kSshKeygenFailure;
  }
  const Status signed_ = sign(Argv(args.begin() + 2, args.end()));
  if (signed_.ok()) return 0;
  std::fprintf(stderr, "git-locks -Y sign: %s\n", signed_.error().message.c_str());
  return kSshKeygenFailure;
}

}  // namespace gitlocks::cli
