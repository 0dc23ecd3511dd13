// .npy I/O: round trips, the exact header NumPy expects, the dtypes and versions read, and a
// clear error for every malformed file.
#include "ir/Error.h"
#include "ir/Npy.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace kfuse;
namespace fs = std::filesystem;

namespace {

std::string tempPath(const std::string &name) {
  fs::path dir = fs::temp_directory_path() / ("kfuse_npy_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// A .npy file made by hand: version, header dict (padded to 64 bytes) and raw data.
std::string npyFile(int major, const std::string &dict, const std::string &data) {
  std::string h = dict;
  size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + h.size() + 1) % 64)
    h += ' ';
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  if (major != 1)
    out += std::string(2, '\0');
  return out + h + data;
}

template <typename T> std::string bytesOf(std::initializer_list<T> values) {
  std::string out;
  for (T v : values)
    out.append(reinterpret_cast<const char *>(&v), sizeof v);
  return out;
}

} // namespace

TEST_CASE("npy: round trip through f32 files", "[npy]") {
  std::string p = tempPath("rt.npy");
  Tensor t(TensorType{f32, {2, 3}}, {1.5, -2.25, 0.1, 1e30, -0.0, 3.0});
  writeNpy(p, t);
  Tensor back = readNpy(p, t.type);
  CHECK(back.type == t.type);
  CHECK(back.data[0] == 1.5);
  CHECK(back.data[2] == static_cast<double>(0.1f)); // stored as f32
  CHECK(back.data[3] == static_cast<double>(1e30f));
  CHECK(std::signbit(back.data[4]));

  // Reading into bf16 rounds to nearest even.
  Tensor b = readNpy(p, TensorType{bf16, {2, 3}});
  CHECK(b.type.dtype == bf16);
  CHECK(b.data[2] == 0.10009765625);

  for (Shape s : {Shape{}, Shape{5}, Shape{0, 3}, Shape{1, 1, 7}}) {
    Tensor x(TensorType{f16, s});
    for (size_t i = 0; i < x.data.size(); ++i)
      x.data[i] = 0.5 * static_cast<double>(i) - 1.0;
    writeNpy(p, x);
    Tensor y = readNpy(p, x.type);
    INFO("shape " << shapeToString(s));
    CHECK(y.data == x.data);
  }
}

TEST_CASE("npy: header is what NumPy writes", "[npy]") {
  std::string p = tempPath("hdr.npy");
  writeNpy(p, Tensor(TensorType{bf16, {64, 4096}}));
  std::string bytes = slurp(p);
  REQUIRE(bytes.size() == 128 + 64 * 4096 * 4);
  CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  size_t len = static_cast<unsigned char>(bytes[8]) | static_cast<unsigned char>(bytes[9]) << 8;
  CHECK(len == 118);
  CHECK(bytes.substr(10, 63) ==
        "{'descr': '<f4', 'fortran_order': False, 'shape': (64, 4096), }");
  CHECK(bytes[127] == '\n');

  writeNpy(p, Tensor(TensorType{f32, {5}}, {1, 2, 3, 4, 5}));
  NpyHeader h = parseNpyHeader(slurp(p), p);
  CHECK(h.descr == "<f4");
  CHECK(h.shape == Shape{5});
  CHECK(h.dataOffset == 128); // 10 + 58 + 1 bytes, padded to a multiple of 64
  CHECK(slurp(p).find("'shape': (5,)") != std::string::npos);
  writeNpy(p, Tensor(TensorType{f32, {}}, {7}));
  CHECK(slurp(p).find("'shape': ()") != std::string::npos);
  float v;
  std::memcpy(&v, slurp(p).data() + 128, 4);
  CHECK(v == 7.0f);
}

