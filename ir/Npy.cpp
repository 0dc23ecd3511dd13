#include "ir/Npy.h"

#include "ir/Error.h"
#include "ir/InputFile.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

namespace kfuse {

static_assert(std::endian::native == std::endian::little,
              ".npy I/O assumes a little-endian host");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

/// The magic, version, header length and header dict of `f`, without the data: the header
/// says how much data to expect, which is checked before any of it is read.
std::string readHeaderBytes(const InputFile &f, const std::string &path) {
  constexpr size_t kMaxHeader = 1 << 20; // NumPy's headers are a few hundred bytes
  std::string prefix;
  size_t n = static_cast<size_t>(std::min<uint64_t>(f.size(), 12));
  if (!f.read(0, n, prefix))
    fail("cannot read '{}'", path);
  if (prefix.size() < kMagicLen + 4 || prefix.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    return prefix; // parseNpyHeader names what is wrong
  auto byteAt = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(prefix[i]));
  };
  size_t headerLen = byteAt(8) | byteAt(9) << 8, start = 10;
  if ((prefix[6] == 2 || prefix[6] == 3) && prefix.size() == 12) {
    headerLen |= byteAt(10) << 16 | byteAt(11) << 24;
    start = 12;
  }
  if (headerLen > kMaxHeader)
    fail("'{}' is not a valid .npy file: its header claims {} bytes (kfuse reads at most {})", path,
         headerLen, kMaxHeader);
  std::string header;
  if (!f.read(0, static_cast<size_t>(std::min<uint64_t>(f.size(), start + headerLen)), header))
    fail("cannot read '{}'", path);
  return header;
}

/// A tiny cursor over the header's Python dict literal, e.g.
///   {'descr': '<f4', 'fortran_order': False, 'shape': (64, 4096), }
struct DictParser {
  const std::string &s;
  const std::string &path;
  size_t pos = 0;

  [[noreturn]] void error(const char *what) {
    fail("'{}' is not a valid .npy file: bad header ({} at offset {} of \"{}\")", path, what, pos,
         excerpt(s));
  }
  void skipSpace() {
    while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t' || s[pos] == '\n' || s[pos] == '\r'))
      ++pos;
  }
  bool eat(char c) {
    skipSpace();
    if (pos < s.size() && s[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void expect(char c, const char *what) {
    if (!eat(c))
      error(what);
  }
  std::string string() {
    skipSpace();
    if (pos >= s.size() || (s[pos] != '\'' && s[pos] != '"'))
      error("expected a string");
    char q = s[pos++];
    size_t end = s.find(q, pos);
    if (end == std::string::npos)
      error("unterminated string");
    std::string out = s.substr(pos, end - pos);
    pos = end + 1;
    return out;
  }
  bool boolean() {
    skipSpace();
    if (s.compare(pos, 4, "True") == 0) {
      pos += 4;
      return true;
    }
    if (s.compare(pos, 5, "False") == 0) {
      pos += 5;
      return false;
    }
    error("expected True or False");
  }
  Shape tuple() {
    expect('(', "expected '(' for the shape");
    Shape out;
    while (!eat(')')) {
      skipSpace();
      size_t start = pos;
      int64_t v = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (v > (int64_t(1) << 50))
          error("shape dim too large");
        v = v * 10 + (s[pos++] - '0');
      }
      if (pos < s.size() && s[pos] == 'L') // Python 2 longs
        ++pos;
      if (pos == start)
        error("expected a non-negative integer in the shape");
      out.push_back(v);
      if (!eat(',')) {
        expect(')', "expected ',' or ')' in the shape");
        break;
      }
    }
    return out;
  }
};

} // namespace

NpyHeader parseNpyHeader(const std::string &bytes, const std::string &path) {
  if (bytes.size() < kMagicLen + 4 || bytes.compare(0, kMagicLen, kMagic, kMagicLen) != 0)
    fail("'{}' is not a .npy file (no \\x93NUMPY magic)", path);
  NpyHeader h;
  h.major = static_cast<unsigned char>(bytes[6]);
  h.minor = static_cast<unsigned char>(bytes[7]);
  size_t headerLen, start;
  auto byteAt = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(bytes[i])); };
  if (h.major == 1) {
    headerLen = byteAt(8) | byteAt(9) << 8;
    start = 10;
  } else if (h.major == 2 || h.major == 3) {
    if (bytes.size() < 12)
      fail("'{}' is truncated: the .npy header is incomplete", path);
    headerLen = byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    start = 12;
  } else {
    fail("'{}' is .npy version {}.{}; kfuse reads versions 1.0, 2.0 and 3.0", path, h.major,
         h.minor);
  }
  if (bytes.size() < start + headerLen)
    fail("'{}' is truncated: the .npy header says {} bytes but the file ends first", path,
         headerLen);
  std::string dict = bytes.substr(start, headerLen);
  h.dataOffset = start + headerLen;

  DictParser p{dict, path};
  bool haveDescr = false, haveOrder = false, haveShape = false;
  p.expect('{', "expected '{'");
  while (!p.eat('}')) {
    std::string key = p.string();
    p.expect(':', "expected ':'");
    if (key == "descr") {
      h.descr = p.string();
      haveDescr = true;
    } else if (key == "fortran_order") {
      h.fortranOrder = p.boolean();
      haveOrder = true;
    } else if (key == "shape") {
      h.shape = p.tuple();
      haveShape = true;
    } else {
      p.error("unknown key");
    }
    if (!p.eat(',')) {
      p.expect('}', "expected ',' or '}'");
      break;
    }
  }
  if (!haveDescr || !haveOrder || !haveShape)
    fail("'{}' is not a valid .npy file: the header lacks {}", path,
         !haveDescr ? "'descr'" : !haveOrder ? "'fortran_order'" : "'shape'");
  return h;
}

