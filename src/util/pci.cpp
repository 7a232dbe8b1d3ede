#include "firstfault/util/pci.h"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

namespace firstfault {

std::string pci_bus_id(std::string_view s) {
  std::string t(s);
  if (t.rfind("PCI:", 0) == 0) t = t.substr(4);
  auto hex = [](const std::string& x) { return std::strtoull(x.c_str(), nullptr, 16); };
  if (t.find(':') != std::string::npos) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= t.size(); ++i)
      if (i == t.size() || t[i] == ':') {
        parts.push_back(t.substr(start, i - start));
        start = i + 1;
      }
    if (parts.size() == 2) parts.insert(parts.begin(), "0");
    if (parts.size() != 3) return "";
    std::string dev = parts[2].substr(0, parts[2].find('.'));
    return fmt::format("{:04x}:{:02x}:{:02x}", hex(parts[0]), hex(parts[1]), hex(dev));
  }
  unsigned long long v = hex(t);
  return fmt::format("{:04x}:{:02x}:{:02x}", v >> 20, (v >> 12) & 0xff, (v >> 4) & 0xff);
}

}  // namespace firstfault
