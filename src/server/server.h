// The OpenAI-compatible HTTP server (`pocket serve`, docs/server.md): chat and text completions (plain and
// server-sent events), models, health, and pocket's task endpoint, over a SessionPool on one Model, on
// cpp-httplib. Thread-safe: shutdown() may be called from any thread while serve() runs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"
#include "generate/session.h"
#include "speculative/speculative_session.h"

namespace pocket::server {

class SessionPool;

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  int port = 8080;                 // 0: any free port (bind() says which)
  std::string api_key;             // non-empty: every endpoint but /health wants "Authorization: Bearer KEY"
  std::string model_name;          // the id /v1/models reports
  int32_t n_parallel = 1;          // sessions generating at once
  int32_t max_queue = 16;          // requests waiting for a session; beyond: 503 with Retry-After
  int64_t max_tokens = 2048;       // most tokens one request may ask for
  size_t max_body_bytes = 1 << 20; // larger bodies: 413
  int32_t max_json_depth = 64;     // deeper request JSON: 400
  int32_t read_timeout_s = 10;     // a client that sends nothing for this long is dropped
  int32_t retry_after_s = 1;       // the Retry-After of a 503
  // Speculative decoding of completions (`pocket serve --spec`): each session also holds a speculative
  // session with `spec`; completions with response_format and /v1/tasks run without it. Lossless: greedy
  // responses are the plain ones.
  bool speculate = false;
  SpeculativeOptions spec;
};

class Server {
 public:
  // Creates the sessions (memory planned up front) and the routes; does not bind yet.
  static Expected<std::unique_ptr<Server>> create(std::shared_ptr<const Model> model, const SessionOptions& so,
                                                  const ServerOptions& opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds host:port; returns the port (the chosen one for port 0).
  Expected<int> bind();
  // Serves until shutdown(); returns once every connection thread has finished.
  Status serve();
  // Stops taking requests (503 from now on), lets in-flight ones finish for up to `grace`, cancels what
  // is left (they end within a token or a layer), then stops the listener. Idempotent.
  void shutdown(std::chrono::milliseconds grace);

  int64_t n_ctx() const;  // each session's context length, tokens
  // Why the speculation asked for is off (a block drafter beyond --mem-budget); "" when on or not asked.
  const std::string& spec_off_reason() const;

  // For tests: the sessions (holding a slot makes the server busy without timing games).
  SessionPool& pool_for_testing();

  struct Impl;  // server.cc

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace pocket::server
