'use strict';
// func.yaml as Knative func reads and writes it: every func.yaml funcrun ships or writes follows
// func's own schema, and the run.envs entries func takes never stop the start.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const Ajv = require('ajv-draft-04');
const addFormats = require('ajv-formats');
const YAML = require('yaml');
const { applyEnvs, readFuncYaml } = require('../lib/start/func-yaml.js');
const { projectFiles } = require('../lib/tools/create-command.js');
const { project, request, runServing, serve } = require('./helpers');

const ROOT = path.join(__dirname, '..');
const SCHEMA_FILE = path.join(__dirname, 'peers', 'knative-func-yaml-schema.json');
const PROVENANCE = fs.readFileSync(path.join(__dirname, 'peers', 'PROVENANCE.md'), 'utf8');
const SCHEMA_SECTION = PROVENANCE.slice(PROVENANCE.indexOf('## knative-func-yaml-schema.json')).split('\n## ')[0];

// func's schema is draft-04, which Ajv 8 no longer reads by itself: ajv-draft-04 is Ajv for that draft.
const ajv = new Ajv({ allErrors: true });
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(SCHEMA_FILE, 'utf8')));

/** What func's schema finds wrong in a func.yaml's text: [] when it is valid. */
function schemaProblems(text) {
  validate(YAML.parse(text));
  return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
}

function funcYamlFiles(dir, found = []) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules' || entry.name === '.git') continue;
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) funcYamlFiles(file, found);
    else if (entry.name === 'func.yaml') found.push(file);
  }
  return found;
}

describe("func.yaml against Knative func's schema", () => {
  it('the schema kept in spec/peers is the file PROVENANCE.md records (sha256)', () => {
    const recorded = /sha256 `([0-9a-f]{64})`\n/.exec(SCHEMA_SECTION.split('Made with')[1]);
    assert.ok(recorded, 'PROVENANCE.md records the schema file sha256');
    assert.equal(crypto.createHash('sha256').update(fs.readFileSync(SCHEMA_FILE)).digest('hex'), recorded[1]);
  });

  it('the schema refuses a func.yaml without specVersion and created', () => {
    assert.deepEqual(schemaProblems('name: hello\nruntime: node\ninvoke: http\n'), [
      "/ must have required property 'specVersion'",
      "/ must have required property 'created'",
    ]);
    assert.deepEqual(schemaProblems('specVersion: 0.36.0\ncreated: yesterday\ninvoke: events\n'), [
      '/created must match format "date-time"',
      '/invoke must be equal to one of the allowed values',
    ]);
  });

  it('every func.yaml in the repository is valid, and funcrun reads it', () => {
    const files = funcYamlFiles(ROOT);
    for (const known of ['examples/hello/func.yaml', 'examples/cloudevent/func.yaml', 'bench/function/func.yaml']) {
      assert.ok(files.includes(path.join(ROOT, known)), `${known} was found`);
    }
    for (const file of files) {
      assert.deepEqual(schemaProblems(fs.readFileSync(file, 'utf8')), [], path.relative(ROOT, file));
      assert.doesNotThrow(() => readFuncYaml(path.dirname(file)), path.relative(ROOT, file));
    }
  });

  for (const language of ['node', 'typescript']) {
    for (const template of ['http', 'cloudevents', 'fetch']) {
      it(`funcrun create's ${language} ${template} func.yaml is valid, with specVersion, runtime and its creation time`, () => {
        const created = new Date('2026-11-22T10:20:30.456Z');
        const text = projectFiles('my-function', { language, template, funcrun: '^0.1.0' }, created)['func.yaml'];
        assert.deepEqual(schemaProblems(text), []);
        const parsed = YAML.parse(text);
        assert.equal(parsed.specVersion, '0.36.0');
        assert.equal(parsed.created, '2026-11-22T10:20:30.456Z');
        assert.equal(parsed.runtime, language);
        assert.equal(parsed.invoke, template === 'cloudevents' ? 'cloudevent' : 'http');
      });
    }
  }

  it("funcrun create's func.yaml links the schema at the commit PROVENANCE.md records, as func links its own", () => {
    const commit = /Commit: `([0-9a-f]{40})`/.exec(SCHEMA_SECTION)[1];
    const text = projectFiles('f', { language: 'node', template: 'http', funcrun: '^0.1.0' })['func.yaml'];
    const url = `https://raw.githubusercontent.com/knative/func/${commit}/schema/func_yaml-schema.json`;
    assert.ok(text.startsWith(`# $schema: ${url}\n# yaml-language-server: $schema=${url}\n`), text);
  });
});

