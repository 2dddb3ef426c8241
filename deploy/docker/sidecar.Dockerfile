# syntax=docker/dockerfile:1
# The rpcscope sidecar. Build context: the repository root.
#   docker build -f deploy/docker/sidecar.Dockerfile -t rpcscope/sidecar:0.1.0 .
# Node 24 (LTS), the Node rpcscope supports (package.json engines: >=24).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

# Build the bundle (sidecar/build.mjs: esbuild) from the committed lockfile.
# Only dist/ leaves this stage: no TypeScript, no esbuild binary, no node_modules.
FROM ${NODE_IMAGE} AS build
WORKDIR /src
RUN npm install -g pnpm@12.4.2
# Every workspace package's manifest, so the frozen lockfile matches the workspace.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY sidecar/package.json sidecar/
COPY demo/package.json demo/
COPY grafana-plugin/package.json grafana-plugin/
COPY test/package.json test/
COPY sidecar/build.mjs sidecar/
COPY sidecar/src sidecar/src
RUN pnpm install --frozen-lockfile --filter @rpcscope/sidecar \
 && node sidecar/build.mjs

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app/sidecar
COPY --from=build --chown=0:0 /src/sidecar/dist dist
COPY --chown=0:0 sidecar/bin/rpcscope bin/rpcscope
# The node user of the base image, by number so that Kubernetes can check
# runAsNonRoot. Nothing is written at run time: the root filesystem can be read-only.
USER 1000:1000
EXPOSE 14001 14090
# The admin port's readiness (the default --admin port); slim has no curl, Node has fetch.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:14090/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/app/sidecar/bin/rpcscope"]
CMD ["--help"]
