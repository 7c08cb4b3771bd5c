// listen_address.h — parsing HOST:PORT and telling loopback from remote.
#pragma once

#include <string>

namespace gitlocks::notary {

struct ListenAddress {
  std::string host;  // as httplib binds it: no brackets around IPv6
  int port = 0;      // 0: any free port
  bool ipv6 = false;
  bool loopback = false;  // 127.0.0.0/8, ::1 or "localhost"

  // "HOST:PORT" for a port, IPv6 hosts in brackets.
  std::string with_port(int p) const;
};

// Accepts "HOST:PORT" and "[IPV6]:PORT" with PORT in [0, 65535]. Returns
// false with `error` set for anything else.
bool parse_listen_address(const std::string& text, ListenAddress& out, std::string& error);

}  // namespace gitlocks::notary
