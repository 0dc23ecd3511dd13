// libFuzzer target: bytes -> an .npy file -> readNpy, as `kfuse run --inputs` reads it. The
// first byte picks the dtype the file is read into (f32, f16, bf16), the rest is the file.
// A kfuse::Error naming the file is the expected answer to bad input; a crash, sanitizer
// report, leak, hang or any other exception is a finding. A file whose header parses is also
// read with the shape it declares (so the data conversion runs), and what is accepted must
// hold that shape, values rounded to the dtype (inf only where a warning says so), and
// survive writeNpy -> readNpy unchanged.
#include "fuzz/FuzzCheck.h"
#include "ir/Error.h"
#include "ir/Npy.h"
#include "ir/Shape.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fmt/format.h>
#include <string>
#include <unistd.h>

using namespace kfuse;

namespace {

const std::string &scratch() {
  static const std::string path = fmt::format("/tmp/kfuse-npy-fuzz-{}.npy", ::getpid());
  return path;
}

void writeFile(const std::string &path, const uint8_t *data, size_t size) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
    fuzz::finding("cannot write the scratch file", path);
}

/// Reads the file as `t`; checks what an accepted tensor must be.
void readAs(const TensorType &t) {
  Tensor got;
  std::string warning;
  try {
    got = readNpy(scratch(), t, &warning);
  } catch (const Error &e) {
    if (std::string(e.what()).find(scratch()) == std::string::npos)
      fuzz::finding("an .npy error that does not name the file", e.what());
    return;
  }
  if (!(got.type == t) || got.numElements() != t.numElements())
    fuzz::finding("readNpy returned another type", got.type.str() + " for " + t.str());
  for (double v : got.data)
    if (!std::isnan(v) && roundToDType(v, t.dtype) != v)
      fuzz::finding("a value read is not rounded to the dtype", fmt::format("{}", v));
  writeNpy(scratch(), got);
  Tensor back = readNpy(scratch(), t);
  for (int64_t i = 0; i < got.numElements(); ++i)
    if (!(back.data[i] == got.data[i] || (std::isnan(back.data[i]) && std::isnan(got.data[i]))))
      fuzz::finding("writeNpy -> readNpy changed a value",
                    fmt::format("element {}: {} -> {}", i, got.data[i], back.data[i]));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const DType dtypes[] = {DType::F32, DType::F16, DType::BF16};
  DType dtype = dtypes[data[0] % 3];
  writeFile(scratch(), data + 1, size - 1);
  // The shape it declares, when its header parses (a small shape else: a mismatch error).
  Shape shape{2, 3};
  try {
    NpyHeader h = parseNpyHeader(
        std::string(reinterpret_cast<const char *>(data + 1), std::min<size_t>(size - 1, 4096)),
        scratch());
    shape = h.shape;
  } catch (const Error &) {
  }
  try {
    checkShape("npy fuzz", shape); // a graph input's shape is checked like this
    readAs(TensorType{dtype, shape});
  } catch (const Error &) { // a shape no tensor may have (over 2^48 elements)
  }
  std::remove(scratch().c_str());
  return 0;
}
