#!/usr/bin/env bash
# Builds the Dockerfile with podman and smoke-tests the image against the built-in simulator:
# metadata, contents, non-root, HEALTHCHECK on /healthz (passing, and still passing with a wrong
# key while /readyz fails), /healthz /readyz /metrics, events in the /state volume, SIGTERM exit 0,
# and a second container with a read-only root on the same volume that resumes with nothing
# missing and nothing twice.
# One PASS or FAIL line per check; exits 1 if any check failed. Called by .ci/run after npm test.
#
#   scripts/container/build-and-smoke.sh [--no-setup]
#
#   --no-setup   do not install or configure podman (scripts/container/setup-podman.sh)
#
# Environment: IMAGE (default localhost/skills-changefeed:ci), NODE_IMAGE (the base, default
# docker.io/library/node:20-bookworm-slim: built locally by make-node-base.sh when absent, since no
# image registry may be reachable), HOST_CA (a CA bundle handed to npm in the build as the secret
# npm_ca, default /etc/ssl/certs/ca-certificates.crt when present). Needs root, and node_modules
# of this checkout (npm ci): the simulator runs on the host, from the sources.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SETUP=1
case ${1:-} in
  --no-setup) SETUP= ;;
  '') ;;
  *) sed -n '8,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

IMAGE=${IMAGE:-localhost/skills-changefeed:ci}
NODE_IMAGE=${NODE_IMAGE:-docker.io/library/node:20-bookworm-slim}
HOST_CA=${HOST_CA:-/etc/ssl/certs/ca-certificates.crt}
NAME=changefeed-smoke-$$
WORK=$(mktemp -d "${TMPDIR:-/tmp}/changefeed-smoke.XXXXXX")
chmod 0755 "$WORK"
SIM_PID=''
PASSED=0 FAILED=0
TIMINGS=()
START_NS=$(date +%s%N)

secs() { local ms=$((($(date +%s%N) - $1) / 1000000)); printf '%d.%d s' $((ms / 1000)) $(((ms % 1000) / 100)); }
timed() { TIMINGS+=("$(secs "$1")  $2"); }
pass() { PASSED=$((PASSED + 1)); echo "PASS  $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL  $*"; }
# A check that cannot go on without: report it and stop here (the summary still prints).
fatal() { fail "$*"; exit 1; }
logs_of() { echo "--- last lines of $1's log"; podman logs --tail 30 "$1" 2>&1 | sed 's/^/    /'; echo '---'; }

summary() {
  local rc=$?
  set +e
  for c in "$NAME-a" "$NAME-b" "$NAME-c"; do podman rm -f -t 0 "$c" >/dev/null 2>&1; done
  podman volume rm -f "$NAME-state" "$NAME-wrong" >/dev/null 2>&1
  if [ -n "$SIM_PID" ]; then kill -TERM "$SIM_PID" 2>/dev/null && wait "$SIM_PID" 2>/dev/null; fi
  rm -rf "$WORK"
  echo "== timings"
  printf '   %s\n' "${TIMINGS[@]}"
  echo "   $(secs "$START_NS")  in all"
  if [ "$FAILED" -gt 0 ] || [ "$rc" -ne 0 ]; then
    echo "container smoke test: FAILED ($PASSED checks passed, $FAILED failed)"
    exit 1
  fi
  echo "container smoke test: PASSED (all $PASSED checks)"
}
trap summary EXIT

free_port() { node -e 'const s = require("net").createServer(); s.listen(0, "127.0.0.1", () => { process.stdout.write(String(s.address().port)); s.close(); });'; }
# GET http://127.0.0.1:PORT/PATH; prints the status and the first bytes of the body.
http_get() { node -e 'fetch(process.argv[1]).then(async (r) => console.log(r.status, (await r.text()).slice(0, +process.argv[2] || 200).replace(/\n/g, " ")), (e) => { console.log(0, e.message); })' "http://127.0.0.1:$1$2" "${3:-}"; }
# Polls `cmd...` every 0.5 s for up to $1 seconds; returns 1 on timeout.
poll() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.5
  done
}
healthy() { podman healthcheck run "$1"; }
# The image's HEALTHCHECK is liveness (/healthz): readiness is polled on its own.
ready() { http_get "$1" /readyz 20 | grep -q '^200 '; }
running() { [ "$(podman inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" = true ]; }
events_in() { local f=$1/events.jsonl; [ -f "$f" ] && wc -l <"$f" || echo 0; }
has_events() { [ "$(events_in "$1")" -gt "${2:-0}" ]; }

# --- podman and the base image --------------------------------------------------------------
if [ -n "$SETUP" ]; then
  t=$(date +%s%N)
  bash scripts/container/setup-podman.sh
  timed "$t" "podman setup"
