// The HTTP side of `pocket serve`: routes, bearer-key check, OpenAI error bodies, server-sent events,
// queueing onto the SessionPool and the bounded shutdown (see server.h, docs/server.md).
#include "server/server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <random>
#include <thread>

#include "server/completion.h"
#include "server/connection_probe.h"
#include "server/openai_request.h"
#include "server/session_pool.h"
#include "task/task.h"

namespace pocket::server {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Server::Impl {
  std::shared_ptr<const Model> model;
  ServerOptions opts;
  std::unique_ptr<SessionPool> pool;
  httplib::Server http;
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> next_id{0};
  // Completion requests by outcome, reported by /health.
  std::atomic<uint64_t> n_completed{0}, n_cancelled{0}, n_failed{0}, n_rejected{0};
  uint64_t id_prefix = 0;  // random per process, so ids differ across restarts
  int64_t created = 0;     // when the model was loaded, Unix seconds
  std::mutex shutdown_mu;
  bool shut_down = false;
  bool serving = false;  // serve() has passed its shutdown check (under shutdown_mu)
  bool bound = false;

  void routes();
  std::string new_id(const char* kind) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s-%016llx%08llx", kind, static_cast<unsigned long long>(id_prefix),
                  static_cast<unsigned long long>(next_id.fetch_add(1)));
    return buf;
  }
  static void send_json(httplib::Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(dump_json(body), "application/json");
  }
  void send_error(httplib::Response& res, const ApiError& e) const {
    if (e.http_status == 503) res.set_header("Retry-After", std::to_string(opts.retry_after_s));
    send_json(res, e.http_status, error_body(e));
  }
  bool acquire(const httplib::Request& req, httplib::Response& res, const ConnectionProbe& probe,
               SessionPool::Lease* lease);
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);
  void count(const Status& st) {
    (st.is_ok() ? n_completed : st.code() == ErrorCode::kCancelled ? n_cancelled : n_failed).fetch_add(1);
  }
  void task(const httplib::Request& req, httplib::Response& res);
};

namespace {

ApiError server_error(int status, std::string code, std::string message) {
  ApiError e;
  e.http_status = status;
  e.type = status == 401 ? "invalid_request_error" : status >= 500 ? "server_error" : "invalid_request_error";
  e.code = std::move(code);
  e.message = "[server] " + std::move(message);
  return e;
}

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// The state a streamed response keeps between the handler and httplib's content provider.
struct StreamState {
  Server::Impl* impl = nullptr;
  SessionPool::Lease lease;
  CompletionRequest req;
  PreparedCompletion prepared;
  ConnectionProbe probe;
  std::string id, model;
  int64_t created = 0;
  double queue_ms = 0;
};

// A completion on the lease's speculative session when the server speculates (constrained ones too: the
// grammar masks each verified row), else on its plain session.
Status generate(const SessionPool::Lease& lease, PreparedCompletion& p, const std::function<bool(std::string_view)>& emit,
                const std::function<bool()>& client_alive, CompletionResult* out) {
  if (lease.spec_session() != nullptr) {
    return run_completion(*lease.spec_session(), p, lease.cancel(), emit, client_alive, out);
  }
  return run_completion(lease.session(), p, lease.cancel(), emit, client_alive, out);
}

bool write_event(httplib::DataSink& sink, const std::string& data) {
  const std::string ev = "data: " + data + "\n\n";
  return sink.write(ev.data(), ev.size());
}

}  // namespace

bool Server::Impl::acquire(const httplib::Request&, httplib::Response& res, const ConnectionProbe& probe,
                           SessionPool::Lease* lease) {
  if (draining.load()) {
    send_error(res, server_error(503, "shutting_down", "the server is shutting down"));
    return false;
  }
  const auto keep_waiting = [&] { return probe.alive() && !draining.load(); };
  switch (pool->acquire(lease, keep_waiting)) {
    case AcquireError::kNone:
      return true;
    case AcquireError::kBusy:
      n_rejected.fetch_add(1);
      send_error(res, server_error(503, "server_busy",
                                   "all " + std::to_string(pool->n_slots()) + " sessions are busy and " +
                                       std::to_string(opts.max_queue) + " requests are queued; retry later"));
      return false;
    case AcquireError::kClosed:
      send_error(res, server_error(503, "shutting_down", "the server is shutting down"));
      return false;
    case AcquireError::kGaveUp:
      send_error(res, server_error(503, "cancelled", "the request left the queue (client gone or shutdown)"));
      return false;
  }
  return false;
}

