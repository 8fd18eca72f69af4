// The server over real HTTP on 127.0.0.1 (an ephemeral port), driven by cpp-httplib's client and raw
// sockets: results equal a direct Session run, streaming equals non-streaming, error bodies are OpenAI's
// shape, auth, 413/404/400s, busy 503 with Retry-After, a dropped client frees its slot, bad bytes and
// a thousand dropped connections leave the server serving, shutdown returns promptly, response_format
// gives JSON of the schema, and /v1/pocket/task runs the task layer.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include <nlohmann/json.hpp>

#include "server/server.h"
#include "server/session_pool.h"
#include "server_fixture.h"
#include "speculative/block_drafter_synth.h"
#include "tokenizer/chat_template.h"

namespace pocket::server {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// A server running on its own thread for the test's lifetime.
class Running {
 public:
  Running(std::shared_ptr<const Model> model, ServerOptions opts, int64_t n_ctx = 512) {
    opts.host = "127.0.0.1";
    opts.port = 0;
    if (opts.model_name.empty()) opts.model_name = "test-model";
    SessionOptions so;
    so.n_ctx = n_ctx;
    so.n_threads = 1;
    auto s = Server::create(std::move(model), so, opts);
    EXPECT_TRUE(s) << s.status().to_string();
    server_ = std::move(*s);
    auto port = server_->bind();
    EXPECT_TRUE(port) << port.status().to_string();
    port_ = *port;
    thread_ = std::thread([this] { EXPECT_TRUE(server_->serve().is_ok()); });
  }
  ~Running() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    server_->shutdown(2s);
    thread_.join();
  }
  int port() const { return port_; }
  Server& server() { return *server_; }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    return c;
  }

 private:
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
};

json parse(const std::string& s) { return json::parse(s); }

void expect_error_shape(const httplib::Result& r, int status) {
  ASSERT_TRUE(r) << "no response";
  EXPECT_EQ(r->status, status) << r->body;
  const json j = parse(r->body);
  ASSERT_TRUE(j.contains("error")) << r->body;
  EXPECT_TRUE(j["error"]["message"].is_string());
  EXPECT_TRUE(j["error"]["type"].is_string());
  EXPECT_TRUE(j["error"].contains("param"));
  EXPECT_TRUE(j["error"].contains("code"));
}

// Server-sent events: the JSON of every "data:" line before [DONE]; `done` says whether [DONE] came.
std::vector<json> sse_events(const std::string& body, bool* done) {
  std::vector<json> out;
  *done = false;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    const std::string data = body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") {
      *done = true;
      break;
    }
    out.push_back(parse(data));
  }
  return out;
}

int connect_to(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Polls `done` every millisecond for up to 20 s; false on time-out (so a broken server fails, never hangs).
template <typename F>
bool wait_until(F done) {
  for (int i = 0; i < 20000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

ServerOptions long_requests() {
  ServerOptions o;
  o.max_tokens = 4000;
  return o;
}

const char* kChat = R"({"model":"test-model","messages":[{"role":"user","content":"提取JSON：黑色保温杯，品牌山泉，￥89。"}],
                        "temperature":0,"max_tokens":48})";

TEST(Server, HealthAndModels) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  auto c = srv.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(parse(h->body)["status"], "ok");
  EXPECT_EQ(parse(h->body)["slots"]["total"], 1);
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  const json j = parse(m->body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "test-model");
  EXPECT_EQ(j["data"][0]["meta"]["n_ctx"], 512);
  EXPECT_EQ(c.Get("/v1/models/test-model")->status, 200);
  expect_error_shape(c.Get("/v1/models/other"), 404);
  expect_error_shape(c.Get("/nowhere"), 404);
}

