#include "launch/reachable_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "pypto/error.h"

namespace pypto::launch {

namespace {

std::string numeric(const sockaddr* address) {
  char text[NI_MAXHOST] = {};
  const socklen_t length =
      address->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (::getnameinfo(address, length, text, sizeof(text), nullptr, 0, NI_NUMERICHOST) != 0)
    return "";
  return text;
}

bool is_loopback(const sockaddr* address) {
  if (address->sa_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in*>(address)->sin_addr.s_addr) >> 24) == 127;
  if (address->sa_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr);
  return false;
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoList = std::unique_ptr<addrinfo, AddrInfoDeleter>;

AddrInfoList resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return nullptr;
  return AddrInfoList(found);
}

std::vector<std::string> interface_addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next)
    if (it->ifa_addr != nullptr &&
        (it->ifa_addr->sa_family == AF_INET || it->ifa_addr->sa_family == AF_INET6))
      out.push_back(numeric(it->ifa_addr));
  ::freeifaddrs(list);
  return out;
}

// The source address the routing table picks towards `peer` (no packet is sent).
std::string source_address_towards(const addrinfo& peer) {
  const int fd = ::socket(peer.ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  std::string address;
  if (::connect(fd, peer.ai_addr, peer.ai_addrlen) == 0) {
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0 &&
        !is_loopback(reinterpret_cast<sockaddr*>(&local)))
      address = numeric(reinterpret_cast<sockaddr*>(&local));
  }
  ::close(fd);
  return address;
}

std::string host_part(const std::string& endpoint) {
  const size_t scheme = endpoint.find("://");
  std::string rest = scheme == std::string::npos ? endpoint : endpoint.substr(scheme + 3);
  const size_t colon = rest.rfind(':');
  return colon == std::string::npos ? rest : rest.substr(0, colon);
}

}  // namespace

bool is_local_host(const std::string& host) {
  if (host == "localhost") return true;
  const AddrInfoList found = resolve(host);
  if (!found) return false;
  const std::vector<std::string> mine = interface_addresses();
  for (const addrinfo* it = found.get(); it != nullptr; it = it->ai_next) {
    if (is_loopback(it->ai_addr)) return true;
    const std::string address = numeric(it->ai_addr);
    for (const std::string& own : mine)
      if (own == address) return true;
  }
  return false;
}

std::string reachable_address(const std::vector<std::string>& peers) {
  for (const std::string& peer : peers) {
    if (is_local_host(peer)) continue;
    const AddrInfoList found = resolve(peer);
    for (const addrinfo* it = found.get(); it != nullptr; it = it->ai_next) {
      std::string address = source_address_towards(*it);
      if (address.empty()) continue;
      return it->ai_family == AF_INET6 ? "[" + address + "]" : address;
    }
  }
  ifaddrs* list = nullptr;
  std::string address;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* it = list; it != nullptr && address.empty(); it = it->ifa_next)
      if (it->ifa_addr != nullptr && it->ifa_addr->sa_family == AF_INET &&
          (it->ifa_flags & IFF_UP) != 0 && !is_loopback(it->ifa_addr))
        address = numeric(it->ifa_addr);
    ::freeifaddrs(list);
  }
  if (!address.empty()) return address;
  for (const std::string& peer : peers)
    if (!is_local_host(peer))
      throw InfraError("no address of this host routes to " + peer +
                       " (from the hostfile); pass --bind tcp://ADDR:PORT with an address the "
                       "agents on " + peer + " can connect to");
  return "127.0.0.1";  // every rank is on this host, and it has no other address
}

bool endpoint_is_wildcard(const std::string& endpoint) {
  const std::string host = host_part(endpoint);
  return host == "0.0.0.0" || host == "*" || host == "[::]";
}

bool endpoint_is_loopback(const std::string& endpoint) {
  const std::string host = host_part(endpoint);
  return host == "localhost" || host == "[::1]" || host.rfind("127.", 0) == 0;
}

}  // namespace pypto::launch
