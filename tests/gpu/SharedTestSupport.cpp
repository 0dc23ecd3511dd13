// The GPU tests use the unit tests' random graph generator and shrinker; compiling their
// sources here keeps one copy of each without a library of test code.
#include "unit/RandomGraph.cpp"
#include "unit/Shrink.cpp"
