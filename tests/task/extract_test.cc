// Grounded extraction on the real default model: the demo's product text gives JSON that parses, is valid
// against the schema (checked here, independently of the grammar), and whose every value is written in the
// text; bad schemas and over-long texts are clear errors; run_task's JSON request checks its keys.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "task/task.h"
#include "task/task_prompt.h"
#include "task_fixture.h"

namespace pocket {
namespace {

using testing::nano_model;
using testing::nano_session;

std::string product_schema() {
  const auto path = std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "schemas" /
                    "product.schema.json";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every string value (recursively) is a substring of `text`, every number's digits appear in it.
void expect_grounded(const nlohmann::ordered_json& v, const std::string& text) {
  if (v.is_string()) {
    EXPECT_NE(text.find(v.get<std::string>()), std::string::npos) << v;
  } else if (v.is_number_integer()) {
    EXPECT_NE(text.find(std::to_string(v.get<int64_t>())), std::string::npos) << v;
  } else if (v.is_object() || v.is_array()) {
    for (const auto& x : v) expect_grounded(x, text);
  }
}

TEST(TaskExtract, DemoTextIsGroundedAndValid) {
  const std::string schema = product_schema();
  ASSERT_FALSE(schema.empty());
  const std::vector<std::string> texts = {
      "墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。",
      "Hot sale! Brand: Zephyr running shoes in orange, size EU 42, $89.99, mesh upper. Free returns within 30 days.",
      "藏青色开衫，品牌暖阳，尺码：M，￥199，面料涤纶。好评率98%。"};
  auto s = nano_session();
  for (const std::string& text : texts) {
    auto r = task_extract(*s, text, schema);
    ASSERT_TRUE(r) << r.status().to_string();
    EXPECT_TRUE(r->validation_errors.empty()) << r->text;
    ASSERT_TRUE(r->value.is_object()) << r->text;
    ASSERT_TRUE(r->value.contains("name")) << r->text;
    for (auto it = r->value.begin(); it != r->value.end(); ++it) {
      EXPECT_TRUE(it.key() == "name" || it.key() == "brand" || it.key() == "price" || it.key() == "colour" ||
                  it.key() == "size" || it.key() == "material")
          << it.key();
    }
    expect_grounded(r->value, text);
    if (r->value.contains("price")) {
      EXPECT_TRUE(r->value["price"].is_number());
    }
    EXPECT_EQ(nlohmann::ordered_json::parse(r->text), r->value);  // the text is the value, compact
  }
}

TEST(TaskExtract, GroundAllStringsWithoutMarks) {
  const std::string schema = R"({"type":"object","properties":{"name":{"type":"string"},"colour":{"type":"string"}},"required":["name"]})";
  const std::string text = "藏青色开衫，品牌暖阳，尺码：M，￥199，面料涤纶。";
  auto s = nano_session();
  auto r = task_extract(*s, text, schema, {}, /*ground_strings=*/true);
  ASSERT_TRUE(r) << r.status().to_string();
  expect_grounded(r->value, text);
  EXPECT_TRUE(r->validation_errors.empty());
}

TEST(TaskExtract, BadSchemasAreClearErrors) {
  auto s = nano_session();
  auto malformed = task_extract(*s, "x", R"({"type":"object",)");
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.status().code(), ErrorCode::kInvalidArgument);
  auto unsupported = task_extract(*s, "x", R"({"type":"object","properties":{"sku":{"type":"string","pattern":"^A"}}})");
  ASSERT_FALSE(unsupported);
  EXPECT_NE(unsupported.status().to_string().find("pattern"), std::string::npos) << unsupported.status().to_string();
  auto impossible = task_extract(*s, "x", R"({"type":"integer","minimum":5,"maximum":1})");
  ASSERT_FALSE(impossible);
  // A required grounded number the text does not contain.
  auto no_number = task_extract(*s, "no digits here",
                                R"({"type":"object","properties":{"price":{"type":"number","x-pocket-copy":true}},"required":["price"]})");
  ASSERT_FALSE(no_number);
  EXPECT_NE(no_number.status().to_string().find("price"), std::string::npos);
  // Still usable.
  EXPECT_TRUE(task_extract(*s, "红色T恤", R"({"type":"object","properties":{"name":{"type":"string","x-pocket-copy":true}},"required":["name"]})"));
}

TEST(TaskExtract, GroundedNumbersInEveryCopyMode) {
  auto s = nano_session();
  const std::string text = "藏青色开衫，品牌暖阳，尺码：M，￥199，面料涤纶。";
  for (const char* mode : {"true", "\"words\"", "\"substring\""}) {
    const std::string schema = std::string(R"({"type":"object","properties":{"price":{"type":"integer","x-pocket-copy":)") +
                               mode + R"(}},"required":["price"]})";
    auto r = task_extract(*s, text, schema);
    ASSERT_TRUE(r) << mode << ": " << r.status().to_string();
    EXPECT_EQ(r->value["price"], 199) << mode;  // the only integer the text writes
  }
}

TEST(TaskExtract, TextLongerThanTheContext) {
  auto s = nano_session(1, 64);
  auto r = task_extract(*s, std::string(3000, 'x'), product_schema());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), ErrorCode::kContextExceeded);
}