// Every kind of entry of func's reference (docs/reference/func_yaml.md), plus a local reference to a
// variable that is not set.
const ALL_KINDS = `specVersion: 0.36.0
name: envs
runtime: node
created: 2026-11-22T00:00:00Z
run:
  envs:
    - name: PLAIN
      value: from func.yaml
    - name: LOCAL
      value: '{{ env:SOURCE_VAR }}'
    - name: FROM_SECRET
      value: '{{ secret:mysecret:key }}'
    - name: FROM_CONFIG_MAP
      value: '{{ configMap:myconfigmap:key }}'
    - value: '{{ secret:mysecret2 }}'
    - value: '{{ configMap:myconfigmap2 }}'
    - name: UNSET_LOCAL
      value: '{{ env:NOT_SET_ANYWHERE }}'
`;
const LEFT_TO_THE_PLATFORM = [
  { name: 'FROM_SECRET', value: '{{ secret:mysecret:key }}' },
  { name: 'FROM_CONFIG_MAP', value: '{{ configMap:myconfigmap:key }}' },
  { value: '{{ secret:mysecret2 }}' },
  { value: '{{ configMap:myconfigmap2 }}' },
];
const HANDLER = `const names = ['PLAIN', 'LOCAL', 'FROM_SECRET', 'FROM_CONFIG_MAP', 'UNSET_LOCAL'];
module.exports = () => Object.fromEntries(names.map((n) => [n, process.env[n] ?? null]));`;

