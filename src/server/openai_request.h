// The OpenAI request and error shapes the server speaks: parsing and checking a chat-completions or
// completions body into a CompletionRequest, and the {"error": {...}} body every failure carries.
// Unknown fields are ignored (clients send many); known fields of the wrong type or range are 400s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "tokenizer/chat_template.h"

namespace pocket::server {

// An HTTP failure in OpenAI's shape: {"error":{"message","type","param","code"}}.
struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type = "invalid_request_error";  // or "authentication_error", "server_error", ...
  std::string param;                            // the offending field, "" for none (null)
  std::string code;                             // e.g. "context_length_exceeded", "" for none (null)
};
nlohmann::json error_body(const ApiError& e);
// 400 from a Status of the request layers (kContextExceeded gets code "context_length_exceeded",
// kUnsupported 400 "unsupported", kCancelled 499-style "cancelled" as 503, anything else 500).
ApiError api_error_from(const Status& st);

enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

struct CompletionRequest {
  bool chat = true;
  std::vector<ChatMessage> messages;  // chat: in order, roles system/user/assistant ("developer" = system)
  std::string prompt;                 // completions: the raw prompt
  std::optional<float> temperature;   // [0, 2]; absent: the package's default
  std::optional<float> top_p;         // (0, 1]; absent: the package's default
  std::optional<int64_t> max_tokens;  // >= 1; absent: up to the server's limit and the context
  std::optional<uint64_t> seed;       // absent: 0 (same request, same output)
  std::vector<std::string> stop;      // at most 4, non-empty
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage: a last chunk with usage, no choices
  ResponseFormat format = ResponseFormat::kText;
  std::string schema_json;            // json_schema: the schema's text
  bool ignore_eos = false;            // extension (llama.cpp's name): generate past stop tokens
};

// Parses a POST /v1/chat/completions body (chat = true) or a POST /v1/completions body (chat = false).
// On failure returns false and fills `err` (400, naming the field).
bool parse_completion_request(const nlohmann::json& body, bool chat, CompletionRequest* out, ApiError* err);

// Parses request text into JSON: objects and arrays nested at most `max_depth` deep, valid UTF-8.
bool parse_json_body(const std::string& text, int max_depth, nlohmann::json* out, ApiError* err);

// JSON text of `j` that never throws (invalid UTF-8 in strings is replaced by U+FFFD).
std::string dump_json(const nlohmann::json& j);

}  // namespace pocket::server
