// Which address of this host the rank agents on other hosts can connect to,
// for a coordinator bound to a wildcard (docs/launch.md "Several hosts").
// The loopback address is not (on another host it is that host), nor is this
// host's name, which may resolve only here.
#pragma once

#include <string>
#include <vector>

namespace pypto::launch {

// True when `host` (a name or a literal) resolves to an address of one of
// this host's interfaces, or is a loopback name.
bool is_local_host(const std::string& host);

// The address of this host that routes to the first of `peers` (hostfile
// hosts; names or literals) that is another host: the source address the
// kernel would pick for it (a UDP connect, which sends nothing). Without such
// a route to one, the first non-loopback IPv4 address of an interface that is
// up. Throws InfraError when there is none but a peer is another host, saying
// to pass --bind tcp://ADDR:PORT; with no other host among the peers and no
// such address, 127.0.0.1.
std::string reachable_address(const std::vector<std::string>& peers);

// For a ZeroMQ tcp endpoint: whether its host part is a wildcard (0.0.0.0,
// *, [::]) or a loopback address (127.x, [::1], localhost).
bool endpoint_is_wildcard(const std::string& endpoint);
bool endpoint_is_loopback(const std::string& endpoint);

}  // namespace pypto::launch