void Server::Impl::completion(const httplib::Request& hreq, httplib::Response& res, bool chat) {
  const auto t0 = Clock::now();
  json body;
  ApiError err;
  CompletionRequest req;
  if (!parse_json_body(hreq.body, opts.max_json_depth, &body, &err) ||
      !parse_completion_request(body, chat, &req, &err)) {
    return send_error(res, err);
  }
  if (!req.schema_json.empty()) {
    // The schema as the client wrote it: property order is the order the answer's keys take, and `body`
    // (nlohmann::json) sorted the keys. The body already parsed and passed the depth check above.
    const auto ordered = nlohmann::ordered_json::parse(hreq.body, nullptr, /*allow_exceptions=*/false);
    const auto* rf = ordered.is_object() && ordered.contains("response_format") ? &ordered["response_format"] : nullptr;
    if (rf != nullptr && rf->is_object() && rf->contains("json_schema") && (*rf)["json_schema"].is_object() &&
        (*rf)["json_schema"].contains("schema")) {
      req.schema_json = (*rf)["json_schema"]["schema"].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    }
  }
  auto prepared = prepare_completion(*model, pool->n_ctx(), req, opts.max_tokens);
  if (!prepared) return send_error(res, api_error_from(prepared.status()));
  ConnectionProbe probe(hreq.local_addr, hreq.local_port, hreq.remote_addr, hreq.remote_port);
  SessionPool::Lease lease;
  if (!acquire(hreq, res, probe, &lease)) return;
  const double queue_ms = ms_since(t0);
  const std::string id = new_id(chat ? "chatcmpl" : "cmpl");
  const int64_t now = static_cast<int64_t>(std::time(nullptr));

  if (!req.stream) {
    CompletionResult r;
    Status st = generate(lease, *prepared, nullptr, [&] { return probe.alive(); }, &r);
    lease.release();
    count(st);
    if (!st.is_ok()) return send_error(res, api_error_from(st));
    return send_json(res, 200, completion_response(req, id, now, opts.model_name, r, queue_ms));
  }

  auto state = std::make_shared<StreamState>();
  state->impl = this;
  state->lease = std::move(lease);
  state->req = std::move(req);
  state->prepared = std::move(*prepared);
  state->probe = probe;
  state->id = id;
  state->model = opts.model_name;
  state->created = now;
  state->queue_ms = queue_ms;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [state](size_t, httplib::DataSink& sink) {
        StreamState& s = *state;
        bool first = true;
        const auto emit = [&](std::string_view delta) {
          const bool ok = write_event(sink, dump_json(completion_chunk(s.req, s.id, s.created, s.model, delta, first, "")));
          first = false;
          return ok;
        };
        // The role goes out at once, so a client sees the stream open before the first token.
        if (s.req.chat && !emit("")) return false;
        CompletionResult r;
        Status st = generate(s.lease, s.prepared, emit, [&] { return s.probe.alive(); }, &r);
        s.lease.release();
        s.impl->count(st);
        if (!st.is_ok()) {
          if (!s.probe.alive()) return false;  // nobody to tell; httplib drops the connection
          write_event(sink, dump_json(error_body(api_error_from(st))));
          write_event(sink, "[DONE]");
          sink.done();
          return true;
        }
        json last = completion_chunk(s.req, s.id, s.created, s.model, "", false, r.finish_reason);
        last["usage"] = usage_json(r.stats);
        last["timings"] = timings_json(r, s.queue_ms);
        if (!write_event(sink, dump_json(last))) return false;
        if (s.req.include_usage) {  // OpenAI's stream_options.include_usage: a chunk with usage, no choices
          json u = completion_chunk(s.req, s.id, s.created, s.model, "", false, "");
          u["choices"] = json::array();
          u["usage"] = usage_json(r.stats);
          if (!write_event(sink, dump_json(u))) return false;
        }
        if (!write_event(sink, "[DONE]")) return false;
        sink.done();
        return true;
      },
      [state](bool) { state->lease.release(); });
}