TEST(Server, ChatEqualsDirectSessionAndStreamEqualsPlain) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  auto c = srv.client();
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = parse(r->body);
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["model"], "test-model");
  const std::string content = j["choices"][0]["message"]["content"];
  EXPECT_FALSE(content.empty());
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_GT(j["usage"]["completion_tokens"].get<int>(), 0);
  EXPECT_EQ(j["usage"]["total_tokens"].get<int>(),
            j["usage"]["prompt_tokens"].get<int>() + j["usage"]["completion_tokens"].get<int>());
  EXPECT_GE(j["timings"]["predicted_ms"].get<double>(), 0.0);

  // The same chat straight through a Session (its own prompt encoding).
  SessionOptions so;
  so.n_ctx = 512;
  so.n_threads = 1;
  auto session = Session::create(model, so);
  ASSERT_TRUE(session);
  const std::vector<ChatMessage> msgs = {{"user", "提取JSON：黑色保温杯，品牌山泉，￥89。"}};
  auto rendered = apply_chat_template(model->config().chat_template, msgs, true);
  ASSERT_TRUE(rendered);
  GenerateOptions go;
  go.n_predict = 48;
  go.parse_special = true;
  go.sampling.temperature = 0.0f;
  go.sampling.repeat_penalty = model->config().sampling.repeat_penalty;
  go.sampling.repeat_last_n = model->config().sampling.repeat_last_n;
  std::string want;
  ASSERT_TRUE((*session)->generate(*rendered, go, [&](int32_t, std::string_view t) { want += t; return true; }).is_ok());
  EXPECT_EQ(content, want);

  // Streaming: the deltas add up to the same text; the last chunk has the finish reason, usage and
  // timings; include_usage adds a choices-less usage chunk; then [DONE].
  json body = parse(kChat);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  auto s = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  EXPECT_NE(s->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  bool done = false;
  const std::vector<json> ev = sse_events(s->body, &done);
  EXPECT_TRUE(done);
  ASSERT_GE(ev.size(), 3u);
  EXPECT_EQ(ev[0]["choices"][0]["delta"]["role"], "assistant");
  std::string streamed;
  for (size_t i = 0; i + 1 < ev.size(); ++i) {
    EXPECT_EQ(ev[i]["object"], "chat.completion.chunk");
    EXPECT_EQ(ev[i]["id"], ev[0]["id"]);
    if (ev[i]["choices"].empty()) continue;
    if (ev[i]["choices"][0]["delta"].contains("content")) streamed += ev[i]["choices"][0]["delta"]["content"];
  }
  EXPECT_EQ(streamed, content);
  const json& last = ev[ev.size() - 2];
  EXPECT_EQ(last["choices"][0]["finish_reason"], j["choices"][0]["finish_reason"]);
  EXPECT_EQ(last["usage"], j["usage"]);
  EXPECT_TRUE(ev.back()["choices"].empty());
  EXPECT_EQ(ev.back()["usage"], j["usage"]);
}

