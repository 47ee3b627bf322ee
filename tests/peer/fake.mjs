// Start and stop a fake-e2b server for the peer test.
//
// startFake(path, { apiKey, args }) spawns `<path> --port 0 --state-dir <tmp> --api-key KEY
// [args...]` (default key e2b_peer; the server refuses every other key), waits for the
// line `fake-e2b listening on http://127.0.0.1:PORT` on stdout, and points the
// official SDK at it through the environment (docs/internals/wire.md
// "Pointing an SDK at a local server").
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const LISTEN_RE = /fake-e2b listening on (http:\/\/127\.0\.0\.1:\d+)/

export async function startFake(path, { apiKey = 'e2b_peer', args = [] } = {}) {
  if (!path) throw new Error('fake-e2b path missing: set FAKE_E2B or pass it as an argument')
  const stateDir = mkdtempSync(join(tmpdir(), 'peer-fake-e2b-'))
  const child = spawn(path, ['--port', '0', '--state-dir', stateDir, '--ephemeral', '--api-key', apiKey, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  child.stderr.on('data', (d) => {
    log += d
    if (log.length > 1 << 20) log = log.slice(-(1 << 19))
  })
  const url = await new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`fake-e2b did not start in 30 s; stderr:\n${log}`)), 30000)
    child.stdout.on('data', (d) => {
      out += d
      const m = LISTEN_RE.exec(out)
      if (m) {
        clearTimeout(timer)
        resolve(m[1])
      }
    })
    child.on('exit', (code, sig) => {
      clearTimeout(timer)
      reject(new Error(`fake-e2b exited (${code ?? sig}) before listening; stderr:\n${log}`))
    })
    child.on('error', (e) => {
      clearTimeout(timer)
      reject(e)
    })
  })
  child.stdout.resume()
  process.env.E2B_API_KEY = apiKey
  process.env.E2B_API_URL = url
  process.env.E2B_SANDBOX_URL = url
  delete process.env.E2B_DEBUG
  delete process.env.E2B_DOMAIN
  return {
    url,
    apiKey,
    stderr: () => log,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGTERM')
        const t = setTimeout(() => child.kill('SIGKILL'), 15000)
        await exited
        clearTimeout(t)
      }
      try {
        rmSync(stateDir, { recursive: true, force: true })
      } catch {
        // a sandbox root may still be busy; the OS tmp cleaner takes it
      }
    },
  }
}

export function fakePath() {
  return process.env.FAKE_E2B || process.argv.slice(2).find((a) => !a.startsWith('-'))
}
