// bench/node/bench.mjs: the SDK side of the benchmark (bench/README.md). One process
// runs one scenario once against fake-e2b with the official e2b SDK and prints
// one JSON line of figures, the same fields as bench/bench_c.c:
//
//   node bench.mjs --url URL [--admin URL] --scenario a|b|c|d|e|f|g [--count N] [--bytes N]
//                  [--cap N] [--sleep S]
//
// --url is where the SDK goes (API and envd; through the latency relay in
// bench/run.sh --rtt), --admin is fake-e2b itself for the request log
// (default: --url).
// wall_ms (measured phase only), cpu_ms (process.cpuUsage delta over the
// phase), rss_kb (process.resourceUsage().maxRSS: peak of the whole process),
// server_ms / requests (fake-e2b request log over the phase, cleared just
// before it). The SDK has no output cap: scenario c keeps everything.
import { createHash, randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { Sandbox } from 'e2b'

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    admin: { type: 'string' },
    scenario: { type: 'string' },
    count: { type: 'string', default: '1' },
    bytes: { type: 'string', default: '1024' },
    cap: { type: 'string', default: String(1024 * 1024) },
    sleep: { type: 'string', default: '0.2' },
  },
})
if (!a.url || !/^[a-g]$/.test(a.scenario ?? '')) {
  console.error('usage: bench.mjs --url URL [--admin URL] --scenario a|b|c|d|e|f|g [--count N] [--bytes N] [--sleep S]')
  process.exit(2)
}
process.env.E2B_API_KEY = 'e2b_bench'
process.env.E2B_API_URL = a.url
process.env.E2B_SANDBOX_URL = a.url
const count = Number(a.count)
const bytes = Number(a.bytes)
const admin = a.admin ?? a.url

const f = { wall_ms: 0, cpu_ms: 0, server_ms: -1, requests: -1, errors: 0, note: '', ops: 1, ttfb_ms: -1 }
if ('abef'.includes(a.scenario)) f.ops = count
let t0, cpu0

async function phaseBegin() {
  await fetch(`${admin}/_fake/requests`, { method: 'DELETE', headers: { 'X-API-Key': 'e2b_bench' } }).then((r) => r.arrayBuffer())
  cpu0 = process.cpuUsage()
  t0 = performance.now()
}

async function phaseEnd() {
  f.wall_ms = performance.now() - t0
  const c = process.cpuUsage(cpu0)
  f.cpu_ms = (c.user + c.system) / 1000
  try {
    const log = await (await fetch(`${admin}/_fake/requests`, { headers: { 'X-API-Key': 'e2b_bench' } })).json()
    f.server_ms = log.reduce((s, r) => s + (r.duration_ms ?? 0), 0)
    f.requests = log.length
  } catch (e) {
    console.error(`bench.mjs: request log: ${e.message}`)
  }
}

async function execOk(sbx, cmd, expect, opts = {}) {
  try {
    const r = await sbx.commands.run(cmd, { timeoutMs: 120000, requestTimeoutMs: 600000, ...opts })
    if (expect !== undefined && r.stdout !== expect) throw new Error(`stdout ${JSON.stringify(r.stdout.slice(0, 40))}`)
    return r
  } catch (e) {
    f.errors++
    console.error(`bench.mjs: exec ${cmd}: ${e.message}`)
    return null
  }
}

const scenarios = {
  async a(sbx) {
    await phaseBegin()
    for (let i = 0; i < count; i++) await execOk(sbx, 'true', '')
    await phaseEnd()
  },
  async b(sbx) {
    await phaseBegin()
    await Promise.all(Array.from({ length: count }, () => execOk(sbx, `sleep ${a.sleep}; echo x`, 'x\n')))
    await phaseEnd()
  },
  async c(sbx) {
    await phaseBegin()
    const r = await execOk(sbx, `head -c ${bytes} /dev/zero | tr '\\0' x`, undefined, { timeoutMs: 600000 })
    await phaseEnd()
    if (r && r.stdout.length !== bytes) f.errors++
    f.note = `kept ${r ? r.stdout.length : 0} of ${bytes} bytes (no cap in the SDK)`
  },
  async d(sbx) {
    const data = randomBytes(bytes)
    const want = createHash('sha256').update(data).digest('hex')
    const path = '/tmp/bench-d.bin'
    await phaseBegin()
    try {
      await sbx.files.write(path, new Uint8Array(data).buffer)
      const back = await sbx.files.read(path, { format: 'bytes' })
      if (back.length !== bytes || createHash('sha256').update(back).digest('hex') !== want)
        throw new Error(`hash mismatch (${back.length} bytes back)`)
    } catch (e) {
      f.errors++
      console.error(`bench.mjs: d: ${e.message}`)
    }
    await phaseEnd()
  },
  async e(sbx) {
    await phaseBegin()
    await Promise.all(Array.from({ length: count }, () => execOk(sbx, `sleep ${a.sleep}`, '')))
    await phaseEnd()
  },
  // g: streamed exec, 100 MiB through onStdout; time to the first streamed byte.
  async g(sbx) {
    let n = 0
    await phaseBegin()
    const r = await execOk(sbx, `head -c ${bytes} /dev/zero | tr '\\0' x`, undefined, {
      timeoutMs: 600000,
      onStdout: (d) => {
        if (f.ttfb_ms < 0) f.ttfb_ms = performance.now() - t0
        n += d.length
      },
    })
    await phaseEnd()
    if (!r || n !== bytes) f.errors++
    f.note = `streamed ${n} of ${bytes} bytes`
  },
  async f() {
    await phaseBegin()
    for (let i = 0; i < count; i++) {
      try {
        const s = await Sandbox.create('capybara-sandbox', { metadata: { name: `bench-f-${process.pid}-${i}` } })
        if (!(await s.kill())) throw new Error('kill returned false')
      } catch (e) {
        f.errors++
        console.error(`bench.mjs: f: ${e.message}`)
      }
    }
    await phaseEnd()
  },
}

let sbx = null
if (a.scenario !== 'f') sbx = await Sandbox.create('capybara-sandbox', { metadata: { name: `bench-node-${process.pid}` } })
try {
  await scenarios[a.scenario](sbx)
} finally {
  if (sbx) await sbx.kill().catch((e) => console.error(`bench.mjs: kill: ${e.message}`))
}
console.log(
  JSON.stringify({
    impl: 'sdk',
    scenario: a.scenario,
    ok: f.errors === 0,
    errors: f.errors,
    wall_ms: f.wall_ms,
    cpu_ms: f.cpu_ms,
    rss_kb: process.resourceUsage().maxRSS,
    server_ms: f.server_ms,
    requests: f.requests,
    ops: f.ops,
    ttfb_ms: f.ttfb_ms,
    note: f.note,
  }),
)
process.exitCode = f.errors === 0 ? 0 : 1