void Server::Impl::task(const httplib::Request& hreq, httplib::Response& res) {
  const auto t0 = Clock::now();
  json checked;
  ApiError err;
  if (!parse_json_body(hreq.body, opts.max_json_depth, &checked, &err)) return send_error(res, err);
  // Parsed again keeping key order: an extraction's schema properties come out in the order written.
  nlohmann::ordered_json request;
  try {
    request = nlohmann::ordered_json::parse(hreq.body);
  } catch (const std::exception& e) {
    return send_error(res, server_error(400, "", std::string("the request body is not valid JSON: ") + e.what()));
  }
  if (request.is_object()) {
    if (auto it = request.find("max_tokens"); it != request.end() && it->is_number_integer() &&
                                              it->get<int64_t>() > opts.max_tokens) {
      ApiError e = server_error(400, "", "'max_tokens' is " + it->dump() + "; this server allows at most " +
                                             std::to_string(opts.max_tokens) + " (--max-tokens)");
      e.param = "max_tokens";
      return send_error(res, e);
    }
  }
  ConnectionProbe probe(hreq.local_addr, hreq.local_port, hreq.remote_addr, hreq.remote_port);
  SessionPool::Lease lease;
  if (!acquire(hreq, res, probe, &lease)) return;
  const double queue_ms = ms_since(t0);
  // A task has no per-token callback: a watcher polls the connection and raises the cancel flag.
  std::atomic<bool> finished{false};
  std::atomic<bool>& cancel = lease.cancel();
  std::thread watcher([&] {
    while (!finished.load() && !cancel.load()) {
      if (!probe.alive()) cancel.store(true);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  // With --spec, free generation (rewrite, token-by-token extraction) runs on the speculative session.
  TaskGenerateFn gen;
  if (SpeculativeSession* sp = lease.spec_session(); sp != nullptr) {
    gen = [sp](std::span<const int32_t> prompt, const GenerateOptions& go, const TokenCallback& cb,
               const std::atomic<bool>* c, GenerateStats* st) {
      sp->reset();
      return sp->generate_tokens(prompt, go, cb, c, st);
    };
  }
  auto out = run_task(lease.session(), request, &cancel, gen);
  finished.store(true);
  watcher.join();
  lease.release();
  count(out ? Status::ok() : out.status());
  if (!out) return send_error(res, api_error_from(out.status()));
  (*out)["timings"] = {{"queue_ms", queue_ms}, {"total_ms", ms_since(t0)}};
  res.status = 200;
  res.set_content(out->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace), "application/json");
}

void Server::Impl::routes() {
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (opts.api_key.empty() || req.path == "/health") return httplib::Server::HandlerResponse::Unhandled;
    const std::string want = "Bearer " + opts.api_key;
    const std::string got = req.get_header_value("Authorization");
    // Compared in time independent of where the strings first differ.
    unsigned diff = got.size() == want.size() ? 0u : 1u;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) diff |= static_cast<unsigned char>(got[i] ^ want[i]);
    if (diff == 0) return httplib::Server::HandlerResponse::Unhandled;
    ApiError e = server_error(401, "invalid_api_key", "missing or incorrect API key (Authorization: Bearer KEY)");
    send_error(res, e);
    return httplib::Server::HandlerResponse::Handled;
  });
  // Statuses httplib sets by itself (404, 413, 400 for a malformed request...) get an OpenAI-shaped body.
  http.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_length_ > 0) return httplib::Server::HandlerResponse::Unhandled;
    std::string message = "HTTP " + std::to_string(res.status);
    std::string code;
    if (res.status == 404) message = "no route for " + req.method + " " + req.path, code = "not_found";
    if (res.status == 413) {
      message = "the request body is larger than " + std::to_string(opts.max_body_bytes) + " bytes (--max-body)";
      code = "request_too_large";
    }
    if (res.status == 400) message = "malformed HTTP request";
    ApiError e = server_error(res.status, code, message);
    send_json(res, res.status, error_body(e));
    return httplib::Server::HandlerResponse::Handled;
  }));
  http.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& ex) {
      what = ex.what();
    } catch (...) {
    }
    send_error(res, server_error(500, "internal_error", "internal error: " + what));
  });
  http.Post("/v1/chat/completions", [this](const httplib::Request& q, httplib::Response& r) { completion(q, r, true); });
  http.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { completion(q, r, false); });
  http.Post("/v1/pocket/task", [this](const httplib::Request& q, httplib::Response& r) { task(q, r); });
  const auto model_entry = [this] {
    return json{{"id", opts.model_name}, {"object", "model"}, {"created", created}, {"owned_by", "pocket"},
                {"meta", {{"n_ctx", pool->n_ctx()}, {"n_vocab", model->hparams().n_vocab},
                          {"weights", model->weight_type_label()}}}};
  };
  http.Get("/v1/models", [this, model_entry](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, json{{"object", "list"}, {"data", json::array({model_entry()})}});
  });
  http.Get(R"(/v1/models/(.+))", [this, model_entry](const httplib::Request& req, httplib::Response& res) {
    if (req.matches[1] != opts.model_name) {
      ApiError e = server_error(404, "model_not_found", "no model '" + std::string(req.matches[1]) + "'");
      e.type = "invalid_request_error";
      return send_error(res, e);
    }
    send_json(res, 200, model_entry());
  });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const bool down = draining.load();
    send_json(res, down ? 503 : 200,
              json{{"status", down ? "shutting_down" : "ok"},
                   {"slots", {{"total", pool->n_slots()}, {"busy", pool->n_busy()}, {"queued", pool->n_queued()}}},
                   {"requests", {{"completed", n_completed.load()}, {"cancelled", n_cancelled.load()},
                                 {"failed", n_failed.load()}, {"rejected_busy", n_rejected.load()}}}});
  });
}

