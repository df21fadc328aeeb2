// ops/op_names.cpp: the profiler-facing name of every op.
#include "ops/op_call.h"

namespace ts {

namespace {
#define TS_OP_FULL_NAME(name) "ts::" #name,
constexpr const char* kFullNames[] = {TS_FOR_EACH_OP(TS_OP_FULL_NAME)};
#undef TS_OP_FULL_NAME
}  // namespace

const char* op_name(OpId op) { return kFullNames[static_cast<int>(op)]; }
const char* op_short_name(OpId op) { return kFullNames[static_cast<int>(op)] + 4; }

}  // namespace ts
