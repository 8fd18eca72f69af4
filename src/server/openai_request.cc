// Checking OpenAI request bodies field by field; every failure names the field and what was expected.
#include "server/openai_request.h"

#include <cmath>

namespace pocket::server {

namespace {

using nlohmann::json;

bool fail(ApiError* err, std::string param, std::string message) {
  err->http_status = 400;
  err->type = "invalid_request_error";
  err->param = std::move(param);
  err->code.clear();
  err->message = "[server] " + std::move(message);
  return false;
}

// A present, non-null field.
const json* field(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return nullptr;
  return &*it;
}

bool get_number(const json& body, const char* name, double lo, double hi, std::optional<float>* out, ApiError* err) {
  const json* v = field(body, name);
  if (v == nullptr) return true;
  if (!v->is_number()) return fail(err, name, std::string("'") + name + "' must be a number");
  const double x = v->get<double>();
  if (!std::isfinite(x) || x < lo || x > hi) {
    return fail(err, name, std::string("'") + name + "' must be in [" + std::to_string(lo).substr(0, 3) + ", " +
                               std::to_string(hi).substr(0, 3) + "], got " + v->dump());
  }
  *out = static_cast<float>(x);
  return true;
}

bool get_content(const json& m, size_t i, std::string* out, ApiError* err) {
  const std::string param = "messages[" + std::to_string(i) + "].content";
  auto it = m.find("content");
  if (it == m.end() || it->is_null()) {
    out->clear();
    return true;
  }
  if (it->is_string()) {
    *out = it->get<std::string>();
    return true;
  }
  if (!it->is_array()) return fail(err, param, "'" + param + "' must be a string or an array of text parts");
  out->clear();
  for (const json& part : *it) {
    if (!part.is_object() || part.value("type", json()) != "text" || !part.contains("text") ||
        !part["text"].is_string()) {
      return fail(err, param, "'" + param + "' parts must be {\"type\":\"text\",\"text\":\"...\"} (only text is supported)");
    }
    out->append(part["text"].get<std::string>());
  }
  return true;
}

bool parse_messages(const json& body, CompletionRequest* out, ApiError* err) {
  const json* msgs = field(body, "messages");
  if (msgs == nullptr) return fail(err, "messages", "'messages' is required");
  if (!msgs->is_array() || msgs->empty()) return fail(err, "messages", "'messages' must be a non-empty array");
  for (size_t i = 0; i < msgs->size(); ++i) {
    const json& m = (*msgs)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return fail(err, param, "'" + param + "' must be an object");
    auto role = m.find("role");
    if (role == m.end() || !role->is_string()) return fail(err, param + ".role", "'" + param + ".role' must be a string");
    ChatMessage cm;
    cm.role = role->get<std::string>();
    if (cm.role == "developer") cm.role = "system";
    if (cm.role != "system" && cm.role != "user" && cm.role != "assistant") {
      return fail(err, param + ".role", "'" + param + ".role' is '" + cm.role +
                                            "'; expected system, developer, user or assistant (tools are not supported)");
    }
    if (!get_content(m, i, &cm.content, err)) return false;
    out->messages.push_back(std::move(cm));
  }
  return true;
}

bool parse_stop(const json& body, CompletionRequest* out, ApiError* err) {
  const json* v = field(body, "stop");
  if (v == nullptr) return true;
  if (v->is_string()) {
    if (!v->get<std::string>().empty()) out->stop.push_back(v->get<std::string>());
    return true;
  }
  if (!v->is_array() || v->size() > 4) return fail(err, "stop", "'stop' must be a string or an array of at most 4 strings");
  for (const json& s : *v) {
    if (!s.is_string()) return fail(err, "stop", "'stop' must be a string or an array of at most 4 strings");
    if (!s.get<std::string>().empty()) out->stop.push_back(s.get<std::string>());
  }
  return true;
}

bool parse_format(const json& body, CompletionRequest* out, ApiError* err) {
  const json* rf = field(body, "response_format");
  if (rf == nullptr) return true;
  if (!rf->is_object() || !rf->contains("type") || !(*rf)["type"].is_string()) {
    return fail(err, "response_format", "'response_format' must be an object with a string 'type'");
  }
  const std::string type = (*rf)["type"].get<std::string>();
  if (type == "text") return true;
  if (type == "json_object") {
    out->format = ResponseFormat::kJsonObject;
    return true;
  }
  if (type != "json_schema") {
    return fail(err, "response_format.type", "'response_format.type' is '" + type +
                                                 "'; expected text, json_object or json_schema");
  }
  const json* js = field(*rf, "json_schema");
  if (js == nullptr || !js->is_object()) {
    return fail(err, "response_format.json_schema", "'response_format.json_schema' must be an object");
  }
  const json* schema = field(*js, "schema");
  if (schema == nullptr || !schema->is_object()) {
    return fail(err, "response_format.json_schema.schema", "'response_format.json_schema.schema' must be an object");
  }
  out->format = ResponseFormat::kJsonSchema;
  out->schema_json = dump_json(*schema);
  return true;
}

}  // namespace

json error_body(const ApiError& e) {
  json err = {{"message", e.message}, {"type", e.type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return json{{"error", err}};
}

ApiError api_error_from(const Status& st) {
  ApiError e;
  e.message = st.message();
  switch (st.code()) {
    case ErrorCode::kInvalidArgument:
      break;
    case ErrorCode::kContextExceeded:
      e.code = "context_length_exceeded";
      break;
    case ErrorCode::kUnsupported:
      e.code = "unsupported";
      break;
    case ErrorCode::kCancelled:
      e.http_status = 503;
      e.type = "server_error";
      e.code = "cancelled";
      break;
    default:
      e.http_status = 500;
      e.type = "server_error";
      e.message = st.to_string();
      break;
  }
  return e;
}

bool parse_completion_request(const json& body, bool chat, CompletionRequest* out, ApiError* err) {
  *out = CompletionRequest{};
  out->chat = chat;
  if (!body.is_object()) return fail(err, "", "the request body must be a JSON object");
  if (chat) {
    if (!parse_messages(body, out, err)) return false;
  } else {
    const json* p = field(body, "prompt");
    if (p == nullptr) return fail(err, "prompt", "'prompt' is required");
    if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
    if (!p->is_string()) return fail(err, "prompt", "'prompt' must be a string (or an array of one string)");
    out->prompt = p->get<std::string>();
    if (out->prompt.empty()) return fail(err, "prompt", "'prompt' is empty");
    if (const json* echo = field(body, "echo"); echo != nullptr && (!echo->is_boolean() || echo->get<bool>())) {
      return fail(err, "echo", "'echo' is not supported");
    }
    if (field(body, "suffix") != nullptr) return fail(err, "suffix", "'suffix' is not supported");
  }
  if (!get_number(body, "temperature", 0.0, 2.0, &out->temperature, err)) return false;
  if (!get_number(body, "top_p", 0.0, 1.0, &out->top_p, err)) return false;
  if (out->top_p && *out->top_p <= 0.0f) return fail(err, "top_p", "'top_p' must be > 0");
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    const json* v = field(body, name);
    if (v == nullptr) continue;
    if (!v->is_number_integer() || v->get<int64_t>() < 1) {
      return fail(err, name, std::string("'") + name + "' must be an integer >= 1");
    }
    out->max_tokens = v->get<int64_t>();
  }
  if (const json* v = field(body, "seed")) {
    if (!v->is_number_integer()) return fail(err, "seed", "'seed' must be an integer");
    out->seed = v->is_number_unsigned() ? v->get<uint64_t>() : static_cast<uint64_t>(v->get<int64_t>());
  }
  if (const json* v = field(body, "n")) {
    if (!v->is_number_integer() || v->get<int64_t>() != 1) return fail(err, "n", "'n' must be 1 (one choice per request)");
  }
  if (const json* v = field(body, "stream")) {
    if (!v->is_boolean()) return fail(err, "stream", "'stream' must be true or false");
    out->stream = v->get<bool>();
  }
  if (const json* v = field(body, "stream_options")) {
    if (!v->is_object()) return fail(err, "stream_options", "'stream_options' must be an object");
    if (const json* u = field(*v, "include_usage")) {
      if (!u->is_boolean()) return fail(err, "stream_options.include_usage", "'stream_options.include_usage' must be a boolean");
      out->include_usage = u->get<bool>();
    }
  }
  if (const json* v = field(body, "logprobs"); v != nullptr && !(v->is_boolean() && !v->get<bool>())) {
    return fail(err, "logprobs", "'logprobs' is not supported");
  }
  if (const json* v = field(body, "tools"); v != nullptr && !(v->is_array() && v->empty())) {
    return fail(err, "tools", "'tools' (function calling) is not supported");
  }
  if (const json* v = field(body, "ignore_eos")) {
    if (!v->is_boolean()) return fail(err, "ignore_eos", "'ignore_eos' must be true or false");
    out->ignore_eos = v->get<bool>();
  }
  if (!parse_stop(body, out, err)) return false;
  if (chat && !parse_format(body, out, err)) return false;
  return true;
}

bool parse_json_body(const std::string& text, int max_depth, json* out, ApiError* err) {
  bool too_deep = false;
  const json::parser_callback_t depth_check = [&](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth) {
      too_deep = true;
    }
    return !too_deep;
  };
  try {
    *out = json::parse(text, depth_check);
  } catch (const json::exception& e) {
    return fail(err, "", std::string("the request body is not valid JSON: ") + e.what());
  }
  if (too_deep) return fail(err, "", "the request body nests deeper than " + std::to_string(max_depth) + " levels");
  return true;
}

std::string dump_json(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace pocket::server
