// --glob and --exclude: ripgrep's glob semantics on the paths a walk or an archive finds.
#include <catch2/catch.hpp>

#include "firstfault/reader/path_filter.h"

using namespace firstfault;

namespace {
PathFilter filter(const std::vector<std::string>& globs, const std::vector<std::string>& excludes = {}) {
  Result<PathFilter> f = PathFilter::make(globs, excludes);
  REQUIRE(f.ok());
  return std::move(*f);
}
}  // namespace

TEST_CASE("path filter: a glob without '/' matches a name at any depth, one with '/' the whole path") {
  PathFilter logs = filter({"*.log"});
  CHECK(logs.wants_file("rank0.log"));
  CHECK(logs.wants_file("job-a/attempt_0/rank0.log"));
  CHECK_FALSE(logs.wants_file("rank0.log.gz"));
  CHECK_FALSE(logs.wants_file("model.safetensors"));
  CHECK(logs.wants_dir("checkpoints"));  // includes never prune a folder: logs deeper down are found
  PathFilter anchored = filter({"job-*/rank?.log"});
  CHECK(anchored.wants_file("job-a/rank1.log"));
  CHECK_FALSE(anchored.wants_file("x/job-a/rank1.log"));
  CHECK_FALSE(anchored.wants_file("job-a/rank12.log"));
  CHECK_FALSE(anchored.wants_file("job-a/b/rank1.log"));  // '*' and '?' stop at '/'
  CHECK(filter({"/rank0.log"}).wants_file("rank0.log"));
  CHECK_FALSE(filter({"/rank0.log"}).wants_file("a/rank0.log"));
}

TEST_CASE("path filter: **, classes, alternatives and escapes") {
  CHECK(filter({"**/attempt_*/**"}).wants_file("job/attempt_0/0/stdout.log"));
  CHECK_FALSE(filter({"**/attempt_*/**"}).wants_file("job/attempt_0"));
  CHECK(filter({"logs/**/*.out"}).wants_file("logs/a/b/x.out"));
  CHECK(filter({"logs/**/*.out"}).wants_file("logs/x.out"));
  CHECK(filter({"{rank,worker}*.{log,txt}"}).wants_file("w/worker3.txt"));
  CHECK_FALSE(filter({"{rank,worker}*.{log,txt}"}).wants_file("launcher.log"));
  CHECK(filter({"[!a]*.log"}).wants_file("b.log"));
  CHECK_FALSE(filter({"[!a]*.log"}).wants_file("a.log"));
  CHECK(filter({"rank[0-3].log"}).wants_file("rank2.log"));
  CHECK_FALSE(filter({"rank[0-3].log"}).wants_file("rank7.log"));
  CHECK(filter({"\\*.log"}).wants_file("*.log"));
  CHECK_FALSE(filter({"\\*.log"}).wants_file("a.log"));
  CHECK(filter({"a+b(1).log"}).wants_file("a+b(1).log"));  // regex characters are literal
}

TEST_CASE("path filter: excludes prune folders, win over includes, and '!GLOB' is one") {
  PathFilter f = filter({"*.log"}, {"checkpoints"});
  CHECK_FALSE(f.wants_dir("run/checkpoints"));
  CHECK_FALSE(f.wants_path("run/checkpoints/step-100/rank0.log"));
  CHECK(f.wants_path("run/logs/rank0.log"));
  CHECK_FALSE(filter({"*.log", "!rank1*"}).wants_file("rank1.log"));
  CHECK(filter({"*.log", "!rank1*"}).wants_file("rank2.log"));
  CHECK_FALSE(filter({}, {"*.log"}).wants_file("rank0.log"));
  PathFilter dir_only = filter({}, {"ckpt/"});  // a trailing '/' matches folders only
  CHECK_FALSE(dir_only.wants_dir("run/ckpt"));
  CHECK(dir_only.wants_file("run/ckpt"));
  CHECK_FALSE(filter({}).active());
  CHECK(filter({}, {"x"}).active());
  CHECK(filter({}).wants_path("anything/at/all"));
}

TEST_CASE("path filter: a glob that cannot be read is an error naming the option and the glob") {
  for (auto [globs, excludes, message] :
       {std::tuple<std::vector<std::string>, std::vector<std::string>, std::string>{{"rank[0-3.log"}, {}, "--glob 'rank[0-3.log': unclosed"},
        {{"{a,b"}, {}, "--glob '{a,b': unclosed '{'"},
        {{}, {"x\\"}, "--exclude 'x\\': a '\\' at the end"},
        {{"!"}, {}, "--glob '': empty glob"}}) {
    Result<PathFilter> f = PathFilter::make(globs, excludes);
    REQUIRE_FALSE(f.ok());
    CHECK(f.error().message.rfind(message, 0) == 0);
  }
}
