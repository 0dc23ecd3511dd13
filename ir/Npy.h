#pragma once
/// NumPy .npy files, the exchange format of `kfuse run --inputs/--outputs`: any NumPy or
/// PyTorch user can make inputs and inspect outputs with np.load / np.save.
/// Writes version 1.0 (2.0 when the header needs it), little-endian '<f4', C order.
/// Reads versions 1.0, 2.0 and 3.0 with '<f4', '<f8' or '<f2' data; anything else (another
/// dtype, big-endian, Fortran order, a truncated file) is a kfuse::Error naming the file.
#include "ir/Tensor.h"

#include <string>

namespace kfuse {

/// Stores `t` as f32 (f16/bf16 values are exact in f32; f64 rounds to nearest).
void writeNpy(const std::string &path, const Tensor &t);
/// Reads `path`, which must hold exactly expect.shape; converts to expect.dtype by rounding
/// to nearest even. A finite value too large for expect.dtype becomes inf; where `warning`
/// is given it then says how many and the first ("'x.npy': 2 of 8 values do not fit f16
/// ..."), else it is left empty.
Tensor readNpy(const std::string &path, const TensorType &expect,
               std::string *warning = nullptr);

/// The parsed header of a .npy file, for tools and tests.
struct NpyHeader {
  int major = 1, minor = 0;
  std::string descr;        ///< e.g. "<f4"
  bool fortranOrder = false;
  Shape shape;
  size_t dataOffset = 0;    ///< bytes from the start of the file to the data
};
/// Parses the header at the start of `bytes`; `path` only names the file in errors.
NpyHeader parseNpyHeader(const std::string &bytes, const std::string &path);

} // namespace kfuse
