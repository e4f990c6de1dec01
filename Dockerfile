# skills-changefeed as a container, for running beside the integration that consumes its events
# (docs/operations.md#container). Two stages: `build` compiles better-sqlite3 and the TypeScript,
# the runtime stage holds only production node_modules, dist/, bin/ and package.json.
#
#   docker build -t skills-changefeed .
#
# Pinned by tag; pass --build-arg NODE_IMAGE=node:20-bookworm-slim@sha256:... to pin a digest.
# Behind a TLS-inspecting proxy, hand npm the proxy's CA bundle as a build secret (it reaches no
# layer and not the image's environment):
#
#   docker build --secret id=npm_ca,src=/etc/ssl/certs/ca-certificates.crt -t skills-changefeed .
#
# CI builds it with podman and smoke-tests the image: scripts/container/build-and-smoke.sh.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
# better-sqlite3 is built from source (.prebuild-installrc): node-gyp needs these.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# node-gyp takes the Node headers from here instead of downloading them (nodejs.org may be out of
# reach); the official image keeps them under /usr/local. Node 20's npm 10 bundles node-gyp 10.1,
# which reads only npm_config_nodedir; later ones also read npm_package_config_node_gyp_nodedir,
# the name that keeps npm 11 from warning about an unknown config.
ENV npm_config_nodedir=/usr/local \
    npm_package_config_node_gyp_nodedir=/usr/local
COPY package.json package-lock.json .npmrc .prebuild-installrc ./
RUN --mount=type=secret,id=npm_ca \
    if [ -s /run/secrets/npm_ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm_ca; fi \
 && npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bin ./bin
COPY assets ./assets
RUN npm run build \
 && npm prune --omit=dev
# better-sqlite3 needs only its addon at run time: the compiler's leftovers (object files,
# sqlite3.a, the SQLite sources under deps/, a test extension) would add ~25 MB to the image.
RUN cd node_modules/better-sqlite3 \
 && mv build/Release/better_sqlite3.node . \
 && rm -rf build deps src binding.gyp \
 && mkdir -p build/Release \
 && mv better_sqlite3.node build/Release/ \
 && cd /app \
 && node -e "require('better-sqlite3')(':memory:').close()"

FROM ${NODE_IMAGE} AS runtime
# package.json's version, written here too so a plain `docker build` labels the image right;
# test/deploy/imageVersionLabel.test.ts keeps the two equal.
LABEL org.opencontainers.image.title="skills-changefeed" \
      org.opencontainers.image.version="1.0.0"
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
COPY --from=build /app/assets ./assets
# chown before VOLUME: a new named volume starts with the ownership of the image's directory.
RUN mkdir -p /state /config \
 && chown node:node /state
VOLUME /state
USER node
EXPOSE 9464
# Liveness, not readiness: ECS, Swarm and `--restart` policies with autoheal replace an
# "unhealthy" container, and a restart fixes neither a sink that is down nor a revoked key
# (/readyz fails for both). /healthz fails only when the daemon's loops have stopped.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.CHANGEFEED_HTTP_PORT || 9464) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# No init process: node is PID 1 and the daemon handles SIGTERM and SIGINT itself (the first
# drains and exits 0, a second or its 20 s shutdown timeout exits 1), so `docker stop` with its
# default 10 s grace may cut a long drain short: use `docker stop -t 30`.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "/app/bin/changefeed.js"]
CMD ["run"]
