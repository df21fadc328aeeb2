// ops/op.cpp: the parts of OpCall that are not inline.
#include "ops/op.h"

namespace ts {

void OpCall::scalar_args(std::vector<double>& out) const {
  if (op.scalar_args != nullptr) op.scalar_args(*this, out);
}

void OpCall::wrong_attrs() const {
  fail("{}: internal error: the call carries another op's attribute struct (a front end or kernel of {} reads "
       "attributes its OpDef does not name)",
       op.name, op.name);
}

}  // namespace ts
