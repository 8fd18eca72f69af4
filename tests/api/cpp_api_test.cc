// The C++ wrappers (pocket.hpp): load, tokenize round trip, generate with a lambda, errors as values.
#include <gtest/gtest.h>

#include <cmath>

#include "convert/synth.h"
#include "generate/session.h"
#include "speculative/speculative_session.h"
#include "pocket/pocket.hpp"
#include "test_util.h"

namespace {

TEST(CppApi, LoadTokenizeGenerate) {
  pocket::testing::TempDir dir;
  auto h = pocket::architecture_preset("tiny");
  ASSERT_TRUE(h);
  pocket::SynthOptions o;
  o.dtype = pocket::DType::kQ8G32;
  const std::string path = dir.file("tiny.pocket");
  ASSERT_TRUE(pocket::synthesize_model(*h, path, o).is_ok());

  auto [bad, err] = pocket::api::Model::load(dir.file("missing.pocket"));
  EXPECT_FALSE(bad);
  EXPECT_EQ(err.code, POCKET_ERR_IO);
  EXPECT_NE(err.message.find("missing.pocket"), std::string::npos);

  auto [model, e1] = pocket::api::Model::load(path);
  ASSERT_FALSE(e1) << e1.message;
  auto [ids, e2] = model.tokenize("hello world");
  ASSERT_FALSE(e2) << e2.message;
  ASSERT_FALSE(ids.empty());
  auto [text, e3] = model.detokenize(ids);
  ASSERT_FALSE(e3) << e3.message;
  EXPECT_EQ(text, "hello world");

  auto [session, e4] = pocket::api::Session::create(model);
  ASSERT_FALSE(e4) << e4.message;
  pocket_generate_params gp = pocket_generate_default_params();
  gp.n_predict = 12;
  int pieces = 0;
  pocket_generate_stats stats{};
  auto e5 = session.generate("hello", gp, [&](std::string_view) { return ++pieces < 100; }, &stats);
  ASSERT_FALSE(e5) << e5.message;
  // One call per token, plus at most one more that flushes a character left incomplete at the end.
  EXPECT_GE(pieces, stats.n_generated);
  EXPECT_LE(pieces, stats.n_generated + 1);
  EXPECT_GT(pieces, 0);
  const pocket_spec_stats plain = session.spec_stats();  // no speculation: all zero
  EXPECT_EQ(plain.n_passes, 0);
  EXPECT_EQ(plain.n_drafted, 0);

  // Prompt lookup: the counters of the last generate() account for every generated token.
  pocket_session_params sp = pocket_session_default_params();
  sp.spec_method = POCKET_SPEC_NGRAM;
  sp.draft_max = 4;
  sp.spec_fallback = 0;
  auto [spec, e6] = pocket::api::Session::create(model, sp);
  ASSERT_FALSE(e6) << e6.message;
  pocket_generate_stats sstats{};
  auto e7 = spec.generate("hello hello hello hello", gp, [](std::string_view) { return true; }, &sstats);
  ASSERT_FALSE(e7) << e7.message;
  const pocket_spec_stats ss = spec.spec_stats();
  EXPECT_GT(ss.n_passes, 0);
  EXPECT_EQ(ss.n_plain, 0);
  EXPECT_LE(ss.n_accepted, ss.n_drafted);
  EXPECT_LE(ss.n_passes + ss.n_accepted, sstats.n_generated);
  EXPECT_GE(ss.n_passes + ss.n_accepted + 1, sstats.n_generated);
  gp.top_p = NAN;
  gp.temperature = 0.7f;
  EXPECT_EQ(session.generate("hello", gp, [](std::string_view) { return true; }).code, POCKET_ERR_INVALID_ARGUMENT);
}

}  // namespace

// The task layer from C++: a JSON request in, a JSON result out; errors as pocket::api::Error.
TEST(CppApi, Task) {
  const std::string nano = std::string(POCKET_BINARY_DIR) + "/../../models/pocket-nano-q4.pocket";
  auto [model, e1] = pocket::api::Model::load(nano);
  ASSERT_FALSE(e1) << e1.message;
  auto [session, e2] = pocket::api::Session::create(model);
  ASSERT_FALSE(e2) << e2.message;
  auto [out, e3] = session.task(R"({"task":"redact","text":"ID 11010519491231002X"})");
  ASSERT_FALSE(e3) << e3.message;
  EXPECT_NE(out.find("[ID_CARD]"), std::string::npos) << out;
  auto [bad, e4] = session.task(R"({"task":"extract","text":"x","schema":{"type":"string","format":"email"}})");
  EXPECT_TRUE(e4);
  EXPECT_NE(e4.message.find("format"), std::string::npos) << e4.message;
  EXPECT_TRUE(bad.empty());
}

// Tasks on a speculative session: the plain session the task layer needs beside it must fit what the memory
// budget leaves after the speculative session (the mapped weights counted once).
TEST(CppApi, TaskOnASpeculativeSessionFitsTheBudget) {
  const std::string nano = std::string(POCKET_BINARY_DIR) + "/../../models/pocket-nano-q4.pocket";
  auto loaded = pocket::Model::load(nano);
  ASSERT_TRUE(loaded) << loaded.status().to_string();
  pocket::SessionOptions so;
  so.n_ctx = 256;
  so.n_threads = 1;
  pocket::SpeculativeOptions spec;
  spec.method = pocket::SpecMethod::kNgram;
  auto sp = pocket::SpeculativeSession::create(*loaded, so, spec);
  ASSERT_TRUE(sp) << sp.status().to_string();
  auto pl = pocket::Session::create(*loaded, so);
  ASSERT_TRUE(pl) << pl.status().to_string();
  const uint64_t spec_total = (*sp)->plan().total(), plain_own = (*pl)->plan().session_total();
  ASSERT_GT(plain_own, 4096u);

  auto [model, e1] = pocket::api::Model::load(nano);
  ASSERT_FALSE(e1) << e1.message;
  const char* classify = R"({"task":"classify","text":"where is my parcel","labels":["order_status","refund"]})";
  for (const bool fits : {false, true}) {
    pocket_session_params p = pocket_session_default_params();
    p.n_ctx = 256;
    p.n_threads = 1;
    p.spec_method = POCKET_SPEC_NGRAM;
    p.mem_budget_bytes = spec_total + (fits ? plain_own + 4096 : plain_own / 2);
    auto [session, e2] = pocket::api::Session::create(model, p);
    ASSERT_FALSE(e2) << e2.message;
    auto [out, e3] = session.task(classify);
    if (fits) {
      EXPECT_FALSE(e3) << e3.message;
      EXPECT_NE(out.find("order_status"), std::string::npos) << out;
    } else {
      EXPECT_EQ(e3.code, POCKET_ERR_OUT_OF_MEMORY) << e3.message;
    }
  }
}