// `pocket serve --spec block`: with a random block drafter the chat completion (plain and streamed) is the
// plain server's, the timings carry the draft counters; a response_format request (constrained, so run on
// the plain session) still gets JSON; speculation over the memory budget is off with a reason; a drafter
// for another model is refused at creation.
TEST(Server, SpecBlockEqualsPlain) {
  POCKET_REQUIRE_NANO(model);
  pocket::testing::TempDir dir;
  const std::string drafter = dir.file("drafter.pocket");
  BlockDrafterSynthOptions dso;
  dso.n_layers = 2;
  ASSERT_TRUE(write_random_block_drafter(*model, dso, drafter).is_ok());
  ServerOptions spec_opts;
  spec_opts.speculate = true;
  spec_opts.spec.method = SpecMethod::kBlock;
  spec_opts.spec.draft_model_path = drafter;
  spec_opts.spec.fallback.enabled = false;  // always speculate: the drafts are verified on every pass

  std::string want, want_streamed, want_constrained, want_task;
  // A rewrite through /v1/pocket/task: free generation, so on the speculative session when the server has one.
  static constexpr const char* kTaskRewrite = R"({"task":"rewrite","text":"the cat sat on the mat","max_tokens":24})";
  {
    Running plain(model, ServerOptions{});
    auto c = plain.client();
    auto r = c.Post("/v1/chat/completions", kChat, "application/json");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    want = parse(r->body)["choices"][0]["message"]["content"];
    EXPECT_FALSE(parse(r->body)["timings"].contains("draft_n"));
    json constrained = parse(kChat);
    constrained["response_format"] = {{"type", "json_object"}};
    auto cr = c.Post("/v1/chat/completions", constrained.dump(), "application/json");
    ASSERT_TRUE(cr);
    ASSERT_EQ(cr->status, 200) << cr->body;
    want_constrained = parse(cr->body)["choices"][0]["message"]["content"];
    auto tr = c.Post("/v1/pocket/task", kTaskRewrite, "application/json");
    ASSERT_TRUE(tr);
    ASSERT_EQ(tr->status, 200) << tr->body;
    want_task = parse(tr->body)["text"];
  }
  Running srv(model, spec_opts);
  EXPECT_EQ(srv.server().spec_off_reason(), "");
  auto c = srv.client();
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = parse(r->body);
  EXPECT_EQ(j["choices"][0]["message"]["content"], want);
  EXPECT_GT(j["timings"]["draft_n"].get<int64_t>(), 0) << j["timings"];
  EXPECT_LE(j["timings"]["draft_n_accepted"].get<int64_t>(), j["timings"]["draft_n"].get<int64_t>());
  EXPECT_GT(j["timings"]["target_passes"].get<int64_t>(), 0);

  json body = parse(kChat);
  body["stream"] = true;
  auto s = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(s);
  ASSERT_EQ(s->status, 200) << s->body;
  bool done = false;
  std::string streamed;
  for (const json& ev : sse_events(s->body, &done)) {
    if (!ev["choices"].empty() && ev["choices"][0]["delta"].contains("content")) {
      streamed += ev["choices"][0]["delta"]["content"];
    }
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, want);

  json constrained = parse(kChat);
  constrained["response_format"] = {{"type", "json_object"}};
  auto cr = c.Post("/v1/chat/completions", constrained.dump(), "application/json");
  ASSERT_TRUE(cr);
  ASSERT_EQ(cr->status, 200) << cr->body;
  // Constrained decoding speculates too (each verified row masked by the grammar): the plain server's JSON.
  EXPECT_TRUE(parse(parse(cr->body)["choices"][0]["message"]["content"].get<std::string>()).is_object()) << cr->body;
  EXPECT_EQ(parse(cr->body)["choices"][0]["message"]["content"], want_constrained);
  EXPECT_TRUE(parse(cr->body)["timings"].contains("draft_n")) << cr->body;
  auto tr = c.Post("/v1/pocket/task", kTaskRewrite, "application/json");
  ASSERT_TRUE(tr);
  ASSERT_EQ(tr->status, 200) << tr->body;
  EXPECT_EQ(parse(tr->body)["text"], want_task);
  srv.stop();

  // A drafter for another model: refused at creation, naming the mismatch.
  SessionOptions so;
  so.n_ctx = 128;
  so.n_threads = 1;
  auto other = Server::create(testing::tiny_model(), so, spec_opts);
  ASSERT_FALSE(other);
  EXPECT_NE(other.status().message().find("wrong target"), std::string::npos) << other.status().to_string();
}

TEST(Server, TextCompletions) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  auto c = srv.client();
  auto r = c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":12,"temperature":0})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = parse(r->body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_LE(j["usage"]["completion_tokens"].get<int>(), 12);
  auto s = c.Post("/v1/completions", R"({"prompt":"Once upon a time","max_tokens":12,"temperature":0,"stream":true})",
                  "application/json");
  ASSERT_TRUE(s);
  bool done = false;
  std::string streamed;
  for (const json& e : sse_events(s->body, &done)) streamed += e["choices"][0]["text"].get<std::string>();
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, j["choices"][0]["text"]);
}

