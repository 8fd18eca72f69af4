// Request checking: valid OpenAI bodies parse to the fields they say; every wrong type, range or shape is
// a 400 that names the field; unknown fields are ignored; bad JSON (truncated, invalid UTF-8, too deep) is
// refused before any field is read.
#include <gtest/gtest.h>

#include "server/openai_request.h"

namespace pocket::server {
namespace {

using nlohmann::json;

CompletionRequest parse_ok(const std::string& text, bool chat = true) {
  json body;
  ApiError err;
  EXPECT_TRUE(parse_json_body(text, 64, &body, &err)) << err.message;
  CompletionRequest req;
  EXPECT_TRUE(parse_completion_request(body, chat, &req, &err)) << err.message;
  return req;
}

ApiError parse_bad(const std::string& text, bool chat = true) {
  json body;
  ApiError err;
  if (!parse_json_body(text, 64, &body, &err)) return err;
  CompletionRequest req;
  EXPECT_FALSE(parse_completion_request(body, chat, &req, &err)) << text;
  return err;
}

TEST(OpenAiRequest, ChatFields) {
  const CompletionRequest r = parse_ok(R"({"model":"x","messages":[{"role":"developer","content":"be brief"},
      {"role":"user","content":[{"type":"text","text":"hi "},{"type":"text","text":"there"}]},
      {"role":"assistant","content":null}],
      "temperature":0,"top_p":0.5,"max_tokens":12,"seed":-3,"stop":["a","b"],"n":1,"stream":true,
      "stream_options":{"include_usage":true},"frequency_penalty":0,"user":"u","some_future_field":{"x":[1]}})");
  ASSERT_EQ(r.messages.size(), 3u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[0].content, "be brief");
  EXPECT_EQ(r.messages[1].content, "hi there");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(*r.temperature, 0.0f);
  EXPECT_EQ(*r.top_p, 0.5f);
  EXPECT_EQ(*r.max_tokens, 12);
  EXPECT_EQ(*r.seed, static_cast<uint64_t>(-3));
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.format, ResponseFormat::kText);
}

TEST(OpenAiRequest, ResponseFormats) {
  EXPECT_EQ(parse_ok(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})").format,
            ResponseFormat::kJsonObject);
  const CompletionRequest r = parse_ok(R"({"messages":[{"role":"user","content":"x"}],
      "response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"object"},"strict":true}}})");
  EXPECT_EQ(r.format, ResponseFormat::kJsonSchema);
  EXPECT_EQ(json::parse(r.schema_json), json::parse(R"({"type":"object"})"));
  EXPECT_EQ(parse_bad(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"yaml"}})").param,
            "response_format.type");
  EXPECT_EQ(parse_bad(R"({"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema"}})").param,
            "response_format.json_schema");
}

TEST(OpenAiRequest, CompletionsPrompt) {
  EXPECT_EQ(parse_ok(R"({"prompt":"Once"})", false).prompt, "Once");
  EXPECT_EQ(parse_ok(R"({"prompt":["Once"],"stop":"x"})", false).prompt, "Once");
  EXPECT_EQ(parse_bad(R"({"prompt":["a","b"]})", false).param, "prompt");
  EXPECT_EQ(parse_bad(R"({"prompt":""})", false).param, "prompt");
  EXPECT_EQ(parse_bad(R"({"prompt":"a","echo":true})", false).param, "echo");
  EXPECT_EQ(parse_bad(R"({})", false).param, "prompt");
}

