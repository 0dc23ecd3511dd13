#include "runtime/DeviceTensor.h"

#include "ir/Error.h"

#include <cstring>
#include <utility>

namespace kfuse::runtime {

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  Driver &d = Driver::require();
  CUresult r = d.cuMemAlloc_v2(&ptr_, bytes ? bytes : 16);
  if (r != CUDA_SUCCESS) {
    ptr_ = 0;
    size_t freeBytes = 0, total = 0;
    d.cuMemGetInfo_v2(&freeBytes, &total);
    d.check(r, fmt::format("allocating {} bytes on the device ({} of {} bytes free)", bytes,
                           freeBytes, total)
                   .c_str());
  }
}

DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_)
    Driver::get()->cuMemFree_v2(ptr_);
}

void DeviceBuffer::poison() {
  Driver &d = Driver::require();
  if (bytes_)
    d.check(d.cuMemsetD8_v2(ptr_, 0xFF, bytes_), "poisoning a buffer (cuMemsetD8)");
}

std::vector<unsigned char> encodeTensor(const Tensor &t) {
  size_t size = dtypeSize(t.dtype());
  std::vector<unsigned char> raw(t.data.size() * size);
  for (size_t i = 0; i < t.data.size(); ++i) {
    float f = static_cast<float>(t.data[i]);
    if (t.dtype() == DType::F32) {
      std::memcpy(&raw[i * 4], &f, 4);
    } else {
      uint16_t h = t.dtype() == DType::F16 ? floatToHalfBits(f) : floatToBF16Bits(f);
      std::memcpy(&raw[i * 2], &h, 2);
    }
  }
  return raw;
}

Tensor decodeTensor(const TensorType &type, const unsigned char *bytes) {
  Tensor t(type);
  for (size_t i = 0; i < t.data.size(); ++i) {
    if (type.dtype == DType::F32) {
      float f;
      std::memcpy(&f, bytes + i * 4, 4);
      t.data[i] = f;
    } else {
      uint16_t h;
      std::memcpy(&h, bytes + i * 2, 2);
      t.data[i] = type.dtype == DType::F16 ? halfBitsToFloat(h) : bf16BitsToFloat(h);
    }
  }
  return t;
}

DeviceBuffer upload(const Tensor &t) {
  Driver &d = Driver::require();
  std::vector<unsigned char> raw = encodeTensor(t);
  DeviceBuffer b(raw.size());
  if (!raw.empty())
    d.check(d.cuMemcpyHtoD_v2(b.ptr(), raw.data(), raw.size()), "copying an input to the device");
  return b;
}

Tensor download(const TensorType &type, CUdeviceptr ptr) {
  Driver &d = Driver::require();
  std::vector<unsigned char> raw(static_cast<size_t>(type.bytes()));
  if (!raw.empty())
    d.check(d.cuMemcpyDtoH_v2(raw.data(), ptr, raw.size()), "copying an output from the device");
  return decodeTensor(type, raw.data());
}

} // namespace kfuse::runtime