TEST(Server, BadRequestsGetOpenAiErrors) {
  POCKET_REQUIRE_NANO(model);
  ServerOptions o;
  o.max_body_bytes = 4096;
  o.max_tokens = 64;
  Running srv(model, o);
  auto c = srv.client();
  expect_error_shape(c.Post("/v1/chat/completions", "{\"messages\": [", "application/json"), 400);
  expect_error_shape(c.Post("/v1/chat/completions", "not json", "application/json"), 400);
  expect_error_shape(c.Post("/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}]}",
                            "application/json"), 400);
  auto wrong = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"temperature":"0"})",
                      "application/json");
  expect_error_shape(wrong, 400);
  EXPECT_EQ(parse(wrong->body)["error"]["param"], "temperature");
  auto over = c.Post("/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":65})",
                     "application/json");
  expect_error_shape(over, 400);
  EXPECT_EQ(parse(over->body)["error"]["param"], nullptr);
  std::string words;
  for (int i = 0; i < 600; ++i) words += "word ";
  auto ctx = c.Post("/v1/completions", json{{"prompt", words}}.dump(), "application/json");
  expect_error_shape(ctx, 400);
  EXPECT_EQ(parse(ctx->body)["error"]["code"], "context_length_exceeded");
  expect_error_shape(c.Post("/v1/chat/completions", std::string(8192, ' '), "application/json"), 413);
  // Unknown fields are ignored.
  auto extra = c.Post("/v1/chat/completions",
                      R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"frobnicate":{"x":[1,2]}})",
                      "application/json");
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->status, 200) << extra->body;
  EXPECT_EQ(c.Get("/health")->status, 200);
}

TEST(Server, BearerKey) {
  POCKET_REQUIRE_NANO(model);
  ServerOptions o;
  o.api_key = "sekret";
  Running srv(model, o);
  auto c = srv.client();
  auto no = c.Get("/v1/models");
  expect_error_shape(no, 401);
  EXPECT_EQ(parse(no->body)["error"]["code"], "invalid_api_key");
  httplib::Headers wrong = {{"Authorization", "Bearer sekreT"}};
  expect_error_shape(c.Get("/v1/models", wrong), 401);
  httplib::Headers right = {{"Authorization", "Bearer sekret"}};
  EXPECT_EQ(c.Get("/v1/models", right)->status, 200);
  EXPECT_EQ(c.Get("/health")->status, 200);  // health stays open for probes
}

TEST(Server, BusyIs503WithRetryAfter) {
  POCKET_REQUIRE_NANO(model);
  ServerOptions o;
  o.max_queue = 0;
  Running srv(model, o);
  SessionPool::Lease held;
  ASSERT_EQ(srv.server().pool_for_testing().acquire(&held, nullptr), AcquireError::kNone);
  auto c = srv.client();
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  expect_error_shape(r, 503);
  EXPECT_EQ(r->get_header_value("Retry-After"), "1");
  EXPECT_EQ(parse(c.Get("/health")->body)["requests"]["rejected_busy"], 1);
  held.release();
  EXPECT_EQ(c.Post("/v1/chat/completions", kChat, "application/json")->status, 200);
}

TEST(Server, QueuedRequestRunsWhenASlotFrees) {
  POCKET_REQUIRE_NANO(model);
  ServerOptions o;
  o.max_queue = 2;
  Running srv(model, o);
  SessionPool::Lease held;
  ASSERT_EQ(srv.server().pool_for_testing().acquire(&held, nullptr), AcquireError::kNone);
  int status = 0;
  std::thread t([&] {
    auto c = srv.client();
    auto r = c.Post("/v1/chat/completions", kChat, "application/json");
    status = r ? r->status : -1;
  });
  ASSERT_TRUE(wait_until([&] { return srv.server().pool_for_testing().n_queued() > 0; }));
  held.release();
  t.join();
  EXPECT_EQ(status, 200);
}