const std::string& Server::spec_off_reason() const { return impl_->pool->spec_off_reason(); }

int64_t Server::n_ctx() const { return impl_->pool->n_ctx(); }

SessionPool& Server::pool_for_testing() { return *impl_->pool; }

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Expected<std::unique_ptr<Server>> Server::create(std::shared_ptr<const Model> model, const SessionOptions& so,
                                                 const ServerOptions& opts) {
  if (opts.max_tokens < 1 || opts.max_tokens > (1 << 24)) {
    return invalid_argument("[server] --max-tokens must be 1..16777216, got " + std::to_string(opts.max_tokens));
  }
  if (opts.max_body_bytes < 1024) return invalid_argument("[server] --max-body must be at least 1024 bytes");
  auto impl = std::make_unique<Impl>();
  impl->model = model;
  impl->opts = opts;
  PoolOptions po;
  po.n_slots = opts.n_parallel;
  po.max_queue = opts.max_queue;
  po.speculate = opts.speculate;
  po.spec = opts.spec;
  POCKET_ASSIGN_OR_RETURN(impl->pool, SessionPool::create(std::move(model), so, po));
  impl->id_prefix = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  impl->created = static_cast<int64_t>(std::time(nullptr));
  // Connection threads: one per session and per queued request, plus a few that answer the quick
  // requests (health, models, 503s) while every session is busy.
  const size_t n_threads = static_cast<size_t>(opts.n_parallel) + static_cast<size_t>(opts.max_queue) + 4;
  impl->http.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
  // httplib's default sets SO_REUSEPORT, which lets a second server bind the same port and silently share
  // its connections; SO_REUSEADDR alone still allows a restart while old connections sit in TIME_WAIT.
  impl->http.set_socket_options([](int sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  impl->http.set_payload_max_length(opts.max_body_bytes);
  impl->http.set_read_timeout(opts.read_timeout_s, 0);
  impl->http.set_write_timeout(opts.read_timeout_s, 0);
  impl->http.set_keep_alive_timeout(5);
  impl->http.set_keep_alive_max_count(1000);
  impl->routes();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Expected<int> Server::bind() {
  Impl& m = *impl_;
  int port = m.opts.port;
  if (port < 0 || port > 65535) return invalid_argument("[server] --port must be 0..65535, got " + std::to_string(port));
  if (port == 0) {
    port = m.http.bind_to_any_port(m.opts.host);
  } else if (!m.http.bind_to_port(m.opts.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    return io_error("[server] cannot listen on " + m.opts.host + ":" + std::to_string(m.opts.port) +
                    " (address in use, or not an address of this machine)");
  }
  // A burst of connections (the load test's clients, a thousand dropped ones) must not wait out SYN
  // retransmits behind httplib's backlog of 5.
  (void)widen_listen_backlog(port, 1024);
  m.bound = true;
  return port;
}

Status Server::serve() {
  Impl& m = *impl_;
  if (!m.bound) return invalid_argument("[server] serve() before bind()");
  {
    std::lock_guard<std::mutex> lock(m.shutdown_mu);
    if (m.shut_down) return Status::ok();
    m.serving = true;
  }
  if (!m.http.listen_after_bind() && !m.draining.load()) return io_error("[server] the listener failed");
  return Status::ok();
}

void Server::shutdown(std::chrono::milliseconds grace) {
  Impl& m = *impl_;
  {
    std::lock_guard<std::mutex> lock(m.shutdown_mu);
    if (m.shut_down) return;
    m.shut_down = true;
  }
  m.draining.store(true);
  m.pool->close();
  if (!m.pool->wait_idle(grace)) {
    m.pool->cancel_all();
    (void)m.pool->wait_idle(std::chrono::seconds(5));
  }
  bool serving = false;
  {
    std::lock_guard<std::mutex> lock(m.shutdown_mu);
    serving = m.serving;
  }
  // serve() may be between its check and the listener starting; stop() acts only on a running listener.
  for (int i = 0; serving && !m.http.is_running() && i < 2000; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Stops accepting, then waits for every connection thread (an idle keep-alive one notices within ~10 ms).
  m.http.stop();
}

}  // namespace pocket::server
