# syntax=docker/dockerfile:1
# The rpcscope sidecar. Build context: the repository root.
#   docker build -f deploy/docker/sidecar.Dockerfile -t rpcscope/sidecar:0.1.0 .
ARG NODE_IMAGE=node:20-bookworm-slim

# Resolve the sidecar's production dependencies from the committed lockfile
# into a self-contained folder (pnpm deploy), with nothing else of the
# workspace in it.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
RUN npm install -g pnpm@12.4.2
# Every workspace package's manifest, so the frozen lockfile matches the workspace.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY sidecar/package.json sidecar/
COPY demo/package.json demo/
COPY grafana-plugin/package.json grafana-plugin/
COPY test/package.json test/
COPY sidecar/bin sidecar/bin
COPY sidecar/src sidecar/src
RUN pnpm --filter @rpcscope/sidecar deploy --prod --frozen-lockfile /out \
 && rm -rf /out/test /out/pnpm-lock.yaml /out/pnpm-workspace.yaml

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app/sidecar
COPY --from=build --chown=0:0 /out ./
# The node user of the base image, by number so that Kubernetes can check
# runAsNonRoot; the root filesystem can stay read-only (tsx caches under /tmp).
USER 1000:1000
EXPOSE 15001 15090
ENTRYPOINT ["/app/sidecar/bin/rpcscope"]
CMD ["--help"]
