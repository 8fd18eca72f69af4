// Whether an HTTP client is still there while its request generates. cpp-httplib (0.11) does not hand
// the connection's socket to a handler, so the probe finds it by its address pair (unique among open
// TCP connections) and then asks the kernel whether the peer has hung up. Linux only.
#pragma once

#include <string>

namespace pocket::server {

class ConnectionProbe {
 public:
  ConnectionProbe() = default;
  // Finds the open socket whose local end is local_addr:local_port and whose peer is remote_addr:remote_port.
  // Not found (or not Linux): alive() always answers true.
  ConnectionProbe(const std::string& local_addr, int local_port, const std::string& remote_addr, int remote_port);

  bool found() const { return fd_ >= 0; }
  // False once the peer has closed or reset the connection. Does not consume data. The socket belongs
  // to the server and stays open while the handler runs, so the descriptor cannot be reused under us.
  bool alive() const;

 private:
  int fd_ = -1;
};

// cpp-httplib (0.11) listens with a backlog of 5, so a burst of connections overflows the accept queue
// and clients wait out SYN retransmits (1 s, 3 s, ...). Linux lets listen() be called again on a listening
// socket to change its backlog: this finds the socket listening on `port` and does that. False when no
// such socket was found (the backlog stays as it was).
bool widen_listen_backlog(int port, int backlog);

}  // namespace pocket::server
