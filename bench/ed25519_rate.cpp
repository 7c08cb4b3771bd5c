// gitlocks-ed25519-rate — the physical bound of `git-locks verify`: bare
// Ed25519 verifications per second of one core (libsodium
// crypto_sign_verify_detached in a loop over a packet-sized message).
// Prints {"verifications_per_s":R,"verifications":N,"cpu_s":S}.
#include <sodium.h>

#include <cstdio>
#include <ctime>
#include <string>

int main(int argc, char** argv) {
  if (sodium_init() < 0) return 2;
  const double seconds = argc > 1 ? std::stod(argv[1]) : 2.0;
  unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES], sig[crypto_sign_BYTES];
  crypto_sign_keypair(pk, sk);
  std::string msg(700, 'x');  // about the size of a claim packet
  crypto_sign_detached(sig, nullptr, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), sk);
  long n = 0;
  const std::clock_t start = std::clock();
  double cpu = 0;
  do {
    for (int i = 0; i < 200; ++i, ++n) {
      msg[i % msg.size()] ^= 0;  // keep the loop honest
      if (crypto_sign_verify_detached(sig, reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), pk) != 0)
        return 1;
    }
    cpu = double(std::clock() - start) / CLOCKS_PER_SEC;
  } while (cpu < seconds);
  std::printf("{\"verifications_per_s\":%.0f,\"verifications\":%ld,\"cpu_s\":%.3f}\n", static_cast<double>(n) / cpu, n,
              cpu);
  return 0;
}
