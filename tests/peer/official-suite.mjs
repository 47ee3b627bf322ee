// Helper of official-suite.sh (the official JS SDK's own test suite against
// fake-e2b). Node built-ins only: it runs before anything is installed.
//
//   node official-suite.mjs versions <pnpm-lock.yaml> <name>...
//       prints name@version for each name, as the E2B commit's lockfile
//       resolved it for packages/js-sdk (a direct dependency there, else the
//       one version the lockfile holds of that package)
//   node official-suite.mjs recover-src <e2b package dir> <js-sdk dir>
//       writes <js-sdk>/src/** from the sourcesContent of the package's
//       dist/index.mjs.map and <js-sdk>/package.json (the package's own);
//       then checks that every relative import under src/ resolves
//   node official-suite.mjs summary <project> <vitest json> <js-sdk dir> <expected list> <out dir>
//       prints the project's pass/fail/skip counts and its failing tests,
//       each marked expected (with its cause) or NOT expected; writes
//       <out>/<project>.failures.tsv; exit 1 when a failure is not expected
import fs from 'node:fs'
import path from 'node:path'

function die(msg) {
  process.stderr.write(`official-suite: ${msg}\n`)
  process.exit(2)
}

function versions(lockPath, names) {
  const lines = fs.readFileSync(lockPath, 'utf8').split('\n')
  // importers: packages/js-sdk: {dependencies,devDependencies,...}: name: {specifier, version}
  const start = lines.indexOf('  packages/js-sdk:')
  if (start < 0) die(`${lockPath} has no importer packages/js-sdk`)
  const direct = new Map()
  let name = null
  for (let i = start + 1; i < lines.length; i++) {
    const l = lines[i]
    if (/^ {0,2}\S/.test(l)) break // next importer or section
    let m = /^ {6}'?([^':]+(?::[^':]+)?)'?:\s*$/.exec(l)
    if (m) {
      name = m[1]
      continue
    }
    m = /^ {8}version: '?([^'(\s]+)/.exec(l)
    if (m && name) direct.set(name, m[1])
  }
  const out = []
  for (const n of names) {
    let v = direct.get(n)
    if (v === undefined) {
      const esc = n.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
      const re = new RegExp(`^  '?${esc}@(\\d[^(:'\\s]*)`)
      const seen = new Set()
      for (const l of lines) {
        const m = re.exec(l)
        if (m) seen.add(m[1])
      }
      if (seen.size !== 1)
        die(`${lockPath}: ${n} is ${seen.size ? `at ${[...seen].join(', ')}` : 'absent'}; cannot pin it`)
      v = [...seen][0]
    }
    if (!/^\d+\.\d+\.\d+/.test(v)) die(`${lockPath}: ${n} resolves to '${v}', not a version`)
    out.push(`${n}@${v}`)
  }
  process.stdout.write(out.join('\n') + '\n')
}

// Modules the source map cannot hold (type-only, erased from the bundle) and
// that official-suite.sh takes from the E2B commit instead.
const TYPE_ONLY = [
  'src/api/schema.gen.ts',
  'src/envd/schema.gen.ts',
  'src/volume/schema.gen.ts',
  'src/sandbox/mcp.d.ts',
  'src/template/types.ts',
]

function recoverSrc(pkgDir, sdkDir) {
  const mapPath = path.join(pkgDir, 'dist', 'index.mjs.map')
  const map = JSON.parse(fs.readFileSync(mapPath, 'utf8'))
  if (!Array.isArray(map.sources) || !Array.isArray(map.sourcesContent))
    die(`${mapPath} has no sources/sourcesContent`)
  let n = 0
  map.sources.forEach((s, i) => {
    if (!s.startsWith('../src/')) return // ../package.json (empty), bundled node_modules
    const rel = path.normalize(s.slice(3))
    if (!rel.startsWith('src/') || rel.includes('..')) die(`${mapPath}: unexpected source ${s}`)
    const text = map.sourcesContent[i]
    if (typeof text !== 'string' || text.length === 0) die(`${mapPath}: ${s} has no content`)
    const out = path.join(sdkDir, rel)
    fs.mkdirSync(path.dirname(out), { recursive: true })
    fs.writeFileSync(out, text)
    n++
  })
  fs.copyFileSync(path.join(pkgDir, 'package.json'), path.join(sdkDir, 'package.json'))
  // every relative import must resolve now (the type-only files are already there)
  const missing = []
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name)
      if (e.isDirectory()) walk(p)
      else if (/\.tsx?$/.test(e.name)) {
        const text = fs.readFileSync(p, 'utf8')
        for (const m of text.matchAll(/from\s+'(\.[^']*)'/g)) {
          const t = path.resolve(path.dirname(p), m[1])
          const ok = [t, `${t}.ts`, `${t}.d.ts`, path.join(t, 'index.ts')].some(
            (c) => fs.existsSync(c) && fs.statSync(c).isFile()
          )
          if (!ok) missing.push(`${path.relative(sdkDir, p)} imports ${m[1]}`)
        }
      }
    }
  }
  walk(path.join(sdkDir, 'src'))
  if (missing.length) die(`unresolved imports in the recovered source:\n  ${missing.join('\n  ')}`)
  process.stdout.write(`${n} modules from ${path.relative(path.dirname(pkgDir), mapPath)} + ${TYPE_ONLY.length} type-only\n`)
}

