#!/usr/bin/env bash
# Knative func's four Node.js templates (spec/peers/knative-func-templates.tar.gz, see
# spec/peers/PROVENANCE.md) run with funcrun installed in place of faas-js-runtime: the one
# line a user changes in package.json. Each must pass its own `npm test`, and its `npm start`
# must serve a request and stop on SIGTERM. Run from the checkout root after `npm ci`.
set -euo pipefail
cd "$(dirname "$0")/.."
archive="$PWD/spec/peers/knative-func-templates.tar.gz"
work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill -KILL -- "-$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# One tarball of the built checkout (.ci/run builds after npm ci), installed the way a user would.
npm pack --ignore-scripts --pack-destination "$work" >"$work/pack.log" 2>&1 || { tail -n 30 "$work/pack.log"; exit 1; }
tarball=$(ls "$work"/*.tgz)

# Readiness, one request and its answer, checked with node's own fetch, on loopback only.
cat >"$work/check.js" <<'EOF'
const [kind, port, pid] = process.argv.slice(2);
const base = `http://127.0.0.1:${port}`;
const alive = () => { try { process.kill(Number(pid), 0); return true; } catch { return false; } };
const fail = (msg) => { console.error(msg); process.exit(1); };
(async () => {
  for (let i = 0; ; i++) {
    if (!alive()) fail('npm start exited before answering /health/readiness');
    const ok = await fetch(`${base}/health/readiness`).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (i === 150) fail('/health/readiness did not answer 200 within 30s');
    await new Promise((r) => setTimeout(r, 200));
  }
  const headers = { 'content-type': 'application/json' };
  if (kind === 'cloudevents') Object.assign(headers, { 'ce-id': '1', 'ce-source': '/harness', 'ce-type': 'harness.test', 'ce-specversion': '1.0' });
  const res = await fetch(`${base}/`, { method: 'POST', headers, body: JSON.stringify({ name: 'tiger' }) });
  const text = await res.text();
  const got = `status ${res.status}, ce-type ${res.headers.get('ce-type')}, body ${JSON.stringify(text)}`;
  if (res.status !== 200) fail(`POST /: expected 200, got ${got}`);
  if (kind === 'http' && text !== 'OK') fail(`POST /: expected body "OK", got ${got}`);
  if (kind === 'cloudevents') {
    let body;
    try { body = JSON.parse(text); } catch {}
    if (res.headers.get('ce-type') !== 'function.response' || JSON.stringify(body) !== '{"message":"OK"}') {
      fail(`POST /: expected ce-type function.response and body {"message":"OK"}, got ${got}`);
    }
  }
})().catch((err) => fail(`POST /: ${err.message}`));
EOF

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

failed=0
report() { echo "knative template $1: $2"; }
# A failing step prints its log's tail, indented, under the template's line.
step_failed() { report "$1" "FAILED: $2"; tail -n 40 "$3" | sed 's/^/    /'; failed=$((failed + 1)); }

run_template() {
  local t=$1 kind=${1#*/} dir="$work/${1//\//-}"
  mkdir -p "$dir"
  tar xzf "$archive" -C "$dir" --strip-components=3 "templates/$t"
  cd "$dir"
  # The one change: faas-js-runtime's version range becomes the funcrun tarball, kept inside the
  # project as docs/migrating.md says (a tarball outside is outside an image's build context).
  cp "$tarball" .
  node -e '
    const fs = require("fs"), p = JSON.parse(fs.readFileSync("package.json", "utf8"));
    if (!p.dependencies["faas-js-runtime"]) throw new Error("no faas-js-runtime dependency");
    p.dependencies["faas-js-runtime"] = "file:" + process.argv[1];
    fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");' "$(basename "$tarball")"
  # Not `npm ci`: the template's lock pins faas-js-runtime 3.x from the registry, so it no longer
  # matches package.json. `npm install` rewrites the lock for that one package (and its own
  # dependencies); every other package stays at the version the template's lock pins.
  npm install --no-audit --no-fund >install.log 2>&1 || { step_failed "$t" "npm install" install.log; return; }
  # The templates' integration tests call start(func) with no port: PORT and FUNC_HOST keep
  # that server off 8080 and on loopback.
  PORT=$(free_port) FUNC_HOST=127.0.0.1 npm test >test.log 2>&1 || { step_failed "$t" "npm test" test.log; return; }
  # npm test runs test/*.ts through tsx, which strips types: the tests' imports and their
  # expectType<HTTPFunction|CloudEventFunction>(handle) are only checked by compiling them.
  if [ -f tsconfig.json ]; then
    echo '{"extends":"./tsconfig.json","include":["src","test"],"compilerOptions":{"noEmit":true,"rootDir":"."}}' >tsconfig.tests.json
    npx tsc -p tsconfig.tests.json >types.log 2>&1 || { step_failed "$t" "type check of test/*.ts (tsc -p tsconfig.tests.json)" types.log; return; }
  fi
  # npm start in its own process group, so that whatever is left of it can be killed at the end.
  local port; port=$(free_port)
  PORT=$port FUNC_PORT=$port FUNC_HOST=127.0.0.1 setsid npm start >start.log 2>&1 &
  server=$!
  if ! node "$work/check.js" "$kind" "$port" "$server" >>start.log 2>&1; then
    step_failed "$t" "npm start" start.log; kill -KILL -- "-$server" 2>/dev/null || true; server=""; return
  fi
  # SIGTERM goes to the runtime itself (npm > sh > node .bin/faas-js-runtime): npm signalled
  # exits 143 whatever its child does, but passes on the runtime's own status, which must be 0.
  local runtime; runtime=$(pgrep -g "$server" -f 'node_modules/\.bin/faas-js-runtime' | head -n 1 || true)
  if [ -z "$runtime" ]; then
    echo "no faas-js-runtime process under npm start" >>start.log
    step_failed "$t" "npm start" start.log; kill -KILL -- "-$server" 2>/dev/null || true; server=""; return
  fi
  kill -TERM "$runtime"
  # Within the default grace period (10s) and a margin.
  for _ in $(seq 150); do kill -0 "$server" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$server" 2>/dev/null; then
    echo "still running 15s after SIGTERM" >>start.log
    step_failed "$t" "npm start did not exit on SIGTERM" start.log; kill -KILL -- "-$server" 2>/dev/null || true; server=""; return
  fi
  local code=0; wait "$server" || code=$?
  kill -KILL -- "-$server" 2>/dev/null || true; server=""
  if [ "$code" -ne 0 ]; then
    step_failed "$t" "npm start exited $code on SIGTERM" start.log; return
  fi
  report "$t" "npm test passed, npm start answered"
}

for t in node/http node/cloudevents typescript/http typescript/cloudevents; do
  run_template "$t"
done
echo "knative templates: $((4 - failed)) passed, $failed failed"
[ "$failed" -eq 0 ]
