#pragma once
// GPU PCI addresses in the one form the rest of the program compares and prints.
#include <string>
#include <string_view>

namespace firstfault {

// A GPU's PCI address as "0000:3b:00" (domain:bus:device, lower-case hex, no function), from
// either form logs use: NCCL's busId ("3b000", "a01c0", "801000": the hex digits of
// domain:bus:device.function run together) or an Xid/NVML address ("PCI:0000:3b:00",
// "00000000:3B:00.0", "3b:00"). "" for a colon form that is not domain:bus:device.
std::string pci_bus_id(std::string_view s);

}  // namespace firstfault
