// Test helpers: one fake-e2b per test file (tests/peer/fake.mjs starts it),
// a provider pointed at it, and small waits that poll the sandbox instead of
// sleeping. FAKE_E2B and SANDBOX_E2B_BIN come from ctest (or the caller).
import { readdirSync, readFileSync } from 'node:fs'
import { startFake } from '../../../tests/peer/fake.mjs'
import { createE2BSandbox } from '../src/index.js'

export const LIMITS = { cpu: 1, memoryMb: 512, diskMb: 1024, egress: 'none', allowHosts: [] }

export function config(url, extra = {}) {
  return { apiKey: 'e2b_node_test', template: 'capybara-sandbox', apiUrl: url, ...extra }
}

export async function setup() {
  if (!process.env.SANDBOX_E2B_BIN) throw new Error('set SANDBOX_E2B_BIN to the sandbox-e2b binary')
  const fake = await startFake(process.env.FAKE_E2B, { apiKey: 'e2b_node_test' })
  const logs = []
  const log = {
    debug: (m, f) => logs.push(['debug', m, f]),
    info: (m, f) => logs.push(['info', m, f]),
    warn: (m, f) => logs.push(['warn', m, f]),
    error: (m, f) => logs.push(['error', m, f]),
  }
  const provider = createE2BSandbox(config(fake.url), { log }, { envdUrl: fake.url })
  return { fake, provider, logs, url: fake.url }
}

export const sig = () => AbortSignal.timeout(120000)

// Run a shell line in the sandbox and return its stdout.
export async function sh(p, h, command) {
  const r = await p.exec(h, { command, timeoutMs: 60000, maxOutputBytes: 1 << 20, signal: sig() })
  return r.stdout
}

// Poll until fn() is true (every 20 ms, at most `ms`).
export async function until(fn, ms = 30000, what = 'condition') {
  const end = Date.now() + ms
  for (;;) {
    if (await fn()) return
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

// Pids of this process's sandbox-e2b children (the serve child).
export function serveChildren() {
  const out = []
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8')
      const m = /^\d+ \((.*)\) \S+ (\d+)/.exec(stat)
      if (m && m[1] === 'sandbox-e2b' && Number(m[2]) === process.pid) out.push(Number(d))
    } catch {
      // gone meanwhile
    }
  }
  return out
}
