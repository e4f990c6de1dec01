# skills-changefeed as a container, for running beside the integration that consumes its events
# (docs/operations.md#container). Two stages: `build` compiles better-sqlite3 and the TypeScript,
# the runtime stage holds only production node_modules, dist/, bin/ and package.json.
#
#   docker build -t skills-changefeed .
#
# Pinned by tag; pass --build-arg NODE_IMAGE=node:20-bookworm-slim@sha256:... to pin a digest.
# test/container/dockerfile.test.ts checks this file; scripts/container/replayDockerfile.sh
# replays its steps without Docker.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 is built from source (.prebuild-installrc): node-gyp needs these.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# node-gyp takes the Node headers from here instead of downloading them; the official image keeps
# them under /usr/local. (An npm_config_ variable would make npm 11 warn about an unknown config.)
ENV npm_package_config_node_gyp_nodedir=/usr/local
COPY package.json package-lock.json .npmrc .prebuild-installrc ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
RUN npm run build \
 && npm prune --omit=dev

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    CHANGEFEED_CONFIG=/config/changefeed.yaml \
    CHANGEFEED_STATE_DIR=/state \
    CHANGEFEED_HTTP_HOST=0.0.0.0 \
    CHANGEFEED_HTTP_PORT=9464
WORKDIR /app
# Owned by root and so read-only for the daemon; only /state is its to write.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/bin ./bin
# chown before VOLUME: a new named volume starts with the ownership of the image's directory.
RUN mkdir -p /state /config \
 && chown node:node /state
VOLUME /state
USER node
EXPOSE 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CHANGEFEED_HTTP_PORT || 9464) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# No init process: node is PID 1 and the daemon handles SIGTERM and SIGINT itself (the first
# drains and exits 0, a second or its 20 s shutdown timeout exits 1), so `docker stop` with its
# default 10 s grace may cut a long drain short: use `docker stop -t 30`.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/changefeed.js"]
CMD ["run"]