TEST_CASE("npy: reads f8 and f2 data and versions 2.0 and 3.0", "[npy]") {
  std::string p = tempPath("kinds.npy");
  spit(p, npyFile(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
                  bytesOf<double>({0.1, -2.0, 1e-3})));
  Tensor d = readNpy(p, TensorType{f32, {3}});
  CHECK(d.data[0] == static_cast<double>(0.1f)); // rounded to the expected dtype
  CHECK(d.data[1] == -2.0);

  // f16 bits of 1.0, -2.5, 65504
  spit(p, npyFile(1, "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 3), }",
                  bytesOf<uint16_t>({0x3c00, 0xc100, 0x7bff})));
  Tensor h = readNpy(p, TensorType{f32, {1, 3}});
  CHECK(h.data == std::vector<double>{1.0, -2.5, 65504.0});

  // Keys in another order, version 2.0; then 3.0 with double quotes.
  spit(p, npyFile(2, "{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}",
                  bytesOf<float>({3.0f, 4.0f})));
  CHECK(readNpy(p, TensorType{f32, {2}}).data == std::vector<double>{3.0, 4.0});
  spit(p, npyFile(3, "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2,)}",
                  bytesOf<float>({5.0f, 6.0f})));
  CHECK(readNpy(p, TensorType{f32, {2}}).data == std::vector<double>{5.0, 6.0});
}

TEST_CASE("npy: malformed files are clear errors", "[npy][errors]") {
  std::string p = tempPath("bad.npy");
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  std::string data = bytesOf<float>({1, 2, 3, 4});
  TensorType t{f32, {2, 2}};

  REQUIRE_THROWS_WITH(readNpy(tempPath("missing.npy"), t),
                      Catch::Contains("cannot open") && Catch::Contains("missing.npy"));
  spit(p, "hello, this is not numpy");
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("is not a .npy file"));
  spit(p, npyFile(1, good, data.substr(0, 10)));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("bad.npy' is truncated") &&
                                         Catch::Contains("needs 16 bytes of data, the file has 10"));
  spit(p, npyFile(1, good, data).substr(0, 40));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("truncated"));
  spit(p, npyFile(1, good, data + "xx"));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("2 bytes after its data"));
  spit(p, npyFile(1, good, data));
  REQUIRE_THROWS_WITH(readNpy(p, TensorType{f32, {4}}),
                      Catch::Contains("bad.npy' has shape [2, 2], but the graph expects [4]"));
  spit(p, npyFile(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("holds dtype '>f4'"));
  spit(p, npyFile(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("holds dtype '<i4'"));
  spit(p, npyFile(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("Fortran order"));
  spit(p, npyFile(1, "{'descr': '<f4', 'shape': (2, 2), }", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("lacks 'fortran_order'"));
  spit(p, npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, -2), }", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("bad header"));
  spit(p, npyFile(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), 'x': 1}", data));
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("unknown key"));
  std::string v4 = npyFile(1, good, data);
  v4[6] = 4;
  spit(p, v4);
  REQUIRE_THROWS_WITH(readNpy(p, t), Catch::Contains("version 4.0"));
  REQUIRE_THROWS_WITH(writeNpy("/nonexistent-dir/x.npy", Tensor(t)),
                      Catch::Contains("cannot write '/nonexistent-dir/x.npy'"));
}

TEST_CASE("npy: every truncation and header byte flip is an Error, never a crash", "[npy][errors]") {
  std::string p = tempPath("fuzz.npy");
  TensorType t{f32, {3, 2}};
  writeNpy(p, Tensor(t, {1, 2, 3, 4, 5, 6}));
  const std::string good = slurp(p);
  for (size_t len = 0; len < good.size(); ++len) {
    spit(p, good.substr(0, len));
    INFO("prefix of " << len << " bytes");
    CHECK_THROWS_AS(readNpy(p, t), Error);
  }
  for (size_t i = 0; i < 64; ++i)
    for (unsigned char x : {0x01, 0x20, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ x);
      spit(p, bad);
      INFO("byte " << i << " ^ " << int(x));
      try {
        Tensor r = readNpy(p, t); // a flip in the padding is harmless
        CHECK(r.data.size() == 6);
      } catch (const Error &) {
      }
    }
}
