#include "distributed/nccl_api.h"

namespace ember::dist {

const char* to_string(NcclResult result) {
  switch (result) {
    case NcclResult::Success:
      return "success";
    case NcclResult::UnhandledCudaError:
      return "unhandled cuda error";
    case NcclResult::SystemError:
      return "system error";
    case NcclResult::InternalError:
      return "internal error";
    case NcclResult::InvalidArgument:
      return "invalid argument";
    case NcclResult::InvalidUsage:
      return "invalid usage";
    case NcclResult::RemoteError:
      return "remote error";
    case NcclResult::InProgress:
      return "in progress";
  }
  return "unknown NCCL result";
}

#if !defined(EMBER_WITH_NCCL)
// sim and off builds have no NCCL (Note [NCCL through a function table]); the real table is in
// nccl_real.cpp.
const NcclApi* real_nccl_api() { return nullptr; }
#endif

}  // namespace ember::dist
