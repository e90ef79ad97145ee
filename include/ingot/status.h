// ingot's one error channel: every expected failure (bad model, bad input, unsupported op,
// corrupt file) travels as a Status or an Expected<T>. Broken invariants are asserts.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ingot {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the user gave something wrong: input name, dtype, shape, flag
  kInvalidModel,     // the model file is malformed or inconsistent
  kUnsupported,      // valid ONNX that ingot cannot run (op, domain, dtype)
  kNotFound,         // a file or name that does not exist
  kIo,               // reading or writing a file failed
  kOutOfMemory,      // the machine lacks the memory a shape needs (host or device)
  kInternal,         // a bug in ingot
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context ("node 'x' (Add): " + message), keeping the code.
  Status with_context(const std::string& prefix) const {
    if (is_ok()) return *this;
    return Status(code_, prefix + message_);
  }

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status invalid_model(std::string m) { return {ErrorCode::kInvalidModel, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
inline Status out_of_memory(std::string m) { return {ErrorCode::kOutOfMemory, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }

// A value or the Status saying why there is none.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::move(value)) {}
  Expected(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { assert(has_value()); return std::get<0>(v_); }
  const T& value() const& { assert(has_value()); return std::get<0>(v_); }
  T&& value() && { assert(has_value()); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  const Status& status() const { static const Status kOk; return has_value() ? kOk : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ingot

#define INGOT_CONCAT_INNER(a, b) a##b
#define INGOT_CONCAT(a, b) INGOT_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if it is an error.
#define INGOT_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::ingot::Status _st = (expr);                    \
    if (!_st.is_ok()) return _st;                    \
  } while (0)

// INGOT_ASSIGN_OR_RETURN(auto x, expected_expr);
#define INGOT_ASSIGN_OR_RETURN(lhs, expr) \
  INGOT_ASSIGN_OR_RETURN_IMPL(INGOT_CONCAT(_exp_, __LINE__), lhs, expr)
#define INGOT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.has_value()) return tmp.status();        \
  lhs = std::move(tmp).value()
