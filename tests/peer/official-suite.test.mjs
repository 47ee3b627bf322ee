// Tests of official-suite.mjs, the helper of official-suite.sh: the lockfile
// pins, the source recovery from a source map and the verdict on a vitest
// report. Needs neither fake-e2b nor an E2B checkout (fixtures are made here).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const helper = path.join(path.dirname(fileURLToPath(import.meta.url)), 'official-suite.mjs')

function run(...args) {
  const r = spawnSync(process.execPath, [helper, ...args], { encoding: 'utf8' })
  return { status: r.status, stdout: r.stdout, stderr: r.stderr }
}

function tmpdir(t) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'official-suite-test-'))
  t.after(() => fs.rmSync(d, { recursive: true, force: true }))
  return d
}

const LOCK = `lockfileVersion: '9.0'

importers:

  .:
    devDependencies:
      vitest:
        specifier: ^3.0.0
        version: 3.0.0

  packages/js-sdk:
    dependencies:
      tar:
        specifier: ^7.5.19
        version: 7.5.21
    devDependencies:
      '@vitest/browser-playwright':
        specifier: ^4.1.10
        version: 4.1.10(playwright@1.55.1)(vitest@4.1.10)
      msw:
        specifier: ^2.12.10
        version: 2.12.14(@types/node@20.19.43)
      vitest:
        specifier: ^4.1.10
        version: 4.1.10(@types/node@20.19.43)(vite@6.4.3)

  packages/python-sdk: {}

packages:

  vite@6.4.3:
    resolution: {integrity: sha512-x}

  '@esbuild/linux-x64@0.25.0':
    resolution: {integrity: sha512-y}

  chalk@4.1.2:
    resolution: {integrity: sha512-z}

  chalk@5.3.0:
    resolution: {integrity: sha512-w}
`

test('versions: direct dependencies of packages/js-sdk, else the only version in the lockfile', (t) => {
  const d = tmpdir(t)
  fs.writeFileSync(path.join(d, 'pnpm-lock.yaml'), LOCK)
  const r = run('versions', path.join(d, 'pnpm-lock.yaml'), 'vitest', 'msw', '@vitest/browser-playwright', 'tar', 'vite', '@esbuild/linux-x64')
  assert.equal(r.stderr, '')
  assert.equal(r.status, 0)
  assert.equal(
    r.stdout,
    'vitest@4.1.10\nmsw@2.12.14\n@vitest/browser-playwright@4.1.10\ntar@7.5.21\nvite@6.4.3\n@esbuild/linux-x64@0.25.0\n'
  )
})

test('versions: a package at two versions, or absent, cannot be pinned', (t) => {
  const d = tmpdir(t)
  fs.writeFileSync(path.join(d, 'pnpm-lock.yaml'), LOCK)
  let r = run('versions', path.join(d, 'pnpm-lock.yaml'), 'chalk')
  assert.equal(r.status, 2)
  assert.equal(r.stdout, '')
  assert.match(r.stderr, /chalk is at 4\.1\.2, 5\.3\.0; cannot pin it/)
  r = run('versions', path.join(d, 'pnpm-lock.yaml'), 'left-pad')
  assert.equal(r.status, 2)
  assert.match(r.stderr, /left-pad is absent; cannot pin it/)
})

function makePackage(d, sources, contents) {
  const pkg = path.join(d, 'node_modules', 'e2b')
  fs.mkdirSync(path.join(pkg, 'dist'), { recursive: true })
  fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"e2b","version":"2.51.0"}\n')
  fs.writeFileSync(
    path.join(pkg, 'dist', 'index.mjs.map'),
    JSON.stringify({ version: 3, sources, sourcesContent: contents, mappings: '' })
  )
  return pkg
}

test('recover-src: writes src/ from sourcesContent and the package.json; type-only files stay', (t) => {
  const d = tmpdir(t)
  const pkg = makePackage(
    d,
    ['../package.json', '../src/index.ts', '../src/api/index.ts', '../../../node_modules/.pnpm/x/dist/lite.mjs'],
    ['', "export * from './api'\nimport pkg from '../package.json'\n", "import type { paths } from './schema.gen'\nexport const a = 1\n", 'bundled']
  )
  const sdk = path.join(d, 'js-sdk')
  fs.mkdirSync(path.join(sdk, 'src', 'api'), { recursive: true })
  fs.writeFileSync(path.join(sdk, 'src', 'api', 'schema.gen.ts'), 'export type paths = {}\n')
  const r = run('recover-src', pkg, sdk)
  assert.equal(r.stderr, '')
  assert.equal(r.status, 0)
  assert.equal(r.stdout, '2 modules from e2b/dist/index.mjs.map + 5 type-only\n')
  assert.equal(fs.readFileSync(path.join(sdk, 'src', 'api', 'index.ts'), 'utf8'), "import type { paths } from './schema.gen'\nexport const a = 1\n")
  assert.equal(fs.readFileSync(path.join(sdk, 'src', 'api', 'schema.gen.ts'), 'utf8'), 'export type paths = {}\n')
  assert.equal(fs.readFileSync(path.join(sdk, 'package.json'), 'utf8'), '{"name":"e2b","version":"2.51.0"}\n')
  assert.deepEqual(fs.readdirSync(path.join(sdk, 'src')).sort(), ['api', 'index.ts'])
})

