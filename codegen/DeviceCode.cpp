#include "codegen/DeviceCode.h"

#include "ir/Error.h"

#include <algorithm>
#include <map>
#include <sstream>

namespace kfuse::codegen {

static std::vector<std::string> words(const std::string &s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;)
    out.push_back(w);
  return out;
}

/// Splits off the header: the leading // lines through the last `// kfuse-` one (a file may
/// document itself above its kfuse- lines; that stays out of programs too).
static DeviceFile readFile(const EmbeddedFile &f) {
  DeviceFile d;
  d.name = f.name;
  std::string_view text = f.text;
  size_t pos = 0, bodyAt = 0;
  while (pos < text.size() && text.substr(pos, 2) == "//") {
    size_t end = text.find('\n', pos);
    end = end == std::string_view::npos ? text.size() : end + 1;
    std::string line(text.substr(pos, end - pos));
    for (auto [key, list] :
         {std::pair{"// kfuse-provides:", &d.provides}, std::pair{"// kfuse-requires:", &d.needs}})
      if (line.rfind(key, 0) == 0)
        for (std::string &w : words(line.substr(std::string_view(key).size())))
          list->push_back(std::move(w));
    if (line.rfind("// kfuse-", 0) == 0)
      bodyAt = end;
    pos = end;
  }
  if (bodyAt == 0)
    fail("device file '{}' has no // kfuse-provides: header", d.name);
  d.body = std::string(text.substr(bodyAt));
  return d;
}

const std::vector<DeviceFile> &deviceFiles() {
  static const std::vector<DeviceFile> files = [] {
    std::vector<DeviceFile> out;
    for (const EmbeddedFile &f : embeddedDeviceFiles())
      out.push_back(readFile(f));
    return out;
  }();
  return files;
}

const DeviceFile &deviceFile(std::string_view name) {
  for (const DeviceFile &f : deviceFiles())
    if (f.name == name)
      return f;
  fail("no device file '{}' (codegen/cuda)", name);
}

static bool identChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::vector<std::string> deviceNamesUsed(std::string_view source) {
  std::vector<std::string> names;
  for (size_t i = 0; i < source.size();) {
    if (source.substr(i, 2) == "//") {
      size_t end = source.find('\n', i);
      i = end == std::string_view::npos ? source.size() : end;
    } else if (identChar(source[i])) {
      size_t end = i;
      while (end < source.size() && identChar(source[end]))
        ++end;
      std::string_view w = source.substr(i, end - i);
      if (w.substr(0, 3) == "kf_" && std::find(names.begin(), names.end(), w) == names.end())
        names.emplace_back(w);
      i = end;
    } else {
      ++i;
    }
  }
  return names;
}

/// Marks file `i` (an index into deviceFiles()) and everything it needs.
static void mark(size_t i, std::vector<bool> &wanted) {
  if (wanted[i])
    return;
  wanted[i] = true;
  const std::vector<DeviceFile> &files = deviceFiles();
  for (const std::string &n : files[i].needs)
    mark(&deviceFile(n) - files.data(), wanted);
}

static std::vector<const DeviceFile *> inOrder(const std::vector<bool> &wanted) {
  std::vector<const DeviceFile *> out;
  for (size_t i = 0; i < wanted.size(); ++i)
    if (wanted[i])
      out.push_back(&deviceFiles()[i]);
  return out;
}

std::vector<const DeviceFile *> deviceFilesFor(const std::vector<std::string> &names) {
  static const std::map<std::string, size_t, std::less<>> provider = [] {
    std::map<std::string, size_t, std::less<>> m;
    for (size_t i = 0; i < deviceFiles().size(); ++i)
      for (const std::string &n : deviceFiles()[i].provides)
        m[n] = i;
    return m;
  }();
  std::vector<bool> wanted(deviceFiles().size());
  for (const std::string &n : names) {
    auto it = provider.find(n);
    if (it == provider.end())
      fail("generated code uses '{}', which no codegen/cuda/*.cuh provides", n);
    mark(it->second, wanted);
  }
  return inOrder(wanted);
}

std::vector<const DeviceFile *> deviceClosure(const DeviceFile &file) {
  std::vector<bool> wanted(deviceFiles().size());
  mark(&file - deviceFiles().data(), wanted);
  return inOrder(wanted);
}

} // namespace kfuse::codegen
