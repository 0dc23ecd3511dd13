#pragma once
/// The device helpers that generated programs are assembled from: the files codegen/cuda/*.cuh,
/// embedded in the library at build time (codegen/cuda/DeviceCode.cmake). Each file starts
/// with a header that is not emitted, ending at its last `// kfuse-` line:
///   // kfuse-provides: kf_max kf_min      the kf_ names it defines
///   // kfuse-requires: math_nan.cuh       the files it uses (each before it in a program)
/// A program carries exactly the files that define the kf_ names its kernels use, with what
/// they require, in the order of DeviceCode.cmake's list.
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kfuse::codegen {

/// One embedded file as written (generated from codegen/cuda by EmbedDeviceCode.cmake).
struct EmbeddedFile {
  const char *name; ///< "math_minmax.cuh"
  const char *text;
};
/// Every file, in emission order.
std::span<const EmbeddedFile> embeddedDeviceFiles();

/// An embedded file with its header read.
struct DeviceFile {
  std::string name;
  std::vector<std::string> provides; ///< kf_ names it defines
  std::vector<std::string> needs;    ///< files it requires (kfuse-requires)
  std::string body;                  ///< what a program carries: the text after the header
};

/// Every file, in emission order (each after the files it needs). Read once.
const std::vector<DeviceFile> &deviceFiles();
/// The file called `name`; fails if there is none.
const DeviceFile &deviceFile(std::string_view name);
/// The kf_-prefixed identifiers of `source` outside // comments, each once, in order of
/// first use.
std::vector<std::string> deviceNamesUsed(std::string_view source);
/// The files that provide `names` and every file they need, in emission order. Fails for a
/// kf_ name that no file provides (a codegen bug: the program would not compile).
std::vector<const DeviceFile *> deviceFilesFor(const std::vector<std::string> &names);
/// `file`'s requirements (transitively) in emission order, then `file`: what it needs to
/// compile on its own.
std::vector<const DeviceFile *> deviceClosure(const DeviceFile &file);

} // namespace kfuse::codegen
