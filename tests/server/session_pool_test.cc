// SessionPool: N slots handed out one at a time, a bounded queue (one more is refused at once), waiters
// released by a freed slot, by close() and by their own give-up check; cancel_all reaches busy slots; a
// returned session is reset.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "server/session_pool.h"
#include "server_fixture.h"

namespace pocket::server {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<SessionPool> make_pool(int32_t slots, int32_t queue) {
  SessionOptions so;
  so.n_threads = 1;
  so.n_ctx = 64;
  auto p = SessionPool::create(testing::tiny_model(), so, PoolOptions{slots, queue});
  EXPECT_TRUE(p) << p.status().to_string();
  return std::move(*p);
}

TEST(SessionPool, SlotsQueueAndRefusal) {
  auto pool = make_pool(2, 1);
  ASSERT_EQ(pool->n_slots(), 2);
  EXPECT_EQ(pool->n_ctx(), 64);
  SessionPool::Lease a, b, c, d;
  ASSERT_EQ(pool->acquire(&a, nullptr), AcquireError::kNone);
  ASSERT_EQ(pool->acquire(&b, nullptr), AcquireError::kNone);
  EXPECT_NE(&a.session(), &b.session());
  EXPECT_EQ(pool->n_busy(), 2);
  // The third waits in the queue...
  auto waiter = std::async(std::launch::async, [&] { return pool->acquire(&c, nullptr); });
  while (pool->n_queued() == 0) std::this_thread::sleep_for(1ms);
  // ...and the fourth finds the queue full.
  EXPECT_EQ(pool->acquire(&d, nullptr), AcquireError::kBusy);
  EXPECT_EQ(waiter.wait_for(50ms), std::future_status::timeout);
  Session* freed = &a.session();
  a.release();
  ASSERT_EQ(waiter.get(), AcquireError::kNone);
  EXPECT_EQ(&c.session(), freed);
  EXPECT_EQ(pool->n_queued(), 0);
  EXPECT_EQ(pool->n_busy(), 2);
}

TEST(SessionPool, WaitersLeaveOnGiveUpAndClose) {
  auto pool = make_pool(1, 4);
  SessionPool::Lease held, other;
  ASSERT_EQ(pool->acquire(&held, nullptr), AcquireError::kNone);
  std::atomic<bool> client_here{true};
  auto quitter = std::async(std::launch::async,
                            [&] { return pool->acquire(&other, [&] { return client_here.load(); }, 5ms); });
  while (pool->n_queued() == 0) std::this_thread::sleep_for(1ms);
  client_here = false;
  EXPECT_EQ(quitter.get(), AcquireError::kGaveUp);
  EXPECT_EQ(pool->n_queued(), 0);

  SessionPool::Lease third;
  auto closed = std::async(std::launch::async, [&] { return pool->acquire(&third, nullptr); });
  while (pool->n_queued() == 0) std::this_thread::sleep_for(1ms);
  pool->close();
  EXPECT_EQ(closed.get(), AcquireError::kClosed);
  EXPECT_EQ(pool->acquire(&third, nullptr), AcquireError::kClosed);
  held.release();
  EXPECT_TRUE(pool->wait_idle(1s));
}

TEST(SessionPool, CancelAllReachesBusySlotsAndLeasesStartClear) {
  auto pool = make_pool(2, 0);
  SessionPool::Lease a;
  ASSERT_EQ(pool->acquire(&a, nullptr), AcquireError::kNone);
  EXPECT_FALSE(a.cancel().load());
  pool->cancel_all();
  EXPECT_TRUE(a.cancel().load());
  a.release();
  SessionPool::Lease b;
  ASSERT_EQ(pool->acquire(&b, nullptr), AcquireError::kNone);
  EXPECT_FALSE(b.cancel().load());  // a new lease starts uncancelled
}

TEST(SessionPool, ReturnedSessionIsReset) {
  auto pool = make_pool(1, 0);
  {
    SessionPool::Lease a;
    ASSERT_EQ(pool->acquire(&a, nullptr), AcquireError::kNone);
    GenerateOptions go;
    go.n_predict = 4;
    ASSERT_TRUE(a.session().generate("hello", go, nullptr).is_ok());
    EXPECT_GT(a.session().n_past(), 0);
  }
  SessionPool::Lease b;
  ASSERT_EQ(pool->acquire(&b, nullptr), AcquireError::kNone);
  EXPECT_EQ(b.session().n_past(), 0);
}

TEST(SessionPool, BadSizesAreRefused) {
  SessionOptions so;
  so.n_ctx = 64;
  EXPECT_FALSE(SessionPool::create(testing::tiny_model(), so, PoolOptions{0, 1}));
  EXPECT_FALSE(SessionPool::create(testing::tiny_model(), so, PoolOptions{1, -1}));
}

}  // namespace
}  // namespace pocket::server