// log p(answer tokens | the extraction prompt) by teacher forcing in a fresh session, one token at a time:
// independent of both the greedy path's tracker and the beam search.
double teacher_forced_logprob(const std::string& text, const std::vector<int32_t>& answer) {
  auto s = nano_session(1);
  auto prompt = render_task_prompt(*nano_model(), task_user_message("extract", text, ""), "", true);
  EXPECT_TRUE(prompt) << prompt.status().to_string();
  Transformer& t = s->transformer();
  EXPECT_TRUE(t.forward(*prompt, false).is_ok());
  const int32_t n_vocab = static_cast<int32_t>(nano_model()->hparams().n_vocab);
  double sum = 0.0;
  for (int32_t id : answer) {
    const float* l = t.logits(0);
    float mx = l[0];
    for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, l[i]);
    double z = 0.0;
    for (int32_t i = 0; i < n_vocab; ++i) z += std::exp(static_cast<double>(l[i]) - mx);
    sum += static_cast<double>(l[id]) - mx - std::log(z);
    EXPECT_TRUE(t.forward(std::span<const int32_t>(&id, 1), false).is_ok());
  }
  return sum;
}

// The answer's tokens decode to its text, and its sequence log-probability is the model's own, greedy or
// by beam search; the search's answers stay valid and grounded.
TEST(TaskExtract, BeamSearchAnswersAndTheirLogprobAreTheModelsOwn) {
  const std::string schema = product_schema();
  const std::string text = "墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。";
  auto s = nano_session();
  for (int32_t beams : {1, 2, 4}) {
    TaskOptions o;
    o.beams = beams;
    auto r = task_extract(*s, text, schema, o);
    ASSERT_TRUE(r) << beams << ": " << r.status().to_string();
    EXPECT_TRUE(r->validation_errors.empty()) << r->text;
    expect_grounded(r->value, text);
    ASSERT_FALSE(r->tokens.empty());
    EXPECT_EQ(nano_model()->tokenizer().decode(r->tokens), r->text);
    EXPECT_EQ(r->stats.n_generated, static_cast<int64_t>(r->tokens.size()));
    EXPECT_EQ(r->confidence.n_tokens, static_cast<int64_t>(r->tokens.size()));
    const double tf = teacher_forced_logprob(text, r->tokens);
    EXPECT_NEAR(r->confidence.sequence_logprob, tf, 1e-3 * std::max(1.0, std::fabs(tf))) << beams;
    EXPECT_GT(r->confidence.min_token_probability, 0.0);
  }
}

// The README's demo text, where greedy decoding closes the name and the colour on the wrong spans ("大号",
// "天", docs/pocket-nano.md): the search keeps the value alternatives and finds an answer the model itself
// finds far more probable, with the name and the colour the text gives. (Tied to the committed model.)
TEST(TaskExtract, BeamSearchFindsTheMoreProbableAnswerOnTheDemoText) {
  const std::string schema = product_schema();
  const std::string text = "墨绿色双肩包，品牌山野，尺码：大号，￥329，面料尼龙。支持七天无理由退货。";
  auto s = nano_session();
  TaskOptions greedy;
  greedy.beams = 1;
  auto g = task_extract(*s, text, schema, greedy);
  auto b = task_extract(*s, text, schema);  // the default: 2 beams under greedy decoding
  ASSERT_TRUE(g && b);
  EXPECT_GT(b->confidence.sequence_logprob, g->confidence.sequence_logprob) << g->text << "\n" << b->text;
  EXPECT_EQ(b->value.value("name", ""), "双肩包") << b->text;
  EXPECT_EQ(b->value.value("colour", "").rfind("墨绿", 0), 0u) << b->text;
  EXPECT_EQ(b->value.value("price", 0), 329) << b->text;
}

