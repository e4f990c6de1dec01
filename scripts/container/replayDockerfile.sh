#!/usr/bin/env bash
# Replays the Dockerfile without Docker: stages the build context as the build stage sees it
# (only what it COPYs, honouring .dockerignore), runs its npm steps there, stages the runtime
# layout (only what the runtime stage COPYs), checks it holds no dev dependency and that
# better-sqlite3 loads from it, then runs the image's ENTRYPOINT and CMD against the built-in
# simulator with the image's ENV (paths mapped to temporary directories), waits for events,
# probes readiness with the image's HEALTHCHECK command and stops it with SIGTERM.
#
#   scripts/container/replayDockerfile.sh [--no-probe] [--keep] [--context DIR]
#
#   --no-probe     skip the readiness probe (for a build without the health server)
#   --keep         keep the temporary directory (so does KEEP_TEMP=1)
#   --context DIR  the build context (default: this checkout)
#
# The Dockerfile's file lists come from the Dockerfile itself (stageDockerfile.ts); its RUN
# steps are replayed here: npm ci, npm run build, npm prune --omit=dev. Every step runs with a
# clean environment, as in a build, plus what this machine needs to reach the npm registry.
# Node headers: npm_package_config_node_gyp_nodedir if set, else the prefix of the running node (the image uses
# /usr/local). Exit codes: 0 the replay passed, 1 a step failed, 2 bad usage.
set -euo pipefail

usage() { sed -n '9,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

PROBE=1
KEEP=${KEEP_TEMP:-}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CONTEXT=$ROOT
while [ $# -gt 0 ]; do
  case $1 in
    --no-probe) PROBE= ;;
    --keep) KEEP=1 ;;
    --context) [ $# -ge 2 ] || usage; CONTEXT=$(cd "$2" && pwd); shift ;;
    -h|--help) usage ;;
    *) echo "replayDockerfile: unknown option $1" >&2; usage ;;
  esac
  shift
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/changefeed-replay.XXXXXX")
BUILD=$WORK/build APP=$WORK/app STATE=$WORK/state CONFIG=$WORK/config SECRETS=$WORK/secrets LOGS=$WORK/logs
mkdir -p "$STATE" "$CONFIG" "$SECRETS" "$LOGS"
SIM_PID='' DAEMON_PID='' EXIT_CODE=''

NODEDIR=${npm_package_config_node_gyp_nodedir:-$(node -p 'require("path").resolve(process.execPath, "../..")')}

# A build sees only the Dockerfile's ENV; keep what this machine needs to reach the registry.
HOST_ENV=()
for name in PATH HOME TMPDIR LANG LC_ALL TZ NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR \
  HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy npm_config_registry npm_config_cache npm_config_userconfig; do
  if [ -n "${!name:-}" ]; then HOST_ENV+=("$name=${!name}"); fi
done

# --- steps, timings, cleanup ---------------------------------------------------------------
START_NS=$(date +%s%N) STEP_NS='' STEP_NAME=''
TIMINGS=()
secs() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf '%d.%d s' $((ms / 1000)) $(((ms % 1000) / 100)); }
finish_step() {
  [ -n "$STEP_NAME" ] || return 0
  TIMINGS+=("$(secs "$STEP_NS")  $STEP_NAME")
  echo "   done in $(secs "$STEP_NS")"
  STEP_NAME=
}
step() { finish_step; STEP_NAME=$1; STEP_NS=$(date +%s%N); echo "== $1"; }
fail() { echo "replayDockerfile: FAILED: $*" >&2; exit 1; }
log_tail() { echo "--- last lines of $1" >&2; tail -n "${2:-40}" "$1" >&2 || true; echo "---" >&2; }

# Waits up to $2 seconds for our child $1 to exit and sets EXIT_CODE; returns 1 on timeout.
wait_exit() {
  local pid=$1 deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.2
  done
  EXIT_CODE=0
  wait "$pid" || EXIT_CODE=$?
}

cleanup() {
  local rc=$?
  for pid in $DAEMON_PID $SIM_PID; do
    kill -TERM "$pid" 2>/dev/null || true
    wait_exit "$pid" 25 || kill -KILL "$pid" 2>/dev/null || true
  done
  if [ -n "$KEEP" ]; then echo "kept $WORK"; else rm -rf "$WORK"; fi
  exit "$rc"
}
trap cleanup EXIT

stage_dockerfile() { (cd "$ROOT" && node --import tsx scripts/container/stageDockerfile.ts "$@"); }
in_build() { (cd "$BUILD" && env -i "${HOST_ENV[@]}" npm_package_config_node_gyp_nodedir="$NODEDIR" "$@"); }

# --- build stage ---------------------------------------------------------------------------
echo "== replaying $CONTEXT/Dockerfile in $WORK (node $(node --version), Node headers from $NODEDIR)"
[ -f "$NODEDIR/include/node/node_api.h" ] \
  || fail "no Node headers under $NODEDIR/include/node; set npm_package_config_node_gyp_nodedir to the prefix that has them"

