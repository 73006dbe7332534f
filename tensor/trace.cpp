// The thread-local recorder slot declared in trace.h.
#include "trace.h"

namespace ctrax::detail {
thread_local constinit TraceState t_trace_state{};
}  // namespace ctrax::detail
