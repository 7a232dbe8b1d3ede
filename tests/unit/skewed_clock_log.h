#pragma once
// A job log shared by the correlator's clock-skew test and the masking test of its hosts.
#include <string>
#include <utility>

namespace firstfault::test {

// Eight ranks on two hosts, gpu-a (ranks 0-3) and gpu-b (4-7), whose clock runs 60 s ahead:
// rank 5 runs out of memory 30 s before rank 1 does (10:01:30 on gpu-b's clock is 10:00:30 on
// gpu-a's) and the others time out in the same collective together, each host printing its own
// clock. The correlator estimates the skew from the timeouts (Diagnosis::clock_skew).
inline std::string two_host_skewed_clock_log() {
  std::string log;
  for (int r = 0; r < 8; ++r) {
    const std::string rank = std::to_string(r), dev = std::to_string(r % 4), pid = std::to_string(4000 + r);
    log += "[rank" + rank + "]:gpu-" + (r < 4 ? "a" : "b") + ":" + pid + ":" + pid + " [" + dev + "] NCCL INFO comm 0x5" +
           rank + " rank " + rank + " nranks 8 cudaDev " + dev + " nvmlDev " + dev + " busId " + std::to_string(r % 4 + 1) +
           "b000 commId 0x1 - Init COMPLETE\n";
  }
  for (auto [rank, hms] : {std::pair{1, "10:01:00"}, std::pair{5, "10:01:30"}})
    log += "[rank" + std::to_string(rank) + "]:[E1107 " + hms +
           ".000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
           "total capacity of 79.10 GiB\n";
  for (int r : {0, 2, 3, 4, 6, 7})
    log += "[rank" + std::to_string(r) + "]:[E1107 " + (r < 4 ? "10:11:00" : "10:12:00") +
           ".300000000 ProcessGroupNCCL.cpp:607] [Rank " + std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
           "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n";
  return log;
}

}  // namespace firstfault::test