// A number at the root can always take another digit: the answer ends where greedy decoding would, with a
// stop token, not at max_tokens; with any beam count the value is a number the text writes.
TEST(TaskExtract, BeamSearchStopsARootNumber) {
  auto s = nano_session();
  const std::string text = "藏青色开衫，品牌暖阳，尺码：M，￥199，面料涤纶。";
  const std::string schema = R"({"type":"integer","x-pocket-copy":true})";
  for (int32_t beams : {1, 2, 4}) {
    TaskOptions o;
    o.beams = beams;
    o.max_tokens = 24;
    auto r = task_extract(*s, text, schema, o);
    ASSERT_TRUE(r) << beams << ": " << r.status().to_string();
    EXPECT_EQ(r->value, 199) << beams << ": " << r->text;
    EXPECT_LT(r->stats.n_generated, 24) << beams;
  }
}

TEST(TaskExtract, BeamOptionsAreChecked) {
  auto s = nano_session();
  const std::string schema = product_schema();
  TaskOptions o;
  o.beams = 17;
  auto too_many = task_extract(*s, "红色T恤，￥59", schema, o);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.status().to_string().find("beams"), std::string::npos);
  o.beams = 2;
  o.sampling = SamplingParams{};
  o.sampling.temperature = 0.7f;
  auto sampled = task_extract(*s, "红色T恤，￥59", schema, o);
  ASSERT_FALSE(sampled);
  EXPECT_NE(sampled.status().to_string().find("temperature"), std::string::npos);
  o.beams = 0;  // the default with a temperature: plain sampling
  EXPECT_TRUE(task_extract(*s, "红色T恤，￥59", schema, o));
  const auto req = [&](nlohmann::ordered_json beams) {
    return nlohmann::ordered_json{{"task", "extract"}, {"text", "红色T恤，￥59"}, {"schema", nlohmann::ordered_json::parse(schema)},
                                  {"beams", beams}};
  };
  EXPECT_TRUE(run_task(*s, req(3)));
  for (const auto& bad : {nlohmann::ordered_json(0), nlohmann::ordered_json(17), nlohmann::ordered_json("2")}) {
    auto r = run_task(*s, req(bad));
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.status().to_string().find("beams"), std::string::npos);
  }
  auto hot = req(2);
  hot["temperature"] = 0.5;
  EXPECT_FALSE(run_task(*s, hot));
  auto cls = run_task(*s, {{"task", "classify"}, {"text", "x"}, {"labels", {"a", "b"}}, {"beams", 2}});
  ASSERT_FALSE(cls);
  EXPECT_NE(cls.status().to_string().find("beams"), std::string::npos);
}

TEST(RunTask, RequestsAndTheirErrors) {
  auto s = nano_session();
  auto ok = run_task(*s, {{"task", "classify"}, {"text", "where is my order?"}, {"labels", {"order_status", "refund"}}});
  ASSERT_TRUE(ok) << ok.status().to_string();
  EXPECT_TRUE((*ok)["label"] == "order_status" || (*ok)["label"] == "refund");
  EXPECT_NEAR((*ok)["labels"][0]["probability"].get<double>() + (*ok)["labels"][1]["probability"].get<double>(), 1.0, 1e-9);
  auto typo = run_task(*s, {{"task", "classify"}, {"text", "x"}, {"lables", {"a"}}});
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.status().to_string().find("lables"), std::string::npos);
  EXPECT_FALSE(run_task(*s, {{"task", "summarise"}, {"text", "x"}}));
  EXPECT_FALSE(run_task(*s, {{"task", "classify"}, {"text", 5}, {"labels", {"a"}}}));
  EXPECT_FALSE(run_task(*s, nlohmann::ordered_json::array()));
  auto red = run_task(*s, {{"task", "redact"}, {"text", "call 13812345678"}});
  ASSERT_TRUE(red);
  EXPECT_EQ((*red)["text"], "call [PHONE]");
  auto ex = run_task(*s, {{"task", "extract"}, {"text", "红色T恤，￥59"}, {"schema", nlohmann::ordered_json::parse(product_schema())}});
  ASSERT_TRUE(ex) << ex.status().to_string();
  EXPECT_TRUE((*ex)["valid"].get<bool>());
}

}  // namespace
}  // namespace pocket
