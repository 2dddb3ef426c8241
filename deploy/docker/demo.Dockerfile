# syntax=docker/dockerfile:1
# The demo: the order service (default command) and the traffic generator
# (src/traffic-cli.ts). Build context: the repository root.
#   docker build -f deploy/docker/demo.Dockerfile -t rpcscope/demo:0.1.0 .
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
RUN npm install -g pnpm@12.4.2
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY sidecar/package.json sidecar/
COPY demo/package.json demo/
COPY grafana-plugin/package.json grafana-plugin/
COPY test/package.json test/
COPY demo/proto demo/proto
COPY demo/src demo/src
RUN pnpm --filter @rpcscope/demo deploy --prod --frozen-lockfile /out \
 && rm -rf /out/test /out/pnpm-lock.yaml /out/pnpm-workspace.yaml

FROM ${NODE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app/demo
COPY --from=build --chown=0:0 /out ./
COPY --chown=0:0 deploy/docker/order-service.mts /app/deploy/docker/order-service.mts
USER 1000:1000
EXPOSE 8080
CMD ["node", "--import", "tsx", "/app/deploy/docker/order-service.mts"]
