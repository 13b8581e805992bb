'use strict';
// The deploy files, checked offline: no Docker engine or cluster runs here. service.yaml as a user
// would deploy it: its env against funcrun's settings and func.yaml, its timeouts in order, its volumes.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const YAML = require('yaml');
const os = require('node:os');
const { parseBytes, parseDuration } = require('../lib/start/func-yaml.js');
const { SETTINGS, checkVariable } = require('../lib/start/settings.js');
const { project, run } = require('./helpers');

const DEPLOY = path.join(__dirname, '..', 'examples', 'deploy');

/** A Kubernetes quantity of bytes (`1Gi`, `500M`, `1024`). */
function quantity(text) {
  const units = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };
  const parts = /^(\d+)(|k|M|G|Ki|Mi|Gi)$/.exec(String(text));
  assert.ok(parts, `a quantity: ${text}`);
  return Number(parts[1]) * units[parts[2]];
}

describe('examples/deploy', () => {
  const service = YAML.parse(fs.readFileSync(path.join(DEPLOY, 'service.yaml'), 'utf8'));
  const container = service.spec.template.spec.containers[0];

  it('service.yaml is a Knative Service', () => {
    assert.equal(service.apiVersion, 'serving.knative.dev/v1');
    assert.equal(service.kind, 'Service');
    assert.ok(container.image);
    assert.equal(container.ports[0].containerPort, 8080);
  });

  it("its probe paths are the function's func.yaml health endpoints", () => {
    const funcYaml = YAML.parse(fs.readFileSync(path.join(__dirname, '..', 'examples', service.metadata.name, 'func.yaml'), 'utf8'));
    assert.equal(container.livenessProbe.httpGet.path, funcYaml.deploy.healthEndpoints.liveness);
    assert.equal(container.readinessProbe.httpGet.path, funcYaml.deploy.healthEndpoints.readiness);
  });

  const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
  const revision = service.spec.template.spec;

  it("funcrun's grace period fits inside the revision's timeout, and the settings are valid for funcrun", () => {
    assert.ok(parseDuration(env.FUNC_GRACE_PERIOD, 'FUNC_GRACE_PERIOD') < revision.timeoutSeconds * 1000);
    for (const [name, value] of Object.entries(env)) checkVariable(name, value);
    assert.ok(revision.containerConcurrency > 0);
  });

  it("funcrun's timeout ends before the revision's: its 504 and context.signal come before queue-proxy's 504", () => {
    // Knative refuses a timeoutSeconds past config-defaults' max-revision-timeout-seconds (600 unless changed).
    assert.ok(Number.isInteger(revision.timeoutSeconds) && revision.timeoutSeconds > 0 && revision.timeoutSeconds <= 600);
    const timeout = parseDuration(env.FUNC_TIMEOUT, 'FUNC_TIMEOUT');
    assert.ok(timeout > 0, 'FUNC_TIMEOUT is set');
    // A few seconds ahead, so funcrun's answer reaches queue-proxy before its own timer fires.
    assert.ok(timeout <= revision.timeoutSeconds * 1000 - 5000, `FUNC_TIMEOUT ${env.FUNC_TIMEOUT} against timeoutSeconds ${revision.timeoutSeconds}`);
  });

  it('it runs with a read-only root filesystem and an emptyDir at /tmp, larger than the upload disk limit', () => {
    assert.equal(container.securityContext.readOnlyRootFilesystem, true);
    const mount = container.volumeMounts.find((m) => m.mountPath === '/tmp');
    assert.ok(mount, 'a volume is mounted at /tmp');
    assert.notEqual(mount.readOnly, true);
    const volume = revision.volumes.find((v) => v.name === mount.name);
    assert.ok(volume?.emptyDir, 'the volume at /tmp is an emptyDir');
    const diskLimit =
      env.FUNC_UPLOAD_DISK_LIMIT === undefined ? SETTINGS.uploadDiskLimit.default : parseBytes(env.FUNC_UPLOAD_DISK_LIMIT, 'FUNC_UPLOAD_DISK_LIMIT');
    // Past its sizeLimit Kubernetes evicts the pod: funcrun refuses uploads (503) before that.
    assert.ok(quantity(volume.emptyDir.sizeLimit) > diskLimit, `sizeLimit ${volume.emptyDir.sizeLimit} against the upload disk limit ${diskLimit}`);
  });

  it("the log level is left to func.yaml: the container's env sets none, so func.yaml's run.envs level applies", async (t) => {
    assert.ok(!('FUNC_LOG_LEVEL' in env), 'a FUNC_LOG_LEVEL in the container env would win over func.yaml');
    // The image's start with the Service's env: func.yaml's debug level shows debug lines.
    const folder = project({
      'index.js': 'module.exports = () => "ok";\n',
      'func.yaml': 'name: hello\nrun:\n  envs:\n    - name: FUNC_LOG_LEVEL\n      value: debug\n',
    });
    t.after(() => fs.rmSync(folder, { recursive: true, force: true }));
    const proc = run([folder, '--port', '0', '--host', '127.0.0.1'], { env: { ...env, TMPDIR: os.tmpdir() } });
    t.after(() => proc.stop('SIGKILL'));
    await proc.waitFor((l) => /^listening on /.test(l.msg), 'the listening line');
    assert.equal((await proc.stop('SIGTERM')).code, 0);
    assert.ok(
      proc.lines().some((l) => l.level === 20 && l.msg === 'loaded the function'),
      proc.out.stdout,
    );
  });

  it('the Dockerfile installs production dependencies, runs as a non-root user, honours PORT and starts through the package binary', () => {
    const dockerfile = fs.readFileSync(path.join(DEPLOY, 'Dockerfile'), 'utf8');
    const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    assert.match(dockerfile, /npm ci --omit=dev/);
    assert.match(final, /^FROM node:\$\{NODE_VERSION\}-alpine$/m);
    assert.match(final, /^USER node$/m);
    assert.match(final, /PORT=8080/);
    // node_modules/.bin/funcrun exists whatever name the package is installed under.
    assert.match(final, /^CMD \["node", "node_modules\/\.bin\/funcrun", "serve", "\."\]$/m);
    assert.match(fs.readFileSync(path.join(DEPLOY, '.dockerignore'), 'utf8'), /^node_modules$/m);
  });
});