// A model slow enough (a few hundred tokens a second) that a long generation is still running when the
// client goes away.
std::shared_ptr<const Model> slow_model() {
  static pocket::testing::TempDir dir;
  static std::shared_ptr<const Model> model = [] {
    HParams h = *architecture_preset("tiny");
    h.n_embd = 512; h.n_layers = 8; h.n_heads = 8; h.n_kv_heads = 8; h.head_dim = 64; h.n_ff = 1536;
    h.n_ctx_train = 4096;
    SynthOptions o;
    o.dtype = DType::kQ4G32;
    const std::string path = dir.file("slow.pocket");
    const Status st = synthesize_model(h, path, o);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    auto m = Model::load(path);
    EXPECT_TRUE(m) << m.status().to_string();
    return *m;
  }();
  return model;
}

TEST(Server, DroppedClientCancelsItsGeneration) {
  Running srv(slow_model(), long_requests(), 4096);
  for (bool stream : {true, false}) {
    const int fd = connect_to(srv.port());
    ASSERT_GE(fd, 0);
    const std::string body = json{{"prompt", "a b c"}, {"max_tokens", 4000}, {"ignore_eos", true},
                                  {"stream", stream}}.dump();
    const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    ASSERT_EQ(write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    ASSERT_TRUE(wait_until([&] { return srv.server().pool_for_testing().n_busy() > 0; }));
    std::this_thread::sleep_for(50ms);
    const auto t0 = std::chrono::steady_clock::now();
    close(fd);
    ASSERT_TRUE(wait_until([&] { return srv.server().pool_for_testing().n_busy() == 0; }));
    const double freed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(freed_ms, 1000.0) << (stream ? "stream" : "plain");  // 4000 tokens would take many seconds
  }
  auto c = srv.client();
  EXPECT_EQ(parse(c.Get("/health")->body)["requests"]["cancelled"], 2);
}

TEST(Server, SurvivesGarbageAndDroppedConnections) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  // A thousand connections opened and dropped, some after half a request.
  for (int i = 0; i < 1000; ++i) {
    const int fd = connect_to(srv.port());
    ASSERT_GE(fd, 0) << i;
    if (i % 3 == 1) {
      const char* part = "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{\"mess";
      (void)!write(fd, part, std::strlen(part));
    } else if (i % 3 == 2) {
      const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n";
      (void)!write(fd, junk, sizeof junk - 1);
    }
    close(fd);
  }
  // Header lines the parser must refuse.
  for (const char* raw : {"GARBAGE\r\n\r\n", "POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
                          "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n"}) {
    const int fd = connect_to(srv.port());
    timeval tv{1, 0};  // an answer is welcome but not required
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    (void)!write(fd, raw, std::strlen(raw));
    char buf[512];
    (void)!read(fd, buf, sizeof buf);
    close(fd);
  }
  auto c = srv.client();
  auto r = c.Post("/v1/chat/completions", kChat, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(Server, ShutdownCancelsLongRequestsWithinTheBound) {
  auto srv = std::make_unique<Running>(slow_model(), long_requests(), 4096);
  int status = 0;
  std::thread t([&] {
    auto c = srv->client();
    auto r = c.Post("/v1/completions", R"({"prompt":"a b","max_tokens":4000,"ignore_eos":true})", "application/json");
    status = r ? r->status : -1;
  });
  ASSERT_TRUE(wait_until([&] { return srv->server().pool_for_testing().n_busy() > 0; }));
  const auto t0 = std::chrono::steady_clock::now();
  srv->server().shutdown(200ms);  // the grace is far shorter than the generation
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  t.join();
  EXPECT_LT(ms, 3000.0);
  EXPECT_EQ(status, 503);  // cancelled: told so, not left hanging
  srv.reset();
}

TEST(Server, ResponseFormatJsonSchemaAndJsonObject) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  auto c = srv.client();
  const json schema = {{"type", "object"},
                       {"properties", {{"name", {{"type", "string"}}}, {"price", {{"type", "number"}}}}},
                       {"required", {"name", "price"}},
                       {"additionalProperties", false}};
  json body = {{"messages", {{{"role", "user"}, {"content", "提取JSON：黑色保温杯，品牌山泉，￥89。"}}}},
               {"temperature", 0},
               {"max_tokens", 64},
               {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "product"}, {"schema", schema}}}}}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const json j = parse(r->body);
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  // The content is JSON of the schema: an object with exactly a string name and a number price.
  const json value = parse(j["choices"][0]["message"]["content"].get<std::string>());
  ASSERT_TRUE(value.is_object()) << value;
  EXPECT_EQ(value.size(), 2u) << value;
  EXPECT_TRUE(value["name"].is_string()) << value;
  EXPECT_TRUE(value["price"].is_number()) << value;

  // The answer's keys come in the schema's order as the client wrote it (not sorted): "price" before "name".
  const std::string ordered_body =
      R"({"messages":[{"role":"user","content":"提取JSON：黑色保温杯，品牌山泉，￥89。"}],"temperature":0,"max_tokens":64,)"
      R"("response_format":{"type":"json_schema","json_schema":{"name":"p","schema":{"type":"object","properties":)"
      R"({"price":{"type":"number"},"name":{"type":"string"}},"required":["price","name"]}}}})";
  r = c.Post("/v1/chat/completions", ordered_body, "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_EQ(parse(r->body)["choices"][0]["message"]["content"].get<std::string>().rfind("{\"price\":", 0), 0u) << r->body;

  body["response_format"] = {{"type", "json_object"}};
  body["messages"][0]["content"] = "你好";
  r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_TRUE(parse(parse(r->body)["choices"][0]["message"]["content"].get<std::string>()).is_object()) << r->body;

  body["response_format"] = {{"type", "json_schema"},
                             {"json_schema", {{"name", "x"}, {"schema", {{"type", "object"}, {"patternProperties", {{"a", 1}}}}}}}};
  expect_error_shape(c.Post("/v1/chat/completions", body.dump(), "application/json"), 400);
}

