// The digit template of a line (TemplateScanner's cache key) and the bytes noted in the same
// pass, against a byte-by-byte reference, on lines of every length around the 16- and 32-byte
// chunks, for every variant this CPU runs.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "firstfault/matcher/template_scanner.h"

using namespace firstfault;

TEST_CASE("template scanner: digit templates and ESC/NUL/CR notes match a byte-by-byte reference") {
  std::mt19937 rng(7);
  // Tabs and other control bytes sit next to ESC/NUL/CR in the AVX2 variant's check (one
  // compare for every byte below 0x20), and must not be noted as either.
  const std::string alphabet =
      std::string("0123456789az :/.[]") + '\x1b' + '\0' + '\r' + '\xff' + '\x2f' + '\x3a' + '\t' + '\x01' + '\x1f' + '\x20';
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  for (const DigitTemplateVariant& variant : digit_template_variants()) {
    INFO("variant " << variant.name);
    auto digit_template = variant.fn;
    for (size_t len = 0; len <= 70; ++len) {
      for (int trial = 0; trial < 40; ++trial) {
        std::string line;
        for (size_t i = 0; i < len; ++i) line += alphabet[pick(rng)];
        std::string expect = line;
        bool special = false, cr = false;
        for (char& c : expect) {
          if (c >= '0' && c <= '9') c = '0';
          special = special || c == '\x1b' || c == '\0';
          cr = cr || c == '\r';
        }
        std::string out(len, '?');
        LineHints seen;
        uint64_t h = digit_template(line, out.data(), &seen);
        INFO("length " << len);
        CHECK(out == expect);
        CHECK(seen.may_have_escapes == special);
        CHECK(seen.may_have_cr == cr);
        std::string appended;
        append_digit_template(line, appended);
        CHECK(appended == expect);
        // Lines with one template hash alike; changing a non-digit byte changes the template.
        std::string shifted = line;
        for (char& c : shifted)
          if (c >= '0' && c <= '9') c = static_cast<char>('0' + (c - '0' + 3) % 10);
        std::string out2(len, '?');
        CHECK(digit_template(shifted, out2.data(), nullptr) == h);
      }
    }
    std::string a(40, 'x'), b = a, ta(40, ' '), tb(40, ' ');
    b[17] = 'y';
    CHECK(digit_template(a, ta.data(), nullptr) != digit_template(b, tb.data(), nullptr));
  }
  CHECK(digit_template_variants().size() >= 2);  // SWAR and at least the CPU's own
}
