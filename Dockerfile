# firstfault as a container image: `docker build -t firstfault .` then
#   docker run --rm -v "$PWD/logs:/logs:ro" firstfault /logs
# The build stage makes the static binary (preset `static`: every library linked in, glibc too);
# the final image is distroless/static (no libc: CA certificates and time zones, about 32 MB).
FROM debian:12 AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      cmake ninja-build g++ pkg-config libcli11-dev libre2-dev nlohmann-json3-dev libfmt-dev libspdlog-dev \
      libyaml-cpp-dev libarchive-dev libzstd-dev liblz4-dev libacl1-dev libhyperscan-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN rm -rf build* && cmake --preset static && cmake --build --preset static \
    && build-static/firstfault testdata/kb/cuda-oom.log > /dev/null

FROM gcr.io/distroless/static-debian12
COPY --from=build /src/build-static/firstfault /usr/bin/firstfault
COPY --from=build /src/build-static/share/firstfault.1 /usr/share/man/man1/firstfault.1
ENTRYPOINT ["/usr/bin/firstfault"]
CMD ["--help"]
