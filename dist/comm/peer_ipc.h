// The ranks of one node map each other's registered GPU regions through CUDA IPC: each rank's
// handle travels to the others over the host channel of a comm. Shared by the peer-memory
// all-reduce (dist/comm/peer_comm.h) and the copy-engine collectives (dist/comm/peer_copy.h).
#pragma once
#include <vector>

#include "dist/comm/comm.h"

namespace nd::dist {

// Collective over `host`: every rank passes its own cudaMalloc'd region `own` (whose contents
// must already be in place: a peer may write to it as soon as this returns) and gets opened[q] =
// rank q's region mapped here (nullptr at its own rank). False on every rank when any rank could
// not open a peer's region; the caller then closes what was opened.
bool open_peer_regions(Comm& host, void* own, std::vector<void*>& opened);
// Unmaps what open_peer_regions opened (never throws: destructors call it).
void close_peer_regions(std::vector<void*>& opened);

}  // namespace nd::dist