describe('run.envs as Knative func reads them', () => {
  it('the whole reference is valid for func, and funcrun reads it', () => {
    assert.deepEqual(schemaProblems(ALL_KINDS), []);
    const folder = project({ 'func.yaml': ALL_KINDS });
    assert.equal(readFuncYaml(folder).envs.length, 7);
  });

  it('entries without a name and secret or config map references start the server; plain and local values are set; the rest is logged at debug, never above', async (t) => {
    // FROM_CONFIG_MAP stands for a variable the platform has set, as in a deployed pod.
    const folder = project({ 'index.js': HANDLER, 'func.yaml': ALL_KINDS });
    const proc = await runServing([folder], { env: { FUNC_LOG_LEVEL: 'debug', SOURCE_VAR: 'copied', FROM_CONFIG_MAP: 'set by the platform' } });
    t.after(() => proc.child.kill('SIGTERM'));
    const res = await request(proc.url);
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { PLAIN: 'from func.yaml', LOCAL: 'copied', FROM_SECRET: null, FROM_CONFIG_MAP: 'set by the platform', UNSET_LOCAL: null });

    const lines = proc.lines();
    const platform = lines.filter((l) => l.msg === 'run.envs entries left to the platform');
    assert.equal(platform.length, 1);
    assert.equal(platform[0].level, 20);
    assert.deepEqual(platform[0].skipped, LEFT_TO_THE_PLATFORM);
    const unresolved = lines.filter((l) => /^run\.envs entries not set/.test(l.msg));
    assert.equal(unresolved.length, 1);
    assert.equal(unresolved[0].level, 20);
    assert.deepEqual(unresolved[0].skipped, [{ name: 'UNSET_LOCAL', value: '{{ env:NOT_SET_ANYWHERE }}' }]);
    const above = lines.filter((l) => l.level > 20 && /run\.envs|secret|configMap|NOT_SET_ANYWHERE/.test(JSON.stringify(l)));
    assert.deepEqual(above, []);
  });

  it('through start() at the default level, nothing is logged about them', async (t) => {
    const folder = project({ 'func.yaml': ALL_KINDS });
    t.after(() => {
      for (const name of ['PLAIN', 'LOCAL', 'FROM_SECRET', 'FROM_CONFIG_MAP', 'UNSET_LOCAL']) delete process.env[name];
    });
    const app = await serve(t, () => ({ plain: process.env.PLAIN ?? null, secret: process.env.FROM_SECRET ?? null }), { config: folder, logLevel: 'info' });
    assert.deepEqual((await request(app.url)).json, { plain: 'from func.yaml', secret: null });
    assert.ok(
      app.log.entries().some((l) => /^listening on/.test(l.msg)),
      'the start was logged',
    );
    assert.deepEqual(
      app.log.entries().filter((l) => /run\.envs|secret|configMap/.test(JSON.stringify(l))),
      [],
    );
  });

  it('applyEnvs sets plain and local values, keeps what is set, and returns what it left', () => {
    const folder = project({ 'func.yaml': ALL_KINDS });
    const env = { SOURCE_VAR: 'copied', PLAIN: 'already set' };
    const skipped = applyEnvs(readFuncYaml(folder), env);
    assert.deepEqual(env, { SOURCE_VAR: 'copied', PLAIN: 'already set', LOCAL: 'copied' });
    assert.deepEqual(skipped, { platform: LEFT_TO_THE_PLATFORM, unresolved: [{ name: 'UNSET_LOCAL', value: '{{ env:NOT_SET_ANYWHERE }}' }] });
  });

  it('names Kubernetes takes (my.var, my-var) are set; numbers and booleans are the text as written, aliases what they name, as func reads them', () => {
    const folder = project({
      'func.yaml':
        'run:\n  envs:\n    - name: my.var\n      value: &a a\n    - name: my-var\n      value: *a\n    - name: RATIO\n      value: 1.0\n    - name: HEX\n      value: 0x10\n    - name: ON\n      value: true\n    - name: EMPTY\n      value: ""\n',
    });
    const env = {};
    applyEnvs(readFuncYaml(folder), env);
    assert.deepEqual(env, { 'my.var': 'a', 'my-var': 'a', RATIO: '1.0', HEX: '0x10', ON: 'true', EMPTY: '' });
  });

  const refused = {
    'an entry with neither a name nor a value': ['    - {}\n', /:3: a run\.envs entry needs a name and a value, or a value alone/],
    'a value without a name that imports nothing': ['    - value: plain\n', /:3: a run\.envs entry without a name imports every key of a secret or config map/],
    'a local reference without a name': ["    - value: '{{ env:HOME }}'\n", /:3: a run\.envs entry without a name imports/],
    'a name without a value': ['    - name: FOO\n', /:3: run\.envs entry FOO needs a value/],
    'a named import of a whole secret': ["    - name: FOO\n      value: '{{ secret:mysecret }}'\n", /:3: the value of run\.envs entry FOO starts with '\{\{'/],
    'an unknown kind of reference': ["    - name: FOO\n      value: '{{ vault:a:b }}'\n", /:3: the value of run\.envs entry FOO starts with '\{\{'/],
    'a name twice': ['    - name: FOO\n      value: a\n    - name: FOO\n      value: b\n', /:5: run\.envs names FOO twice \(first on line 3\)/],
    'a name Kubernetes refuses': ['    - name: 1FOO\n      value: a\n', /:3: invalid variable name '1FOO'/],
    'a name that is a list': ['    - name: [A]\n      value: a\n', /:3: run\.envs name must be text/],
  };
  for (const [what, [entries, message]] of Object.entries(refused)) {
    it(`what func refuses is refused with the file and line: ${what}`, () => {
      const folder = project({ 'func.yaml': `run:\n  envs:\n${entries}` });
      assert.throws(
        () => readFuncYaml(folder),
        (err) => err.name === 'ConfigError' && err.message.startsWith(path.join(folder, 'func.yaml')) && message.test(err.message),
      );
    });
  }
});

describe("func.yaml's logLevel, as faas-js-runtime reads it", () => {
  it('sets the log level when no option or variable does, compatibility included; an unknown one is refused with its line', async (t) => {
    const folder = project({ 'func.yaml': 'name: leveled\nlogLevel: info\n' });
    assert.equal(readFuncYaml(folder).logLevel, 'info');
    const saved = process.env.FUNC_LOG_LEVEL;
    delete process.env.FUNC_LOG_LEVEL;
    t.after(() => (saved === undefined ? delete process.env.FUNC_LOG_LEVEL : (process.env.FUNC_LOG_LEVEL = saved)));
    // Compatibility's own default is warn: func.yaml's info wins over it, start()'s option over func.yaml.
    const app = await serve(t, (context) => context.log.level, { config: folder, compat: 'faas-js-runtime' });
    assert.equal((await request(app.url)).text, 'info');
    const quiet = await serve(t, (context) => context.log.level, { config: folder, compat: 'faas-js-runtime', logLevel: 'error' });
    assert.equal((await request(quiet.url)).text, 'error');
    assert.throws(() => readFuncYaml(project({ 'func.yaml': 'name: x\nlogLevel: loud\n' })), /func\.yaml:2: logLevel: unknown log level 'loud'/);
  });
});
