// A profiler file that includes an op: tools/lint_layers.py must reject this tree.
#include "ops/op.h"