// Expected-failures list: tab-separated lines
//   cause <key> <text>
//   <project> <file> <test name (describe > ... > test)> <cause key>
// '#' starts a comment line; blank lines are ignored. A cause whose key starts
// with 'flaky-' names a test that may fail or pass (its failure is expected, its
// pass is not reported).
function readExpected(file) {
  const causes = new Map()
  const tests = new Map()
  if (!file) return { causes, tests }
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '' || line.startsWith('#')) return
      const f = line.split('\t')
      if (f[0] === 'cause' && f.length === 3) causes.set(f[1], f[2])
      else if (f.length === 4) tests.set(`${f[0]}\t${f[1]}\t${f[2]}`, f[3])
      else die(`${file}:${i + 1}: expected 'cause<TAB>key<TAB>text' or 4 tab-separated fields`)
    })
  for (const [k, c] of tests)
    if (!causes.has(c)) die(`${file}: cause '${c}' of ${k.replace(/\t/g, ' | ')} is not defined`)
  return { causes, tests }
}

function summary(project, jsonPath, sdkDir, expectedPath, outDir) {
  const { causes, tests: expected } = readExpected(expectedPath === '-' ? null : expectedPath)
  let report
  try {
    report = JSON.parse(fs.readFileSync(jsonPath, 'utf8'))
  } catch (e) {
    die(`${project}: no vitest report (${jsonPath}): ${e.message}`)
  }
  const count = { passed: 0, failed: 0, skipped: 0 }
  const failures = [] // {file, name, message}
  for (const f of report.testResults ?? []) {
    const file = path.relative(sdkDir, f.name).split(path.sep).join('/')
    const rel = file.startsWith('..') ? f.name : file
    const before = failures.length
    for (const a of f.assertionResults ?? []) {
      const name = [...(a.ancestorTitles ?? []), a.title].join(' > ')
      if (a.status === 'passed') count.passed++
      else if (a.status === 'failed') {
        count.failed++
        failures.push({ file: rel, name, message: (a.failureMessages ?? []).join('\n') })
      } else count.skipped++ // skipped, pending, todo
    }
    if (f.status === 'failed' && failures.length === before) {
      // the file failed without a failing test (load error, a hook): one
      // failure for the file
      count.failed++
      failures.push({ file: rel, name: '(file)', message: f.message ?? '' })
    }
  }
  if (report.success === false && failures.length === 0) {
    count.failed++
    failures.push({ file: '(run)', name: '(run)', message: 'vitest reported a failure outside any test (an unhandled error: see the log)' })
  }
  const lines = []
  const unexpected = []
  for (const x of failures) {
    const key = `${project}\t${x.file}\t${x.name}`
    const cause = expected.get(key)
    if (cause === undefined) unexpected.push(x)
    lines.push({ x, cause })
  }
  // listed tests of the files that ran (vitest may have been given a subset)
  const ran = new Set((report.testResults ?? []).map((f) => path.relative(sdkDir, f.name).split(path.sep).join('/')))
  const listed = [...expected.keys()].filter(
    (k) => k.startsWith(`${project}\t`) && ran.has(k.split('\t')[1]) && !expected.get(k).startsWith('flaky-')
  )
  const failedKeys = new Set(failures.map((x) => `${project}\t${x.file}\t${x.name}`))
  const nowPassing = listed.filter((k) => !failedKeys.has(k))

  const w = (s) => process.stdout.write(s + '\n')
  w(`== ${project}: ${count.passed} passed, ${count.failed} failed, ${count.skipped} skipped` +
    ` (${count.failed - unexpected.length} expected, ${unexpected.length} not expected)`)
  const byCause = new Map()
  for (const { cause } of lines) if (cause) byCause.set(cause, (byCause.get(cause) ?? 0) + 1)
  for (const [c, n] of byCause) w(`   expected, ${c} (${n}): ${causes.get(c)}`)
  for (const { x, cause } of lines)
    w(`   ${cause ? `expected (${cause})` : 'NOT EXPECTED'}: ${x.file} > ${x.name}`)
  for (const x of unexpected) {
    const msg = x.message.split('\n').filter((l) => l.trim() && !/^\s*at /.test(l)).slice(0, 3)
    w(`   ${x.file} > ${x.name}:`)
    for (const l of msg) w(`      | ${l.slice(0, 300)}`)
  }
  for (const k of nowPassing) w(`   listed as expected but did not fail: ${k.split('\t').slice(1).join(' > ')}`)
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true })
    const tsv = failures.map((x) => {
      const first = x.message.split('\n').find((l) => l.trim()) ?? ''
      return `${x.file}\t${x.name}\t${first.trim().slice(0, 400)}`
    })
    fs.writeFileSync(path.join(outDir, `${project}.failures.tsv`), tsv.sort().join('\n') + (tsv.length ? '\n' : ''))
    fs.writeFileSync(
      path.join(outDir, `${project}.counts`),
      `${count.passed} ${count.failed} ${count.skipped} ${unexpected.length}\n`
    )
  }
  process.exit(unexpected.length ? 1 : 0)
}

const [cmd, ...args] = process.argv.slice(2)
if (cmd === 'versions' && args.length >= 2) versions(args[0], args.slice(1))
else if (cmd === 'recover-src' && args.length === 2) recoverSrc(args[0], args[1])
else if (cmd === 'summary' && args.length === 5) summary(...args)
else die('usage: versions <lock> <name>... | recover-src <pkg> <sdk> | summary <project> <json> <sdk> <expected|-> <out>')
