#pragma once
/// Reading and writing for the `kfuse` subcommands, shared so they all treat `-` and
/// write errors the same way.
#include "ir/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace kfuse::tool {

/// Every graph of a .kf file, or of stdin for "-". A ParseError propagates as-is: the
/// driver (tools/kfuse.cpp) prints it with its file:line:col. Literals that overflow their
/// dtype are warned about (warnAboutLiterals).
std::vector<std::unique_ptr<Graph>> loadModule(const std::string &path);
/// parseFile(path), never stdin, with the same warnings as loadModule.
std::vector<std::unique_ptr<Graph>> loadModuleFile(const std::string &path);
/// Prints ir/LiteralCheck.h's warnings for every graph to stderr, "kfuse: warning: ...".
void warnAboutLiterals(const std::vector<std::unique_ptr<Graph>> &module);

/// The graph named `name` in `module` (read from `file`), or the first one when `name` is
/// empty; throws kfuse::Error listing the graphs the file has when there is no such graph.
Graph &selectGraph(const std::vector<std::unique_ptr<Graph>> &module, const std::string &file,
                   const std::string &name);

/// Writes `text` to `path`, or to stdout when it is empty or "-"; throws kfuse::Error naming
/// the file and the system's reason when it cannot.
void writeText(const std::string &path, const std::string &text);

} // namespace kfuse::tool