fi
if ! podman image exists "$NODE_IMAGE"; then
  t=$(date +%s%N)
  echo "== $NODE_IMAGE is not here: building a local stand-in (make-node-base.sh)"
  TAG=$NODE_IMAGE bash scripts/container/make-node-base.sh
  timed "$t" "stand-in base image"
fi

# --- build ------------------------------------------------------------------------------------
BUILD_ARGS=(--format docker --pull=never --network=host --build-arg "NODE_IMAGE=$NODE_IMAGE" -t "$IMAGE")
# --format docker: the OCI format has no HEALTHCHECK and podman drops it without a word.
[ -s "$HOST_CA" ] && BUILD_ARGS+=(--secret "id=npm_ca,src=$HOST_CA")
echo "== podman build ${BUILD_ARGS[*]} ."
t=$(date +%s%N)
if podman build "${BUILD_ARGS[@]}" . >"$WORK/build.log" 2>&1; then
  timed "$t" "podman build"
  size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
  base_size=$(podman image inspect --format '{{.Size}}' "$NODE_IMAGE")
  pass "image builds in $(secs "$t"): $((size / 1000000)) MB, of which the project's layers $(((size - base_size) / 1000000)) MB"
else
  tail -n 40 "$WORK/build.log" | sed 's/^/    /'
  timed "$t" "podman build (failed)"
  fatal "image builds"
fi

