// ConnectionProbe on real loopback TCP connections: it finds the accepted socket by its address pair,
// reads "alive" while the peer is connected (even with unread data waiting), and "gone" once the peer
// closes; an unknown pair is never reported gone.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "server/connection_probe.h"

namespace pocket::server {
namespace {

struct Pair {
  int listener = -1, client = -1, accepted = -1;
  int server_port = 0, client_port = 0;
  ~Pair() {
    for (int fd : {listener, client, accepted}) {
      if (fd >= 0) close(fd);
    }
  }
};

int port_of(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  if (peer) getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
  else getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

void connect_pair(Pair* p) {
  p->listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(p->listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(p->listener, 4), 0);
  p->server_port = port_of(p->listener, false);
  a.sin_port = htons(static_cast<uint16_t>(p->server_port));
  p->client = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_EQ(connect(p->client, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  p->accepted = accept(p->listener, nullptr, nullptr);
  ASSERT_GE(p->accepted, 0);
  p->client_port = port_of(p->client, false);
}

TEST(ConnectionProbe, SeesThePeerLeave) {
  Pair p;
  connect_pair(&p);
  ConnectionProbe probe("127.0.0.1", p.server_port, "127.0.0.1", p.client_port);
  ASSERT_TRUE(probe.found());
  EXPECT_TRUE(probe.alive());
  ASSERT_EQ(write(p.client, "GET / HTTP/1.1\r\n", 16), 16);  // pipelined, unread data is not a hang-up
  EXPECT_TRUE(probe.alive());
  close(p.client);
  p.client = -1;
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = !probe.alive();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(gone);
}

TEST(ConnectionProbe, UnknownPairIsAssumedAlive) {
  Pair p;
  connect_pair(&p);
  ConnectionProbe probe("127.0.0.1", p.server_port, "127.0.0.1", p.client_port == 1 ? 2 : 1);
  EXPECT_FALSE(probe.found());
  EXPECT_TRUE(probe.alive());
  ConnectionProbe none;
  EXPECT_TRUE(none.alive());
}

}  // namespace
}  // namespace pocket::server