TEST(OpenAiRequest, WrongTypesAndRangesNameTheField) {
  const std::string m = R"("messages":[{"role":"user","content":"x"}])";
  struct Case {
    std::string body, param;
  };
  const std::vector<Case> cases = {
      {R"({"messages":"hi"})", "messages"},
      {R"({"messages":[]})", "messages"},
      {R"({})", "messages"},
      {R"({"messages":[5]})", "messages[0]"},
      {R"({"messages":[{"content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"tool","content":"x"}]})", "messages[0].role"},
      {R"({"messages":[{"role":"user","content":7}]})", "messages[0].content"},
      {R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})", "messages[0].content"},
      {"{" + m + R"(,"temperature":"hot"})", "temperature"},
      {"{" + m + R"(,"temperature":2.5})", "temperature"},
      {"{" + m + R"(,"temperature":-1})", "temperature"},
      {"{" + m + R"(,"top_p":0})", "top_p"},
      {"{" + m + R"(,"top_p":1.5})", "top_p"},
      {"{" + m + R"(,"max_tokens":0})", "max_tokens"},
      {"{" + m + R"(,"max_tokens":1.5})", "max_tokens"},
      {"{" + m + R"(,"max_tokens":"9"})", "max_tokens"},
      {"{" + m + R"(,"max_completion_tokens":-4})", "max_completion_tokens"},
      {"{" + m + R"(,"seed":"1"})", "seed"},
      {"{" + m + R"(,"n":2})", "n"},
      {"{" + m + R"(,"stream":"yes"})", "stream"},
      {"{" + m + R"(,"stream_options":{"include_usage":1}})", "stream_options.include_usage"},
      {"{" + m + R"(,"stop":["a","b","c","d","e"]})", "stop"},
      {"{" + m + R"(,"stop":[1]})", "stop"},
      {"{" + m + R"(,"logprobs":true})", "logprobs"},
      {"{" + m + R"(,"tools":[{"type":"function"}]})", "tools"},
  };
  for (const Case& c : cases) {
    const ApiError e = parse_bad(c.body);
    EXPECT_EQ(e.http_status, 400) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_NE(e.message.find("[server]"), std::string::npos) << e.message;
    const json shaped = error_body(e);
    EXPECT_TRUE(shaped["error"]["message"].is_string());
    EXPECT_EQ(shaped["error"]["type"], "invalid_request_error");
    EXPECT_EQ(shaped["error"]["param"], c.param);
  }
}

TEST(OpenAiRequest, BadJsonIsRefused) {
  const std::string good = R"({"messages":[{"role":"user","content":"hello"}]})";
  json body;
  ApiError err;
  for (size_t cut = 0; cut < good.size(); ++cut) {  // every truncation
    EXPECT_FALSE(parse_json_body(good.substr(0, cut), 64, &body, &err)) << cut;
    EXPECT_EQ(err.http_status, 400);
  }
  EXPECT_FALSE(parse_json_body("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\"}]}", 64, &body, &err));
  EXPECT_FALSE(parse_json_body("{\"a\":\"\xed\xa0\x80\"}", 64, &body, &err));  // a UTF-8-encoded surrogate
  EXPECT_FALSE(parse_json_body(std::string(1000, '[') + std::string(1000, ']'), 64, &body, &err));
  EXPECT_NE(err.message.find("deeper"), std::string::npos) << err.message;
  EXPECT_TRUE(parse_json_body(std::string(10, '[') + std::string(10, ']'), 64, &body, &err));
  EXPECT_FALSE(parse_json_body("", 64, &body, &err));
  // A body that is JSON but not an object.
  ASSERT_TRUE(parse_json_body("[1,2]", 64, &body, &err));
  CompletionRequest req;
  EXPECT_FALSE(parse_completion_request(body, true, &req, &err));
}

TEST(OpenAiRequest, StatusesMapToHttp) {
  EXPECT_EQ(api_error_from(invalid_argument("x")).http_status, 400);
  const ApiError ctx = api_error_from(Status(ErrorCode::kContextExceeded, "too long"));
  EXPECT_EQ(ctx.http_status, 400);
  EXPECT_EQ(ctx.code, "context_length_exceeded");
  EXPECT_EQ(api_error_from(Status(ErrorCode::kCancelled, "x")).http_status, 503);
  EXPECT_EQ(api_error_from(Status(ErrorCode::kNumericalError, "nan")).http_status, 500);
  // Invalid UTF-8 in a message never makes the error body throw.
  ApiError e;
  e.message = "bad \xff byte";
  EXPECT_NE(dump_json(error_body(e)).find("bad"), std::string::npos);
}

}  // namespace
}  // namespace pocket::server
