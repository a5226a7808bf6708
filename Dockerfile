# syntax=docker/dockerfile:1
#
# Portico image: one compiled Bun executable on distroless. Build from the repository root:
#
#   docker build --build-arg PORTICO_BUILD_COMMIT="$(git rev-parse --short HEAD)" -t portico:dev .
#
# Base images are pinned by tag. For reproducible builds also pin them by digest
# (`oven/bun:1.4.5@sha256:<digest>`, `gcr.io/distroless/cc-debian12:nonroot@sha256:<digest>`):
# the digests could not be fetched where this file was written, so take them from
# `docker buildx imagetools inspect <image>` and let a bot (Renovate, Dependabot) keep them fresh.

# ---- build: the official Bun image, same version as CI (.ci/run) ----
FROM oven/bun:1.4.5 AS build
WORKDIR /src
# Dependencies first so this layer is cached until the lockfile changes.
COPY package.json bun.lock ./
RUN ["bun", "install", "--frozen-lockfile"]
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
# The demo's manifests are compiled into the executable (`portico demo`).
COPY k8s/examples/demo ./k8s/examples/demo
# .git is not in the build context (.dockerignore): the commit comes in as a build argument.
# scripts/build.ts validates it (hex only) and falls back to "unknown".
ARG PORTICO_BUILD_COMMIT=unknown
RUN ["bun", "run", "build"]

# ---- run: distroless cc = glibc + libstdc++ + CA certificates + /etc/passwd with nonroot,
# and no shell or package manager. The compiled binary links glibc (so not distroless/static)
# and reads /proc, which the container runtime mounts (DESIGN §5).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /src/dist/portico /portico
# 65532 is "nonroot" in distroless. Numeric so that Kubernetes' runAsNonRoot can verify it
# (the kubelet refuses a non-numeric USER it cannot resolve when runAsUser is not set).
USER 65532:65532
# http, https, admin (/healthz /readyz /metrics /debug/routes): the defaults of --http-port,
# --https-port and --admin-port (DESIGN §3). Ports above 1024, so no NET_BIND_SERVICE needed.
EXPOSE 8080 8443 10254
ENTRYPOINT ["/portico"]