/// Element i of little-endian data of f32, f64 or f16 (elemSize 4, 8, 2) as a double.
static double readValue(const char *src, size_t elemSize, int64_t i) {
  if (elemSize == 4) {
    float f;
    std::memcpy(&f, src + i * 4, 4);
    return f;
  }
  if (elemSize == 8) {
    double v;
    std::memcpy(&v, src + i * 8, 8);
    return v;
  }
  uint16_t b;
  std::memcpy(&b, src + i * 2, 2);
  return halfBitsToFloat(b);
}

Tensor readNpy(const std::string &path, const TensorType &expect, std::string *warning) {
  InputFile f(path);
  if (!f.ok())
    fail("cannot open '{}': {}", path, f.error());
  NpyHeader h = parseNpyHeader(readHeaderBytes(f, path), path);
  size_t elemSize;
  if (h.descr == "<f4" || h.descr == "=f4")
    elemSize = 4;
  else if (h.descr == "<f8" || h.descr == "=f8")
    elemSize = 8;
  else if (h.descr == "<f2" || h.descr == "=f2")
    elemSize = 2;
  else
    fail("'{}' holds dtype '{}'; kfuse reads little-endian float32 ('<f4'), float64 ('<f8') and "
         "float16 ('<f2')",
         path, excerpt(h.descr));
  if (h.fortranOrder)
    fail("'{}' is in Fortran order; kfuse reads C-order arrays (save np.ascontiguousarray(a))",
         path);
  if (h.shape != expect.shape)
    fail("'{}' has shape {}, but the graph expects {}", path, shapeToString(h.shape),
         shapeToString(expect.shape));
  int64_t n = expect.numElements();
  size_t need = static_cast<size_t>(n) * elemSize;
  size_t have = f.size() - h.dataOffset;
  if (have < need)
    fail("'{}' is truncated: shape {} needs {} bytes of data, the file has {}", path,
         shapeToString(h.shape), need, have);
  if (have > need)
    fail("'{}' has {} bytes after its data; expected exactly {} for shape {}", path, have - need,
         need, shapeToString(h.shape));

  std::string bytes;
  if (!f.read(h.dataOffset, need, bytes))
    fail("cannot read '{}': it changed while being read", path);
  Tensor t(expect);
  const char *src = bytes.data();
  int64_t overflows = 0, first = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = readValue(src, elemSize, i);
    t.data[i] = roundToDType(v, expect.dtype);
    if (std::isinf(t.data[i]) && std::isfinite(v) && overflows++ == 0)
      first = i;
  }
  if (warning)
    *warning = overflows == 0 ? std::string()
                              : fmt::format("'{}': {} of {} values do not fit {} (largest finite "
                                            "value {:g}; the first, element {}, is {:g}): they "
                                            "become inf",
                                            excerpt(path, 400), overflows, n,
                                            dtypeName(expect.dtype), largestFinite(expect.dtype),
                                            first, readValue(src, elemSize, first));
  return t;
}

void writeNpy(const std::string &path, const Tensor &t) {
  std::string shape = "(";
  for (size_t i = 0; i < t.type.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.type.shape[i]);
  shape += t.type.shape.size() == 1 ? ",)" : ")"; // NumPy writes (5,) for rank 1
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a final newline so the data starts at a multiple of 64 bytes.
  auto padded = [&](size_t prefix) { return (prefix + dict.size() + 1 + 63) / 64 * 64 - prefix; };
  bool v2 = padded(kMagicLen + 4) > 65535; // version 1.0 has a 16-bit header length
  size_t prefix = kMagicLen + (v2 ? 6 : 4);
  dict.append(padded(prefix) - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  size_t len = dict.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (v2) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += dict;
  size_t dataStart = out.size();
  out.resize(dataStart + t.data.size() * 4);
  for (size_t i = 0; i < t.data.size(); ++i) {
    float f = static_cast<float>(t.data[i]);
    std::memcpy(out.data() + dataStart + i * 4, &f, 4);
  }

  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f)
    fail("cannot write '{}': {}", path, std::strerror(errno));
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f)
    fail("cannot write '{}': {}", path, std::strerror(errno));
}

} // namespace kfuse