step "build stage: copy the build context (.dockerignore honoured)"
stage_dockerfile context "$CONTEXT" "$BUILD"
(cd "$BUILD" && find . -maxdepth 1 -mindepth 1 | sort | sed 's|^\./|   |')

step "build stage: npm ci (better-sqlite3 from source)"
in_build npm ci --no-audit --no-fund >"$LOGS/npm-ci.log" 2>&1 || { log_tail "$LOGS/npm-ci.log" 60; fail "npm ci"; }
tail -n 3 "$LOGS/npm-ci.log" | sed 's/^/   /'

step "build stage: npm run build"
in_build npm run build >"$LOGS/build.log" 2>&1 || { log_tail "$LOGS/build.log" 60; fail "npm run build"; }

step "build stage: npm prune --omit=dev"
in_build npm prune --omit=dev >"$LOGS/prune.log" 2>&1 || { log_tail "$LOGS/prune.log"; fail "npm prune --omit=dev"; }
tail -n 1 "$LOGS/prune.log" | sed 's/^/   /'

# --- runtime stage -------------------------------------------------------------------------
step "runtime stage: copy from the build stage"
stage_dockerfile runtime "$CONTEXT" "$BUILD" "$APP"
# The runtime stage has nothing of the build stage but what it copied.
[ -n "$KEEP" ] || rm -rf "$BUILD"
layout=$(find "$APP" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' ')
echo "   $APP: $layout($(du -sh "$APP" | cut -f1))"
[ "$layout" = "bin dist node_modules package.json " ] || fail "the runtime holds $layout, expected bin dist node_modules package.json"