test('recover-src: an import left unresolved is an error naming it', (t) => {
  const d = tmpdir(t)
  const pkg = makePackage(d, ['../src/template/index.ts'], ["import { X } from './types'\n"])
  const r = run('recover-src', pkg, path.join(d, 'js-sdk'))
  assert.equal(r.status, 2)
  assert.match(r.stderr, /unresolved imports in the recovered source:\n {2}src\/template\/index\.ts imports \.\/types\n/)
})

test('recover-src: a source outside src/ is refused', (t) => {
  const d = tmpdir(t)
  const pkg = makePackage(d, ['../src/../../escape.ts'], ['x'])
  const r = run('recover-src', pkg, path.join(d, 'js-sdk'))
  assert.equal(r.status, 2)
  assert.match(r.stderr, /unexpected source \.\.\/src\/\.\.\/\.\.\/escape\.ts/)
  assert.equal(fs.existsSync(path.join(d, 'escape.ts')), false)
})

const EXPECTED = [
  '# comment',
  '',
  'cause\tskew\tversion skew',
  'cause\tnet\tneeds the internet',
  'unit\ttests/a.test.ts\tgroup > known failure\tskew',
  'unit\ttests/b.test.ts\tnow passes\tnet',
  'unit\ttests/other.test.ts\tnot run this time\tnet',
  'template\ttests/a.test.ts\tgroup > known failure\tskew',
  'cause\tflaky-load\tslow under load',
  'unit\ttests/a.test.ts\tfine\tflaky-load',
].join('\n')

function report(sdk, success = false) {
  const f = (name) => path.join(sdk, 'tests', name)
  return {
    success,
    testResults: [
      {
        name: f('a.test.ts'),
        status: 'failed',
        message: '',
        assertionResults: [
          { ancestorTitles: ['group'], title: 'known failure', status: 'failed', failureMessages: ['AssertionError: old\n    at x.ts:1:1'] },
          { ancestorTitles: ['group'], title: 'new failure', status: 'failed', failureMessages: ['Error: boom\n    at y.ts:2:2\nmore text'] },
          { ancestorTitles: [], title: 'fine', status: 'passed', failureMessages: [] },
          { ancestorTitles: [], title: 'skipped', status: 'skipped', failureMessages: [] },
          { ancestorTitles: [], title: 'todo', status: 'todo', failureMessages: [] },
        ],
      },
      {
        name: f('b.test.ts'),
        status: 'passed',
        message: '',
        assertionResults: [{ ancestorTitles: [], title: 'now passes', status: 'passed', failureMessages: [] }],
      },
      { name: f('c.test.ts'), status: 'failed', message: 'Failed to load url ../src/gone', assertionResults: [] },
    ],
  }
}

test('summary: counts, expected and unexpected failures, files that failed to load, exit 1', (t) => {
  const d = tmpdir(t)
  const sdk = path.join(d, 'js-sdk')
  fs.writeFileSync(path.join(d, 'unit.json'), JSON.stringify(report(sdk)))
  fs.writeFileSync(path.join(d, 'expected'), EXPECTED)
  const out = path.join(d, 'out')
  const r = run('summary', 'unit', path.join(d, 'unit.json'), sdk, path.join(d, 'expected'), out)
  assert.equal(r.stderr, '')
  assert.equal(r.status, 1)
  assert.equal(
    r.stdout,
    [
      '== unit: 2 passed, 3 failed, 2 skipped (1 expected, 2 not expected)',
      '   expected, skew (1): version skew',
      '   expected (skew): tests/a.test.ts > group > known failure',
      '   NOT EXPECTED: tests/a.test.ts > group > new failure',
      '   NOT EXPECTED: tests/c.test.ts > (file)',
      '   tests/a.test.ts > group > new failure:',
      '      | Error: boom',
      '      | more text',
      '   tests/c.test.ts > (file):',
      '      | Failed to load url ../src/gone',
      '   listed as expected but did not fail: tests/b.test.ts > now passes',
      '',
    ].join('\n')
  )
  assert.equal(
    fs.readFileSync(path.join(out, 'unit.failures.tsv'), 'utf8'),
    'tests/a.test.ts\tgroup > known failure\tAssertionError: old\n' +
      'tests/a.test.ts\tgroup > new failure\tError: boom\n' +
      'tests/c.test.ts\t(file)\tFailed to load url ../src/gone\n'
  )
  assert.equal(fs.readFileSync(path.join(out, 'unit.counts'), 'utf8'), '2 3 2 2\n')
})

