#include "firstfault/util/shared_text.h"

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

using namespace firstfault;

TEST_CASE("shared text: copies share one block, charged to the budget once, freed with the last holder") {
  SharedText empty;
  CHECK(empty.empty());
  CHECK(empty.charge_once() == 0);
  CHECK(SharedText(std::string_view()).empty());

  std::string line(300, 'x');
  SharedText a(line);
  CHECK(a == line);
  CHECK(a.size() == 300);
  SharedText b = a;  // a second event of the same line
  CHECK(b.view().data() == a.view().data());
  size_t first = a.charge_once();
  CHECK(first >= 300);
  CHECK(b.charge_once() == 0);  // the line is counted once, whoever holds it

  std::vector<SharedText> held(1000, a);  // a snapshot's copies
  held.clear();
  a = SharedText("one byte");
  CHECK(b == line);  // the other holder keeps the block alive
  SharedText moved = std::move(b);
  CHECK(moved == line);
  CHECK(b.empty());  // NOLINT: a moved-from holder is empty by contract
  moved = moved;     // self-assignment keeps the block
  CHECK(moved == line);
  CHECK(SharedText("z").str() == "z");  // a block smaller than its header still holds its byte
}
