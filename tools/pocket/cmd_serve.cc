// `pocket serve`: the OpenAI-compatible HTTP server (src/server, docs/server.md) on one loaded model, until
// SIGINT or SIGTERM, after which in-flight requests get --shutdown-timeout seconds before being cancelled.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include "commands.h"
#include "spec_flags.h"
#include "generate/session.h"
#include "server/server.h"

namespace pocket::cli {

namespace {

struct ServeArgs {
  std::string model, alias;
  server::ServerOptions srv;
  int threads = 0;
  int64_t ctx = 0;
  double mem_budget_mb = 0;
  size_t max_body_kb = 1024;
  double shutdown_timeout_s = 10;
  bool no_mmap = false;
  std::string spec = "none", draft_model;  // speculative decoding of completions (spec_flags.h)
  int draft_max = 8;
  bool no_spec_fallback = false;
};

int serve(ServeArgs& a) {
  // SIGINT/SIGTERM go to one waiting thread (blocked here before any thread exists, so all inherit the
  // mask); a write to a closed connection must not kill the process.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  if (Status st = check_spec_flags("serve", a.spec, a.draft_model); !st.is_ok()) return report("serve", st);
  OpenOptions open;
  open.load = a.no_mmap ? FileLoad::kRead : FileLoad::kMap;
  auto model = Model::load(a.model, open);
  if (!model) return report("serve", model.status());
  if (a.spec != "none") {
    auto method = parse_spec_method(a.spec);
    if (!method) return report("serve", method.status());
    a.srv.speculate = true;
    a.srv.spec.method = *method;
    a.srv.spec.draft_max = a.draft_max;
    a.srv.spec.draft_model_path = a.draft_model;
    a.srv.spec.draft_open = open;
    a.srv.spec.fallback.enabled = !a.no_spec_fallback;
  }
  SessionOptions so;
  so.n_ctx = a.ctx;
  // Sessions share the cores: with several, each decodes on one thread unless -t says otherwise.
  so.n_threads = a.threads > 0 ? a.threads : (a.srv.n_parallel > 1 ? 1 : 0);
  so.mem_budget_bytes = static_cast<uint64_t>(a.mem_budget_mb * 1024.0 * 1024.0);
  a.srv.model_name = !a.alias.empty() ? a.alias : std::filesystem::path(a.model).stem().string();
  a.srv.max_body_bytes = a.max_body_kb * 1024;
  auto srv = server::Server::create(*model, so, a.srv);
  if (!srv) return report("serve", srv.status());
  auto port = (*srv)->bind();
  if (!port) return report("serve", port.status());
  const std::string spec = a.spec == "none" ? std::string()
                         : !(*srv)->spec_off_reason().empty() ? " | speculation off"
                         : " | --spec " + a.spec + (a.draft_model.empty() ? "" : " (" + a.draft_model + ")");
  std::fprintf(stderr, "pocket serve: model %s (%s) on http://%s:%d/v1 | %d sessions x %lld tokens | queue %d%s%s\n",
               a.srv.model_name.c_str(), (*model)->weight_type_label().c_str(), a.srv.host.c_str(), *port,
               a.srv.n_parallel, static_cast<long long>((*srv)->n_ctx()), a.srv.max_queue, spec.c_str(),
               a.srv.api_key.empty() ? "" : " | API key required");
  if (!(*srv)->spec_off_reason().empty()) {
    std::fprintf(stderr, "pocket serve: speculation off, decoding plainly: %s\n", (*srv)->spec_off_reason().c_str());
  }
  std::fflush(stderr);

  server::Server* s = srv->get();
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(a.shutdown_timeout_s * 1000));
  std::thread waiter([s, stop_signals, grace] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "pocket serve: %s, finishing in-flight requests (at most %.0f s)\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", grace.count() / 1000.0);
    s->shutdown(grace);
  });
  Status st = s->serve();
  // serve() also returns when the listener fails; wake the waiter so it can be joined.
  s->shutdown(std::chrono::milliseconds(0));
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (!st.is_ok()) return report("serve", st);
  std::fprintf(stderr, "pocket serve: stopped\n");
  return 0;
}

}  // namespace

void register_serve(CLI::App& app) {
  auto a = std::make_shared<ServeArgs>();
  CLI::App* c = app.add_subcommand("serve", "OpenAI-compatible HTTP server (docs/server.md)");
  c->add_option("-m,--model", a->model, "Model package (.pocket)")->required();
  c->add_option("--host", a->srv.host, "Address to listen on (default 127.0.0.1: this machine only)");
  c->add_option("--port", a->srv.port, "Port (0: any free port, printed at start)");
  c->add_option("-c,--ctx-size", a->ctx, "Context length of each session (default: the package's)");
  c->add_option("--parallel", a->srv.n_parallel, "Sessions generating at once (one KV cache each)");
  c->add_option("-t,--threads", a->threads,
                "Threads per session (default: physical cores with --parallel 1, else 1)");
  c->add_option("--queue", a->srv.max_queue, "Requests waiting for a session at most; beyond: 503 + Retry-After");
  c->add_option("--api-key", a->srv.api_key, "Require 'Authorization: Bearer KEY' (all but /health)");
  c->add_option("--alias", a->alias, "Model id in the API (default: the file name without .pocket)");
  c->add_option("--max-tokens", a->srv.max_tokens, "Most tokens one request may generate");
  c->add_option("--max-body", a->max_body_kb, "Largest request body, KiB (larger: 413)");
  c->add_option("--timeout", a->srv.read_timeout_s, "Seconds a client may stay silent while sending a request");
  c->add_option("--shutdown-timeout", a->shutdown_timeout_s,
                "Seconds in-flight requests get to finish after SIGINT/SIGTERM before being cancelled");
  c->add_option("--mem-budget", a->mem_budget_mb, "Refuse sessions whose memory plans exceed this many MiB each");
  c->add_flag("--no-mmap", a->no_mmap, "Read the package into memory instead of mapping it");
  c->add_option("--spec", a->spec, std::string(kSpecHelp) +
                                       "; for completions without response_format (each session also holds a "
                                       "speculative one: its KV cache and drafter)")
      ->check(CLI::IsMember({"none", "ngram", "draft", "block"}));
  c->add_option("--model-draft", a->draft_model, kModelDraftHelp);
  c->add_option("--draft-max", a->draft_max, "Longest draft k, 1..16 (adapted down when acceptance drops)");
  c->add_flag("--no-spec-fallback", a->no_spec_fallback,
              "Always speculate (default: decode plainly while speculation is measured slower)");
  c->callback([a] {
    if (int rc = serve(*a); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace pocket::cli
