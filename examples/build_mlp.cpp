// Builds the small MLP of ARCHITECTURE.md through the builder API and prints it as .kf.
// The output is the same text `kfuse opt examples/graphs/mlp.kf` prints (a lit test
// checks that), so a graph built in C++ can be handed to every kfuse command as a file:
//   build/bin/example_build_mlp > mlp.kf && kfuse report mlp.kf
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <cstdio>

int main() {
  using namespace kfuse;
  try {
    Graph g("mlp");
    Value x = g.input("x", bf16, {64, 4096});
    Value w = g.input("w", bf16, {11008, 4096});
    Value b = g.input("b", bf16, {11008});
    Value h = matmul(x, w, {.transB = true}); // [64, 11008]
    Value hb = h + b;                         // the bias broadcasts over rows
    Value y = gelu_tanh(hb);
    Value z = cast(y, f32);
    // Names are optional (unnamed values print as %0, %1, ...); these match mlp.kf.
    h->setName("h");
    hb->setName("hb");
    y->setName("y");
    z->setName("z");
    g.output(y);
    g.output(z);
    verify(g);
    std::fputs(printGraph(g).c_str(), stdout);
  } catch (const Error &e) {
    std::fprintf(stderr, "example_build_mlp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
