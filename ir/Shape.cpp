#include "ir/Shape.h"

#include "ir/Error.h"

namespace kfuse {

std::string shapeToString(llvm::ArrayRef<int64_t> s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i)
      out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

int64_t numElements(llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

std::optional<Shape> broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      return std::nullopt;
    out[rank - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

Shape broadcastOrThrow(std::string_view op, llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b) {
  if (auto s = broadcastShapes(a, b))
    return *s;
  size_t rank = std::max(a.size(), b.size());
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1)
      fail("{}: shapes {} and {} do not broadcast (dim {}: {} vs {})", op, shapeToString(a),
           shapeToString(b), rank - 1 - i, da, db);
  }
  fail("{}: shapes {} and {} do not broadcast", op, shapeToString(a), shapeToString(b));
}

void checkShape(std::string_view what, llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] < 0)
      fail("{}: dim {} is negative ({})", what, i, s[i]);
    if (s[i] > kMaxElements || (s[i] != 0 && n > kMaxElements / s[i]))
      fail("{}: shape {} has more than 2^48 elements", what, shapeToString(s));
    n *= s[i];
  }
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeToString(shape); }

} // namespace kfuse