# --- metadata ---------------------------------------------------------------------------------
# shellcheck disable=SC2016 # JavaScript in single quotes
podman image inspect "$IMAGE" | node -e '
  const image = JSON.parse(require("fs").readFileSync(0, "utf8"))[0];
  const c = { ...image.Config, Healthcheck: image.Config.Healthcheck ?? image.Healthcheck };
  const env = Object.fromEntries((c.Env ?? []).map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
  const test = (c.Healthcheck?.Test ?? []).join(" ");
  const checks = [
    ["runs as the node user", c.User === "node", `User ${c.User}`],
    ["HEALTHCHECK probes /healthz (liveness)", test.includes("/healthz") && !test.includes("/readyz") && c.Healthcheck.Interval > 0, test.slice(0, 60)],
    ["stop signal SIGTERM", c.StopSignal === "SIGTERM", `StopSignal ${c.StopSignal}`],
    ["labelled with the version of package.json", (c.Labels ?? {})["org.opencontainers.image.version"] === require("./package.json").version,
      `org.opencontainers.image.version ${(c.Labels ?? {})["org.opencontainers.image.version"]}`],
    ["/state is a volume", Object.keys(c.Volumes ?? {}).join() === "/state", `Volumes ${Object.keys(c.Volumes ?? {})}`],
    ["exposes 9464/tcp", Object.keys(c.ExposedPorts ?? {}).join() === "9464/tcp", `ExposedPorts ${Object.keys(c.ExposedPorts ?? {})}`],
    ["entrypoint node /app/bin/changefeed.js run", JSON.stringify([...c.Entrypoint, ...c.Cmd]) === JSON.stringify(["node", "/app/bin/changefeed.js", "run"]), [...c.Entrypoint, ...c.Cmd].join(" ")],
    ["environment: production, /config, /state, port 9464, no build-time CA",
      env.NODE_ENV === "production" && env.CHANGEFEED_CONFIG === "/config/changefeed.yaml" && env.CHANGEFEED_STATE_DIR === "/state" &&
        env.CHANGEFEED_HTTP_PORT === "9464" && !("NODE_EXTRA_CA_CERTS" in env) && !Object.keys(env).some((k) => k.startsWith("npm_")),
      Object.keys(env).join(" ")],
  ];
  for (const [name, ok, detail] of checks) console.log(`${ok ? "PASS" : "FAIL"}  image metadata: ${name} (${detail})`);
' >"$WORK/metadata" || true
cat "$WORK/metadata"
PASSED=$((PASSED + $(grep -c '^PASS' "$WORK/metadata" || true)))
FAILED=$((FAILED + $(grep -c '^FAIL' "$WORK/metadata" || true)))
[ -s "$WORK/metadata" ] || fail "image metadata could not be read"

# --- contents ---------------------------------------------------------------------------------
# Dev-only: flagged "dev" in the lockfile, i.e. reachable only through devDependencies (a dev
# dependency that a production one also needs, such as @types/node for mqtt, is not).
node -e 'console.log(Object.entries(require(process.argv[1]).packages).filter(([, e]) => e.dev).map(([p]) => p).join("\n"))' \
  "$ROOT/package-lock.json" >"$WORK/dev-packages"
chmod 0644 "$WORK/dev-packages"
inside() { podman run --rm --network=none --no-healthcheck --entrypoint sh -v "$WORK/dev-packages:/tmp/dev-packages:ro" "$IMAGE" -c "$1"; }
top=$(inside 'ls -A /app | tr "\n" " "')
[ "$top" = "assets bin dist node_modules package.json " ] && pass "/app holds assets (the console's files) bin dist node_modules package.json only" || fail "/app holds $top"
dev_left=$(inside 'cd /app && while read -r p; do [ -e "$p" ] && echo "$p"; done </tmp/dev-packages; true' | tr '\n' ' ')
dev_count=$(wc -l <"$WORK/dev-packages")
[ -z "$dev_left" ] && pass "none of the lockfile's $dev_count dev-only packages is in /app" || fail "dev-only packages in /app: $dev_left"
sources=$(inside 'find /app -path /app/node_modules -prune -o \( -name "*.ts" -o -name "tsconfig*.json" \) -print | head -5 | tr "\n" " "')
[ -z "$sources" ] && pass "no TypeScript sources or tsconfig in /app" || fail "sources in /app: $sources"
leftovers=$(inside 'cd /app/node_modules/better-sqlite3 && ls -d deps src build/Release/obj build/Release/obj.target build/Release/sqlite3.a build/Release/test_extension.node 2>/dev/null | tr "\n" " "; true')
bsq_size=$(inside 'du -sk /app/node_modules/better-sqlite3 | cut -f1')
[ -z "$leftovers" ] && pass "no better-sqlite3 build leftovers (better-sqlite3 is ${bsq_size} kB)" || fail "better-sqlite3 build leftovers in /app: $leftovers"
# shellcheck disable=SC2016
loads=$(podman run --rm --network=none --no-healthcheck --entrypoint node -w /app "$IMAGE" -e '
  const db = require("better-sqlite3")(":memory:");
  console.log(`SQLite ${db.prepare("select sqlite_version() as v").get().v}`);') \
  && pass "better-sqlite3's addon loads in the image ($loads)" || fail "better-sqlite3 does not load: $loads"

# --- the simulator, a config, a volume --------------------------------------------------------
mkdir -p "$WORK/sim" "$WORK/config"
chmod 0755 "$WORK/sim" "$WORK/config"
node --import tsx scripts/container/smokeSimulator.ts serve "$WORK/sim" >"$WORK/simulator.log" 2>&1 &
SIM_PID=$!
poll 30 test -s "$WORK/sim/url" || { cat "$WORK/simulator.log"; fatal "the simulator started on the host"; }
SIM_URL=$(cat "$WORK/sim/url")
echo "== simulator at $SIM_URL (pid $SIM_PID)"
printf 'sim_live_%s\n' "$(printf 'W%.0s' $(seq 32))" >"$WORK/wrong-key"
chmod 0644 "$WORK/wrong-key"
cat >"$WORK/config/changefeed.yaml" <<EOF
# Written by build-and-smoke.sh: the image against the simulator on the host (--network=host).
api:
  baseUrl: $SIM_URL
  apiKeyFile: /run/secrets/api-key
  timeoutMs: 5000
watch:
  careers: { discover: true }
  skills: { discover: true }
  startFrom: "$(date -u -d '-2 hour' +%Y-%m-%dT%H:%M:%SZ)"
  pollIntervalSeconds: 1
  schedule: { firstPollWithinSeconds: 0 }
budget: { readsPerHour: 3600000, reserve: 0 }
sinks:
  - { name: events-file, type: file, path: /state/events.jsonl }
log: { level: info }
EOF
chmod 0644 "$WORK/config/changefeed.yaml"
podman volume create "$NAME-state" >/dev/null
STATE=$(podman volume inspect --format '{{.Mountpoint}}' "$NAME-state")

# NAME PORT KEY_FILE VOLUME [podman run options...]: the daemon on the host's network, HTTP on
# loopback. Without systemd podman cannot schedule the image's HEALTHCHECK (and says so on every
# command): no timer, the script runs `podman healthcheck run` itself.
start_daemon() {
  local name=$1 port=$2 key=$3 volume=$4
  shift 4
  podman run -d --name "$name" --network=host --health-interval=disable "$@" \
    -e CHANGEFEED_HTTP_HOST=127.0.0.1 -e "CHANGEFEED_HTTP_PORT=$port" \
    -v "$volume:/state" -v "$WORK/config:/config:ro" -v "$key:/run/secrets/api-key:ro" \
    "$IMAGE" >/dev/null 2> >(without_systemd_noise >&2)
}
# Podman 4.3 still tries systemd for the health check timer, and logs that it cannot, on run and rm.
without_systemd_noise() { grep -v 'unable to get systemd connection' || true; }

# --- first container --------------------------------------------------------------------------
PORT=$(free_port)
t=$(date +%s%N)
start_daemon "$NAME-a" "$PORT" "$WORK/sim/api-key" "$NAME-state" || fatal "the daemon container starts"
uid=$(podman exec "$NAME-a" awk '/^Uid:/ { print $2 }' /proc/1/status 2>&1 || true)
[[ "$uid" =~ ^[0-9]+$ ]] && [ "$uid" != 0 ] && pass "the daemon (PID 1) runs as uid $uid, not root" || fail "the daemon's uid: $uid"
if poll 90 healthy "$NAME-a"; then
  pass "podman healthcheck run: healthy $(secs "$t") after start"
else
  logs_of "$NAME-a"
  fail "podman healthcheck run: not healthy within 90 s ($(podman healthcheck run "$NAME-a" 2>&1 || true))"
fi
poll 90 ready "$PORT" || fail "/readyz: not 200 within 90 s: $(http_get "$PORT" /readyz 300)"
for path in /healthz /readyz /metrics; do
  answer=$(http_get "$PORT" "$path" 120)
  case $path:$answer in
    /metrics:200*changefeed_*) pass "GET $path: 200, Prometheus text" ;;
    /metrics:*) fail "GET $path: $answer" ;;
    *:200*) pass "GET $path: ${answer:0:100}" ;;
    *) fail "GET $path: $answer" ;;
  esac
