#include "listen_address.h"

#include <arpa/inet.h>
#include <netinet/in.h>

namespace gitlocks::notary {

std::string ListenAddress::with_port(int p) const { return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(p); }

bool parse_listen_address(const std::string& text, ListenAddress& out, std::string& error) {
  error = "listen address must be HOST:PORT or [IPV6]:PORT with PORT in 0..65535, not '" + text + "'";
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string host = text.substr(0, colon);
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5) return false;
  int p = 0;
  for (char c : port) {
    if (c < '0' || c > '9') return false;
    p = p * 10 + (c - '0');
  }
  if (p > 65535) return false;

  ListenAddress a;
  a.port = p;
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return false;
    host = host.substr(1, host.size() - 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, host.c_str(), &v6) != 1) return false;
    a.ipv6 = true;
    a.loopback = IN6_IS_ADDR_LOOPBACK(&v6);
  } else {
    if (host.find(':') != std::string::npos) return false;  // bare IPv6 needs brackets
    in_addr v4{};
    if (inet_pton(AF_INET, host.c_str(), &v4) == 1) a.loopback = (ntohl(v4.s_addr) >> 24) == 127;
    else a.loopback = host == "localhost";
  }
  a.host = host;
  out = a;
  error.clear();
  return true;
}

}  // namespace gitlocks::notary
