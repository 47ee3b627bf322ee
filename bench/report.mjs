// bench/report.mjs: turn the JSON lines of bench_c and bench.mjs (one per run)
// into the markdown table of bench/run.sh. Usage: node report.mjs results.jsonl
import { readFileSync } from 'node:fs'

const SCEN = {
  a: 'a: sequential execs of `true`',
  b: 'b: concurrent `sleep; echo x`',
  c: 'c: one exec, big stdout',
  d: 'd: write + read random file',
  e: 'e: in-flight `sleep` execs',
  f: 'f: create + destroy sandboxes',
  g: 'g: streamed exec through a callback',
}
const CONCURRENT = new Set(['b', 'e'])

const rows = readFileSync(process.argv[2], 'utf8')
  .split('\n')
  .filter((l) => l.trim().startsWith('{'))
  .map((l) => JSON.parse(l))
  .filter((r) => !r.skipped)

const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y)
  const m = s.length >> 1
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const fmt = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2))
const cell = (xs) => (xs.length ? `${fmt(median(xs))} (${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))})` : 'n/a')

const FIGS = [
  ['wall ms', (r) => r.wall_ms],
  ['server ms (Σ duration_ms)', (r) => (r.server_ms >= 0 ? r.server_ms : undefined)],
  ['server ms per request (mean)', (r) => (r.server_ms >= 0 && r.requests > 0 ? r.server_ms / r.requests : undefined)],
  ['client overhead ms (wall − server)', (r, s) => (CONCURRENT.has(s) || r.server_ms < 0 ? undefined : r.wall_ms - r.server_ms)],
  ['time to first streamed byte ms', (r) => (r.ttfb_ms >= 0 ? r.ttfb_ms : undefined)],
  ['client CPU ms (user+sys)', (r) => r.cpu_ms],
  ['client CPU ms per op', (r) => (r.ops > 1 ? r.cpu_ms / r.ops : undefined)],
  ['client peak RSS MiB', (r) => r.rss_kb / 1024],
  ['requests', (r) => (r.requests >= 0 ? r.requests : undefined)],
  ['requests per op', (r) => (r.requests >= 0 && r.ops > 1 ? r.requests / r.ops : undefined)],
]

const out = []
out.push('| scenario | figure | C median (min–max) | SDK median (min–max) | C/SDK |')
out.push('|---|---|---|---|---|')
const notes = []
for (const s of Object.keys(SCEN)) {
  const c = rows.filter((r) => r.scenario === s && r.impl === 'c')
  const n = rows.filter((r) => r.scenario === s && r.impl === 'sdk')
  if (!c.length && !n.length) continue
  const okc = c.filter((r) => r.ok)
  const okn = n.filter((r) => r.ok)
  let first = true
  for (const [name, get] of FIGS) {
    const xc = okc.map((r) => get(r, s)).filter((x) => x !== undefined)
    const xn = okn.map((r) => get(r, s)).filter((x) => x !== undefined)
    if (!xc.length && !xn.length) continue
    const ratio = xc.length && xn.length && median(xn) !== 0 ? (median(xc) / median(xn)).toFixed(2) : 'n/a'
    out.push(`| ${first ? SCEN[s] : ''} | ${name} | ${cell(xc)} | ${cell(xn)} | ${ratio} |`)
    first = false
  }
  const bad = [...c, ...n].filter((r) => !r.ok)
  const runs = `${s}: runs C ${okc.length}/${c.length} ok, SDK ${okn.length}/${n.length} ok`
  const extra = [...new Set([...c, ...n].map((r) => r.note && `${r.impl}: ${r.note}`).filter(Boolean))]
  notes.push(`- ${runs}${extra.length ? '; ' + extra.slice(0, 2).join('; ') : ''}${bad.length ? ' (failed runs excluded)' : ''}`)
}
console.log(out.join('\n'))
console.log('\n' + notes.join('\n'))
const failed = rows.filter((r) => !r.ok).length
if (failed) console.log(`\n${failed} run(s) failed; see the log above.`)
