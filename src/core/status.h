// Errors as values: Status (code + message) and Expected<T> (a value or a Status).
// Nothing in pocket throws across a layer boundary; every fallible call returns one of these.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace pocket {

// Kept in step with the POCKET_ERR_* codes of include/pocket/pocket.h.
enum class ErrorCode : int {
  kOk = 0,
  kInvalidArgument = 1,   // a caller-supplied parameter is out of range
  kIoError = 2,           // open/read/write/map failed
  kCorruptFile = 3,       // a file is malformed, truncated or fails its checksum
  kUnsupported = 4,       // a valid file or request that this build cannot handle
  kOutOfMemory = 5,       // an allocation or a memory budget could not be met
  kContextExceeded = 6,   // the request does not fit in the session's context
  kCancelled = 7,         // the caller's cancellation flag was raised
  kNumericalError = 8,    // NaN/Inf where a number was needed (e.g. logits)
  kInternal = 9,          // a bug in pocket
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt file: [format] ..." — for printing to a person.
  std::string to_string() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status corrupt_file(std::string m) { return {ErrorCode::kCorruptFile, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {ErrorCode::kOutOfMemory, std::move(m)}; }

// A value of type T, or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Expected(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).is_ok() && "Expected built from an ok Status");
  }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const {
    static const Status kOk;
    return has_value() ? kOk : std::get<1>(v_);
  }
  Status take_status() && { return has_value() ? Status() : std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace pocket

// Propagate a failed Status from the enclosing function.
#define POCKET_RETURN_IF_ERROR(expr)               \
  do {                                             \
    ::pocket::Status pocket_status_ = (expr);      \
    if (!pocket_status_.is_ok()) return pocket_status_; \
  } while (0)

#define POCKET_CONCAT_INNER(a, b) a##b
#define POCKET_CONCAT(a, b) POCKET_CONCAT_INNER(a, b)
// `POCKET_ASSIGN_OR_RETURN(auto x, make_x());` — unwrap an Expected or return its Status.
#define POCKET_ASSIGN_OR_RETURN(lhs, expr) \
  POCKET_ASSIGN_OR_RETURN_IMPL(POCKET_CONCAT(pocket_expected_, __LINE__), lhs, expr)
#define POCKET_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.has_value()) return std::move(tmp).take_status(); \
  lhs = std::move(tmp).value()
