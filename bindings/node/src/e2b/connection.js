// The E2B shape's connection and one call (E2B's SDK: connectionConfig): one Client (one
// `sandbox-e2b serve` child) per distinct config, a call's signal and requestTimeoutMs with
// E2B's error classes, the defaults, and the small conversions every part of the shape shares.
import { Client } from '../client.js'
import { InvalidArgumentError, SandboxError, TimeoutError, toE2BError } from '../e2b-errors.js'

// E2B's default is 'base'; the engine runs commands as its own user in its own template
// (templates/capybara-sandbox), so Sandbox.create() without one takes E2B_TEMPLATE, else that.
export const DEFAULT_TEMPLATE = 'capybara-sandbox'
export const DEFAULT_TIMEOUT_MS = 300_000 // E2B's sandbox timeout
export const DEFAULT_COMMAND_TIMEOUT_MS = 60_000 // E2B's command timeout
export const NO_TIMEOUT_MS = Number.MAX_SAFE_INTEGER // E2B's 0: no limit
// E2B keeps no cap on output or reads; the engine always has one (a result lives in memory).
export const DEFAULT_MAX_OUTPUT_BYTES = 64 << 20
export const DEFAULT_MAX_READ_BYTES = 64 << 20

// ---- connection: one Client (one serve child) per distinct config ----------------------

export const clients = new Map()
// Sandboxes this process paused and did not resume since: a command stream of one that breaks
// broke because of the pause (said as code 'paused', not curl's words).
export const paused = new Set()
// Handles of the commands this process started and still waits for, by sandbox id and pid.
export const live = new Map()
export const liveKey = (sbx, pid) => `${sbx.sandboxId}:${pid}`

// timeoutMs: the sandbox's lifetime. The engine connects before each command or file call (as
// the seed does), which sets the sandbox's end to now + the config's timeoutSeconds (60..86400):
// that is this timeout, so a call never shortens or stretches it past what was asked.
export function resolveConn(opts = {}, template, timeoutMs = DEFAULT_TIMEOUT_MS) {
  const env = process.env
  const apiKey = opts.apiKey ?? env.E2B_API_KEY
  const domain = opts.domain ?? env.E2B_DOMAIN ?? 'e2b.app'
  const apiUrl = opts.apiUrl ?? env.E2B_API_URL ?? `https://api.${domain}`
  const sandboxUrl = opts.sandboxUrl ?? env.E2B_SANDBOX_URL
  const tpl = template ?? env.E2B_TEMPLATE ?? DEFAULT_TEMPLATE
  const timeoutSeconds = Math.min(86400, Math.max(60, Math.ceil(timeoutMs / 1000)))
  const key = JSON.stringify([apiKey ?? null, apiUrl, domain, sandboxUrl ?? null, tpl, timeoutSeconds, opts.bin ?? null])
  let client = clients.get(key)
  if (!client) {
    // allowOpenEgress: E2B's sandboxes reach the internet unless told otherwise.
    const config = { apiUrl, domain, template: tpl, timeoutSeconds, allowOpenEgress: true }
    if (apiKey !== undefined) config.apiKey = apiKey
    client = new Client({ config, envdUrl: sandboxUrl, log: opts.logger, bin: opts.bin })
    clients.set(key, client)
  }
  return { client, domain, conn: { apiKey, domain, apiUrl, sandboxUrl, logger: opts.logger, bin: opts.bin } }
}

// ---- one call: signal, requestTimeoutMs, E2B's error classes ----------------------------

function withTimeout(opts) {
  const signal = opts?.signal
  const ms = opts?.requestTimeoutMs
  if (!ms) return { signal, done: () => {} }
  const ac = new AbortController()
  const t = setTimeout(() => ac.abort(new TimeoutError(`Request timed out after ${ms} ms (requestTimeoutMs)`)), ms)
  t.unref?.()
  if (signal) {
    if (signal.aborted) ac.abort(signal.reason)
    else signal.addEventListener('abort', () => ac.abort(signal.reason), { once: true })
  }
  return { signal: ac.signal, done: () => clearTimeout(t) }
}

export async function rpc(client, method, params, opts, extra = {}) {
  const { signal, done } = withTimeout(opts)
  signal?.throwIfAborted()
  try {
    return await client.call(method, params, { signal, ...extra })
  } catch (e) {
    if (signal?.aborted && e instanceof SandboxError && e.code === 'aborted') throw signal.reason
    throw toE2BError(e)
  } finally {
    done()
  }
}

export function clean(o) {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k]
  return o
}

// E2B's users: 'user' (the template's default) and 'root'; the engine's 'sandbox' and 'root'.
export function userToWire(user) {
  if (user === undefined || user === 'user') return undefined
  if (user === 'root') return 'root'
  throw new InvalidArgumentError(`user must be 'user' or 'root' (this engine has no other users), not ${JSON.stringify(user)}`)
}

export function dateOf(s) {
  if (s === null || s === undefined) return undefined
  // RFC 3339 with 0..9 fraction digits: milliseconds, as E2B's SDK keeps them
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$/.exec(s)
  if (!m) return new Date(s)
  const ms = m[2] ? m[2].slice(0, 3).padEnd(3, '0') : '000'
  return new Date(`${m[1]}.${ms}${m[3]}`)
}

export function sandboxInfoOf(s) {
  return {
    sandboxId: s.id,
    templateId: s.template_id,
    startedAt: dateOf(s.started_at),
    endAt: dateOf(s.end_at),
    state: s.state,
  }
}

// End every serve child the Sandbox shape started (they also end with Node).
export function closeAll() {
  for (const c of clients.values()) c.close()
  clients.clear()
}