done
if poll 60 has_events "$STATE"; then
  pass "events land in the /state volume ($(events_in "$STATE") so far; store $(ls "$STATE" | grep -c '^changefeed.sqlite$') file)"
else
  logs_of "$NAME-a"
  fail "no event reached /state/events.jsonl within 60 s"
fi

# --- a wrong key: unready, yet healthy (a restart would not fix the key) ----------------------
WRONG_PORT=$(free_port)
podman volume create "$NAME-wrong" >/dev/null
start_daemon "$NAME-b" "$WRONG_PORT" "$WORK/wrong-key" "$NAME-wrong" || fail "a container with a wrong key starts"
credential_refused() { http_get "$WRONG_PORT" /readyz 2000 | grep -q '"name":"credential","ok":false'; }
if poll 60 credential_refused; then
  if out=$(podman healthcheck run "$NAME-b" 2>&1); then
    pass "with a wrong key /readyz fails and podman healthcheck run (/healthz) passes: nothing restarts it ($(http_get "$WRONG_PORT" /readyz 60))"
  else
    fail "podman healthcheck run fails with a wrong key ($out): an orchestrator would restart it for nothing"
  fi
else
  logs_of "$NAME-b"
  fail "with a wrong key, /readyz never named the credential within 60 s: $(http_get "$WRONG_PORT" /readyz 300)"
fi
podman rm -f -t 0 "$NAME-b" >/dev/null 2> >(without_systemd_noise >&2)

# --- SIGTERM ----------------------------------------------------------------------------------
t=$(date +%s%N)
podman stop -t 30 "$NAME-a" >/dev/null 2> >(without_systemd_noise >&2)
stopped_in=$(secs "$t")
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME-a")
[ "$code" = 0 ] && pass "SIGTERM (podman stop): exit 0 in $stopped_in" || { logs_of "$NAME-a"; fail "SIGTERM: exit $code after $stopped_in"; }
before=$(events_in "$STATE")

# --- a second container: read-only root, same volume, resumes ---------------------------------
# The simulator adds an entry a second; these arrive while no daemon runs.
sleep 2
t=$(date +%s%N)
start_daemon "$NAME-c" "$PORT" "$WORK/sim/api-key" "$NAME-state" --read-only || fatal "the read-only container starts"
if podman exec "$NAME-c" sh -c 'touch /app/x' 2>/dev/null; then fail "--read-only: /app is writable"; else pass "--read-only: the root file system refuses writes"; fi
if poll 90 healthy "$NAME-c"; then
  pass "read-only container healthy $(secs "$t") after start"
else
  logs_of "$NAME-c"
  fail "read-only container: not healthy within 90 s"
fi
# The truth as of now; windows end on the service's clock to the second, so wait for the daemon
# to deliver all of it.
kill -USR2 "$SIM_PID"
poll 10 test -s "$WORK/sim/truth.json" || fatal "the simulator wrote its truth"
complete() { node --import tsx scripts/container/smokeSimulator.ts compare "$STATE/events.jsonl" "$WORK/sim/truth.json"; }
if poll 90 complete; then
  pass "resumed on the same volume: $(complete) ($before before the restart)"
else
  logs_of "$NAME-c"
  fail "after the restart: $(complete || true)"
fi
has_events "$STATE" "$before" && pass "the second container delivered $(($(events_in "$STATE") - before)) new events" \
  || fail "the second container delivered nothing new"
t=$(date +%s%N)
podman stop -t 30 "$NAME-c" >/dev/null 2> >(without_systemd_noise >&2)
code=$(podman inspect --format '{{.State.ExitCode}}' "$NAME-c")
[ "$code" = 0 ] && pass "read-only container: SIGTERM exit 0 in $(secs "$t")" || { logs_of "$NAME-c"; fail "read-only container: SIGTERM exit $code"; }