step "runtime stage: no dev dependencies, better-sqlite3 loads"
# Dev-only: flagged "dev" in the lockfile, i.e. reachable only through devDependencies (a dev
# dependency that a production one also needs, such as @types/node for mqtt, is not).
# shellcheck disable=SC2016 # JavaScript, not shell, in single quotes
present=$(cd "$APP" && node -e '
  const fs = require("fs");
  const dev = Object.entries(require(process.argv[1]).packages).filter(([, e]) => e.dev).map(([p]) => p);
  const named = ["vitest", "typescript", "tsx", "eslint"].map((n) => "node_modules/" + n);
  const found = [...new Set([...dev, ...named])].filter((p) => fs.existsSync(p));
  process.stdout.write(found.join(" ") || `none of ${dev.length} dev-only packages (vitest, typescript, tsx, eslint...)`);
  process.exitCode = found.length > 0 ? 1 : 0;' "$CONTEXT/package-lock.json") || fail "dev dependencies in the runtime: $present"
echo "   $present"
# shellcheck disable=SC2016
(cd "$APP" && env -i "${HOST_ENV[@]}" NODE_ENV=production node -e '
  const path = require("path");
  const Database = require("better-sqlite3");
  const db = new Database(":memory:");
  const { v } = db.prepare("select sqlite_version() as v").get();
  const addon = Object.keys(require.cache).find((f) => f.endsWith("better_sqlite3.node"));
  const inside = addon !== undefined && addon.startsWith(path.join(process.cwd(), "node_modules") + path.sep);
  console.log(`   better-sqlite3 ${require("better-sqlite3/package.json").version}, SQLite ${v}, addon ${addon}`);
  process.exit(inside ? 0 : 1);') || fail "better_sqlite3.node did not load from $APP/node_modules"

# --- run the image's command ---------------------------------------------------------------
mapfile -d '' -t IMAGE_ENV < <(stage_dockerfile env "$CONTEXT")
[ ${#IMAGE_ENV[@]} -gt 0 ] || fail "could not read the runtime stage's ENV"
stage_dockerfile command "$CONTEXT" "$APP" >"$WORK/command"
mapfile -d '' -t COMMAND <"$WORK/command"
stage_dockerfile healthcheck "$CONTEXT" >"$WORK/healthcheck"
mapfile -d '' -t HEALTHCHECK <"$WORK/healthcheck"

step "simulator: $APP/bin/changefeed.js simulate"
(cd "$APP" && exec env -i "${HOST_ENV[@]}" node bin/changefeed.js simulate --port 0 --seed 7 --careers 3 --skills 2 \
  --events-per-hour 3600 --reads-per-hour 1000000 >"$LOGS/simulator.out" 2>"$LOGS/simulator.log") &
SIM_PID=$!
for _ in $(seq 100); do
  grep -q '^CHANGEFEED_API_KEY=' "$LOGS/simulator.out" 2>/dev/null && break
  kill -0 "$SIM_PID" 2>/dev/null || { log_tail "$LOGS/simulator.log"; fail "the simulator exited"; }
  sleep 0.2
done
SIM_URL=$(sed -n 's/^CHANGEFEED_BASE_URL=//p' "$LOGS/simulator.out")
[ -n "$SIM_URL" ] || { log_tail "$LOGS/simulator.log"; fail "the simulator printed no URL within 20 s"; }
# The key goes to a file, as a secret mount would (api.apiKeyFile); it is never printed.
sed -n 's/^CHANGEFEED_API_KEY=//p' "$LOGS/simulator.out" >"$SECRETS/api-key"
echo "   $(head -n 1 "$LOGS/simulator.out")"

HTTP_PORT=$(node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });')
cat >"$CONFIG/changefeed.yaml" <<EOF
# Written by replayDockerfile.sh: the staged image against the built-in simulator.
api:
  baseUrl: $SIM_URL
  apiKeyFile: $SECRETS/api-key
  timeoutMs: 5000
watch:
  careers: { discover: true }
  skills: { discover: true }
  startFrom: "$(date -u -d '-1 hour' +%Y-%m-%dT%H:%M:%SZ)"
  pollIntervalSeconds: 1
  schedule: { firstPollWithinSeconds: 0 }
budget:
  readsPerHour: 3600000
  reserve: 0
sinks:
  - name: events-file
    type: file
    path: $STATE/events.jsonl
log:
  level: info
EOF

step "daemon: ${COMMAND[*]} (image ENV; /config, /state and port $HTTP_PORT mapped)"
(cd "$APP" && exec env -i "${HOST_ENV[@]}" "${IMAGE_ENV[@]}" CHANGEFEED_CONFIG="$CONFIG/changefeed.yaml" \
  CHANGEFEED_STATE_DIR="$STATE" CHANGEFEED_HTTP_HOST=127.0.0.1 CHANGEFEED_HTTP_PORT="$HTTP_PORT" \
  "${COMMAND[@]}" >"$LOGS/daemon.out" 2>"$LOGS/daemon.log") &
DAEMON_PID=$!

if [ -n "$PROBE" ]; then
  step "probe: the image's HEALTHCHECK (GET /readyz on 127.0.0.1:$HTTP_PORT)"
  ready=
  for _ in $(seq 60); do
    if env -i "${HOST_ENV[@]}" CHANGEFEED_HTTP_PORT="$HTTP_PORT" "${HEALTHCHECK[@]}"; then ready=1; break; fi
    kill -0 "$DAEMON_PID" 2>/dev/null || break
    sleep 1
  done
  [ -n "$ready" ] || { log_tail "$LOGS/daemon.log"; fail "readiness (/readyz on port $HTTP_PORT) did not answer 200 within 60 s"; }
  node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$HTTP_PORT/healthz" \
    || { log_tail "$LOGS/daemon.log"; fail "liveness (/healthz on port $HTTP_PORT) did not answer 200"; }
  echo "   /readyz and /healthz answered 200"
else
  finish_step
  echo "== probe skipped (--no-probe)"
fi

# First polls are immediate here (schedule.firstPollWithinSeconds: 0); the wait allows for a slow machine.
step "delivery: the first events reach the file sink"
for _ in $(seq 600); do
  [ -s "$STATE/events.jsonl" ] && break
  kill -0 "$DAEMON_PID" 2>/dev/null || { log_tail "$LOGS/daemon.log"; fail "the daemon exited before delivering an event"; }
  sleep 0.2
done
[ -s "$STATE/events.jsonl" ] || { log_tail "$LOGS/daemon.log"; fail "no event reached the file sink within 120 s"; }
[ -f "$STATE/changefeed.sqlite" ] || fail "no store in CHANGEFEED_STATE_DIR ($STATE)"
echo "   first events delivered; store at \$CHANGEFEED_STATE_DIR/changefeed.sqlite"

step "stop: SIGTERM to the daemon, then the simulator"
kill -TERM "$DAEMON_PID"
wait_exit "$DAEMON_PID" 30 || { log_tail "$LOGS/daemon.log"; fail "the daemon did not exit within 30 s of SIGTERM"; }
DAEMON_PID=
[ "$EXIT_CODE" = 0 ] || { log_tail "$LOGS/daemon.log"; fail "the daemon exited $EXIT_CODE after SIGTERM, expected 0"; }
echo "   daemon exited 0 after SIGTERM; $(wc -l <"$STATE/events.jsonl") events in the file sink"
kill -TERM "$SIM_PID"
wait_exit "$SIM_PID" 10 || fail "the simulator did not exit within 10 s of SIGTERM"
SIM_PID=
[ "$EXIT_CODE" = 0 ] || { log_tail "$LOGS/simulator.log"; fail "the simulator exited $EXIT_CODE after SIGTERM, expected 0"; }
finish_step

echo "== timings"
printf '   %s\n' "${TIMINGS[@]}"
echo "replayDockerfile: PASSED in $(secs "$START_NS")$([ -n "$PROBE" ] || echo ' (readiness not probed)')"