TEST(Server, PocketTaskEndpoint) {
  POCKET_REQUIRE_NANO(model);
  Running srv(model, ServerOptions{});
  auto c = srv.client();
  auto r = c.Post("/v1/pocket/task",
                  R"({"task":"classify","text":"帮我订一张明天去上海的机票","labels":["travel","weather","music"]})",
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json j = parse(r->body);
  double total = 0;
  for (const json& l : j["labels"]) total += l["probability"].get<double>();
  EXPECT_NEAR(total, 1.0, 1e-6) << r->body;
  EXPECT_TRUE(j.contains("timings"));
  r = c.Post("/v1/pocket/task", R"({"task":"redact","text":"电话 13812345678，邮箱 a.b@example.com","model":false})",
             "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  j = parse(r->body);
  const std::string text = j["text"];
  EXPECT_EQ(text.find("13812345678"), std::string::npos) << text;
  EXPECT_EQ(text.find("a.b@example.com"), std::string::npos) << text;
  expect_error_shape(c.Post("/v1/pocket/task", R"({"task":"classify","text":"x","labelz":["a"]})", "application/json"),
                     400);
  expect_error_shape(c.Post("/v1/pocket/task", R"({"task":"summon","text":"x"})", "application/json"), 400);
  expect_error_shape(c.Post("/v1/pocket/task", "{\"task\":", "application/json"), 400);
}

TEST(Server, BadOptionsAreRefused) {
  SessionOptions so;
  so.n_ctx = 64;
  const auto refused = [&](ServerOptions o) { return !Server::create(testing::tiny_model(), so, o); };
  ServerOptions o;
  o.max_tokens = 0;
  EXPECT_TRUE(refused(o));
  o.max_tokens = int64_t{1} << 25;
  EXPECT_TRUE(refused(o));
  o = ServerOptions{};
  o.max_body_bytes = 10;
  EXPECT_TRUE(refused(o));
  o = ServerOptions{};
  o.n_parallel = 0;
  EXPECT_TRUE(refused(o));
  o = ServerOptions{};
  o.port = 70000;
  auto s = Server::create(testing::tiny_model(), so, o);
  ASSERT_TRUE(s);
  EXPECT_FALSE((*s)->bind());
}

}  // namespace
}  // namespace pocket::server