test('summary: a flaky test is expected when it fails and not reported when it passes', (t) => {
  const d = tmpdir(t)
  const sdk = path.join(d, 'js-sdk')
  const rep = report(sdk)
  rep.testResults[0].assertionResults.splice(1, 1) // no new failure
  rep.testResults.pop() // no file failing to load
  fs.writeFileSync(path.join(d, 'pass.json'), JSON.stringify(rep))
  rep.testResults[0].assertionResults[1].status = 'failed' // 'fine' fails this time
  rep.testResults[0].assertionResults[1].failureMessages = ['AssertionError: slow']
  fs.writeFileSync(path.join(d, 'fail.json'), JSON.stringify(rep))
  fs.writeFileSync(path.join(d, 'expected'), EXPECTED)
  let r = run('summary', 'unit', path.join(d, 'pass.json'), sdk, path.join(d, 'expected'), path.join(d, 'out'))
  assert.equal(r.status, 0)
  assert.doesNotMatch(r.stdout, /fine/)
  r = run('summary', 'unit', path.join(d, 'fail.json'), sdk, path.join(d, 'expected'), path.join(d, 'out'))
  assert.equal(r.status, 0)
  assert.match(r.stdout, /^== unit: 1 passed, 2 failed, 2 skipped \(2 expected, 0 not expected\)\n/)
  assert.match(r.stdout, /\n {3}expected, flaky-load \(1\): slow under load\n/)
  assert.match(r.stdout, /\n {3}expected \(flaky-load\): tests\/a\.test\.ts > fine\n/)
})

test('summary: only expected failures exit 0; the list is per project', (t) => {
  const d = tmpdir(t)
  const sdk = path.join(d, 'js-sdk')
  const rep = report(sdk)
  rep.testResults[0].assertionResults.splice(1, 1) // no new failure
  rep.testResults.pop() // no file failing to load
  fs.writeFileSync(path.join(d, 'r.json'), JSON.stringify(rep))
  fs.writeFileSync(path.join(d, 'expected'), EXPECTED)
  let r = run('summary', 'unit', path.join(d, 'r.json'), sdk, path.join(d, 'expected'), path.join(d, 'out'))
  assert.equal(r.status, 0)
  assert.match(r.stdout, /^== unit: 2 passed, 1 failed, 2 skipped \(1 expected, 0 not expected\)\n/)
  // the same failure in another project is not covered by unit's line
  r = run('summary', 'connectionConfig', path.join(d, 'r.json'), sdk, path.join(d, 'expected'), path.join(d, 'out'))
  assert.equal(r.status, 1)
  assert.match(r.stdout, /NOT EXPECTED: tests\/a\.test\.ts > group > known failure/)
  // '-' expects nothing
  r = run('summary', 'unit', path.join(d, 'r.json'), sdk, '-', path.join(d, 'out'))
  assert.equal(r.status, 1)
})

test('summary: a run that failed outside any test is a failure', (t) => {
  const d = tmpdir(t)
  const sdk = path.join(d, 'js-sdk')
  const rep = { success: false, testResults: [{ name: path.join(sdk, 'tests', 'b.test.ts'), status: 'passed', assertionResults: [{ ancestorTitles: [], title: 'ok', status: 'passed', failureMessages: [] }] }] }
  fs.writeFileSync(path.join(d, 'r.json'), JSON.stringify(rep))
  const r = run('summary', 'unit', path.join(d, 'r.json'), sdk, '-', path.join(d, 'out'))
  assert.equal(r.status, 1)
  assert.match(r.stdout, /^== unit: 1 passed, 1 failed, 0 skipped \(0 expected, 1 not expected\)\n {3}NOT EXPECTED: \(run\) > \(run\)\n/)
})

test('summary: a malformed expected list or an undefined cause is refused', (t) => {
  const d = tmpdir(t)
  const sdk = path.join(d, 'js-sdk')
  fs.writeFileSync(path.join(d, 'r.json'), JSON.stringify(report(sdk)))
  fs.writeFileSync(path.join(d, 'bad1'), 'unit tests/a.test.ts spaces not tabs skew\n')
  let r = run('summary', 'unit', path.join(d, 'r.json'), sdk, path.join(d, 'bad1'), path.join(d, 'out'))
  assert.equal(r.status, 2)
  assert.match(r.stderr, /bad1:1: expected 'cause<TAB>key<TAB>text' or 4 tab-separated fields/)
  fs.writeFileSync(path.join(d, 'bad2'), 'unit\ttests/a.test.ts\tgroup > known failure\tnowhere\n')
  r = run('summary', 'unit', path.join(d, 'r.json'), sdk, path.join(d, 'bad2'), path.join(d, 'out'))
  assert.equal(r.status, 2)
  assert.match(r.stderr, /cause 'nowhere' of unit \| tests\/a\.test\.ts \| group > known failure is not defined/)
  // no report at all
  r = run('summary', 'unit', path.join(d, 'missing.json'), sdk, '-', path.join(d, 'out'))
  assert.equal(r.status, 2)
  assert.match(r.stderr, /unit: no vitest report/)
})
