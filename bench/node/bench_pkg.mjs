// bench/node/bench_pkg.mjs: the Node package (bindings/node, createE2BSandbox
// over `sandbox-e2b serve`) side of the package benchmark (bench/run_pkg.sh).
// One process runs one scenario once against fake-e2b and prints one JSON
// line with the same fields as bench.mjs, plus the serve child's own figures:
//
//   node bench_pkg.mjs --url URL --scenario a|e [--count N] [--sleep S]
//
// a: N sequential execs of `true`; e: N concurrent `sleep S` execs.
// cpu_ms: this Node process only (process.cpuUsage over the phase);
// child_cpu_ms: the serve child over the phase (/proc/PID/stat utime+stime);
// rss_kb: Node's peak RSS; child_rss_kb: the child's (VmHWM); total_rss_kb: both.
import { readFileSync, readdirSync } from 'node:fs'
import { request } from 'node:http'
import { parseArgs } from 'node:util'
import { createE2BSandbox } from '../../bindings/node/src/index.js'

const { values: a } = parseArgs({
  options: {
    url: { type: 'string' },
    scenario: { type: 'string' },
    count: { type: 'string', default: '1' },
    sleep: { type: 'string', default: '0.2' },
  },
})
if (!a.url || !/^[ae]$/.test(a.scenario ?? '')) {
  console.error('usage: bench_pkg.mjs --url URL --scenario a|e [--count N] [--sleep S]')
  process.exit(2)
}
const count = Number(a.count)
const f = { wall_ms: 0, cpu_ms: 0, child_cpu_ms: 0, server_ms: -1, requests: -1, errors: 0 }
const TICK_MS = 10 // USER_HZ 100 on Linux

// The request log through node:http, not fetch: fetch loads undici (~30 MiB of
// RSS) that the package itself never needs.
function http(method, url) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { 'X-API-Key': 'e2b_bench' } }, (res) => {
      let body = ''
      res.setEncoding('utf8')
      res.on('data', (d) => (body += d))
      res.on('end', () => resolve(body))
    })
    req.on('error', reject)
    req.end()
  })
}

function childPid() {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(readFileSync(`/proc/${d}/stat`, 'utf8'))
      if (m && m[1] === 'sandbox-e2b' && Number(m[2]) === process.pid) return Number(d)
    } catch {}
  }
  return 0
}
function childCpuMs(pid) {
  const rest = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(rest[11]) + Number(rest[12])) * TICK_MS
}
function childHwmKb(pid) {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return m ? Number(m[1]) : 0
}

const p = createE2BSandbox({ apiKey: 'e2b_bench', template: 'capybara-sandbox', apiUrl: a.url }, {}, { envdUrl: a.url })
const sig = () => AbortSignal.timeout(600000)
const h = await p.create({
  name: `bench-pkg-${process.pid}`,
  limits: { cpu: 1, memoryMb: 512, diskMb: 1024, egress: 'none', allowHosts: [] },
  signal: sig(),
})
const pid = childPid()
async function execOk(command, expect) {
  try {
    const r = await p.exec(h, { command, timeoutMs: 120000, maxOutputBytes: 1 << 20, signal: sig() })
    if (r.exitCode !== 0 || r.stdout !== expect) throw new Error(`exit ${r.exitCode} stdout ${JSON.stringify(r.stdout.slice(0, 40))}`)
  } catch (e) {
    f.errors++
    console.error(`bench_pkg.mjs: exec ${command}: ${e.message}`)
  }
}

await http('DELETE', `${a.url}/_fake/requests`)
const ccpu0 = childCpuMs(pid)
const cpu0 = process.cpuUsage()
const t0 = performance.now()
if (a.scenario === 'a') for (let i = 0; i < count; i++) await execOk('true', '')
else await Promise.all(Array.from({ length: count }, () => execOk(`sleep ${a.sleep}`, '')))
f.wall_ms = performance.now() - t0
const c = process.cpuUsage(cpu0)
f.cpu_ms = (c.user + c.system) / 1000
f.child_cpu_ms = childCpuMs(pid) - ccpu0
const childRss = childHwmKb(pid)
try {
  const log = JSON.parse(await http('GET', `${a.url}/_fake/requests`))
  f.server_ms = log.reduce((s, r) => s + (r.duration_ms ?? 0), 0)
  f.requests = log.length
} catch (e) {
  console.error(`bench_pkg.mjs: request log: ${e.message}`)
}
await p.destroy(h, sig()).catch((e) => console.error(`bench_pkg.mjs: destroy: ${e.message}`))
p.close()
const rss = process.resourceUsage().maxRSS
console.log(
  JSON.stringify({
    impl: 'pkg',
    scenario: a.scenario,
    ok: f.errors === 0,
    ...f,
    rss_kb: rss,
    child_rss_kb: childRss,
    total_rss_kb: rss + childRss,
  }),
)
process.exitCode = f.errors === 0 ? 0 : 1
