// The C API's boundary (capi/Api.h): the thread's last error, status names, the version,
// and the argument checks every file uses.
#include "capi/Api.h"

#include "ir/Parser.h"

#include <new>

namespace kfuse::capi {
namespace {

thread_local std::string lastError;
/// Used when the message itself cannot be allocated.
thread_local const char *lastErrorFallback = "";

} // namespace

kfuse_status setError(kfuse_status s, const char *fn, const char *what) noexcept {
  try {
    lastError = fmt::format("{}: {}", fn, what);
    lastErrorFallback = "";
  } catch (...) {
    lastError.clear();
    lastErrorFallback = "out of memory while recording an error";
  }
  return s;
}

kfuse_status handleException(const char *fn, kfuse_status onError) noexcept {
  try {
    throw;
  } catch (const CApiError &e) {
    return setError(e.status, fn, e.what());
  } catch (const ParseError &e) {
    return setError(KFUSE_ERROR_PARSE, fn, e.what());
  } catch (const Error &e) {
    return setError(onError, fn, e.what());
  } catch (const std::bad_alloc &) {
    return setError(KFUSE_ERROR_OUT_OF_MEMORY, fn, "out of memory");
  } catch (const std::exception &e) {
    return setError(KFUSE_ERROR_INTERNAL, fn, e.what());
  } catch (...) {
    return setError(KFUSE_ERROR_INTERNAL, fn, "an unknown exception");
  }
}

DType dtypeArg(kfuse_dtype t) {
  switch (t) {
  case KFUSE_F32:
    return DType::F32;
  case KFUSE_F16:
    return DType::F16;
  case KFUSE_BF16:
    return DType::BF16;
  default:
    break;
  }
  failWith(KFUSE_ERROR_INVALID_ARGUMENT,
           "dtype {} is not a kfuse_dtype (KFUSE_F32, KFUSE_F16 or KFUSE_BF16)",
           static_cast<int>(t));
}

std::string quote(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60))
    out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  if (s.size() > 60)
    out += fmt::format("... ({} bytes)", s.size());
  return out;
}

void checkIndex(size_t i, size_t n, std::string_view what) {
  if (i >= n)
    failWith(KFUSE_ERROR_INVALID_ARGUMENT, "{} {} is out of range ({} {}{})", what, i, n, what,
             n == 1 ? "" : "s");
}

} // namespace kfuse::capi

using namespace kfuse;

extern "C" {

const char *kfuse_last_error(void) {
  return capi::lastError.empty() ? capi::lastErrorFallback : capi::lastError.c_str();
}

const char *kfuse_status_name(kfuse_status s) {
  switch (s) {
#define KF_STATUS(name)                                                                            \
  case name:                                                                                       \
    return #name;
    KF_STATUS(KFUSE_OK)
    KF_STATUS(KFUSE_ERROR_INVALID_ARGUMENT)
    KF_STATUS(KFUSE_ERROR_UNKNOWN_OP)
    KF_STATUS(KFUSE_ERROR_BAD_OPERANDS)
    KF_STATUS(KFUSE_ERROR_BAD_ATTRIBUTE)
    KF_STATUS(KFUSE_ERROR_TYPE)
    KF_STATUS(KFUSE_ERROR_PARSE)
    KF_STATUS(KFUSE_ERROR_INVALID_GRAPH)
    KF_STATUS(KFUSE_ERROR_NOT_FOUND)
    KF_STATUS(KFUSE_ERROR_COMPILE)
    KF_STATUS(KFUSE_ERROR_NO_DEVICE)
    KF_STATUS(KFUSE_ERROR_DEVICE)
    KF_STATUS(KFUSE_ERROR_IO)
    KF_STATUS(KFUSE_ERROR_RUN)
    KF_STATUS(KFUSE_ERROR_OUT_OF_MEMORY)
    KF_STATUS(KFUSE_ERROR_INTERNAL)
#undef KF_STATUS
  default:
    break;
  }
  return "KFUSE_ERROR_UNKNOWN_STATUS";
}

const char *kfuse_version_string(void) { return KFUSE_VERSION; }

kfuse_status kfuse_get_version(int *major, int *minor, int *patch) {
  return capi::guard("kfuse_get_version", KFUSE_ERROR_INTERNAL, [&] {
    if (major)
      *major = KFUSE_VERSION_MAJOR;
    if (minor)
      *minor = KFUSE_VERSION_MINOR;
    if (patch)
      *patch = KFUSE_VERSION_PATCH;
  });
}

} // extern "C"
