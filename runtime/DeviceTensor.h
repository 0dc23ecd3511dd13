#pragma once
/// Device memory for tensors: an owning buffer, and Tensor (float64 values on the host) to
/// and from a device buffer in the tensor's storage dtype (f32, or f16/bf16 bits rounded to
/// nearest even). The one place host and device layouts meet.
#include "ir/Tensor.h"
#include "runtime/Driver.h"

#include <cstddef>
#include <vector>

namespace kfuse::runtime {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  /// Allocates `bytes` on the device (at least 16, so every buffer has an address);
  /// throws kfuse::Error saying how much was asked and how much is free on failure.
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept;
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  /// Fills with 0xFF bytes: NaN in f32, f16 and bf16, so an element never written shows.
  void poison();

private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

/// The tensor's values in its storage dtype, as the device holds them.
std::vector<unsigned char> encodeTensor(const Tensor &t);
Tensor decodeTensor(const TensorType &type, const unsigned char *bytes);

DeviceBuffer upload(const Tensor &t);
Tensor download(const TensorType &type, CUdeviceptr ptr);

} // namespace kfuse::runtime
