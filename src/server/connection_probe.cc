// ConnectionProbe: match /proc/self/fd sockets by getsockname/getpeername, then poll for POLLRDHUP.
#include "server/connection_probe.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

namespace pocket::server {

namespace {

// "127.0.0.1" / "::1" and the port of a socket address; false for other families.
bool address_of(const sockaddr_storage& ss, std::string* ip, int* port) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    if (inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf) == nullptr) return false;
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf) == nullptr) return false;
    *port = ntohs(a->sin6_port);
  } else {
    return false;
  }
  *ip = buf;
  return true;
}

bool matches(int fd, const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  std::string ip;
  int port = -1;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;  // not a connected socket
  if (!address_of(ss, &ip, &port) || port != remote_port || ip != remote_addr) return false;
  len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return false;
  return address_of(ss, &ip, &port) && port == local_port && (local_addr.empty() || ip == local_addr);
}

}  // namespace

ConnectionProbe::ConnectionProbe(const std::string& local_addr, int local_port, const std::string& remote_addr,
                                 int remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  const int own = dirfd(dir);
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    if (matches(fd, local_addr, local_port, remote_addr, remote_port)) {
      fd_ = fd;
      break;
    }
  }
  closedir(dir);
}

bool widen_listen_backlog(int port, int backlog) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  const int own = dirfd(dir);
  bool done = false;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const int fd = std::atoi(e->d_name);
    if (fd == own) continue;
    int listening = 0;
    socklen_t optlen = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || listening == 0) continue;
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    std::string ip;
    int local_port = -1;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0 || !address_of(ss, &ip, &local_port)) continue;
    if (local_port == port && listen(fd, backlog) == 0) done = true;
  }
  closedir(dir);
  return done;
}

bool ConnectionProbe::alive() const {
  if (fd_ < 0) return true;
  pollfd p{};
  p.fd = fd_;
  p.events = POLLRDHUP;
  if (poll(&p, 1, 0) <= 0) return true;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) == 0;
}

}  // namespace pocket::server
