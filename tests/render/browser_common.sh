# Sourced by the browser tests: arguments FIRSTFAULT SOURCE_DIR [OUT_DIR] into ff, src and out,
# Debian's chromium in $browser (exit 77, skip, without it) and fail().
ff=$1
src=$2
out=${3:-$(mktemp -d)}
mkdir -p "$out"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  echo "SKIP: no chromium on this machine (Debian package 'chromium'; .ci/install-deps installs it)"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
