# syntax=docker/dockerfile:1
# Grafana with the rpcscope panel plugin built from grafana-plugin/ and
# installed unsigned (allowed by name in docker-compose.yml). Build context:
# the repository root.
ARG NODE_IMAGE=node:24.21.0-bookworm-slim
ARG GRAFANA_IMAGE=grafana/grafana:13.2.3

FROM ${NODE_IMAGE} AS plugin
WORKDIR /src
RUN npm install -g pnpm@12.4.2
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
COPY sidecar/package.json sidecar/
COPY demo/package.json demo/
COPY grafana-plugin/package.json grafana-plugin/
COPY test/package.json test/
RUN pnpm install --frozen-lockfile --filter rpcscope-protocolcompare-panel...
COPY LICENSE ./
COPY grafana-plugin grafana-plugin
RUN pnpm --filter rpcscope-protocolcompare-panel run build

FROM ${GRAFANA_IMAGE}
COPY --from=plugin /src/grafana-plugin/dist /var/lib/grafana/plugins/rpcscope-protocolcompare-panel
