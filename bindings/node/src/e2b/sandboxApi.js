// The calls on a sandbox by id that Sandbox's static and instance methods share, the list's
// paginator, and the create options (E2B's SDK: sandbox/sandboxApi).
import { randomUUID } from 'node:crypto'
import { InvalidArgumentError, SandboxNotFoundError } from '../e2b-errors.js'
import { clean, paused, resolveConn, rpc, sandboxInfoOf } from './connection.js'

// E2B's SandboxPaginator over serve's list (which follows E2B's pages to the end): the first
// nextItems() takes the list once, later pages come from it. nextToken is an offset into it.
export class SandboxPaginator {
  constructor(opts = {}) {
    const q = opts.query ?? {}
    if (q.metadata && Object.keys(q.metadata).length) {
      throw new InvalidArgumentError('Sandbox.list: query.metadata is not in serve yet (its list filters by state only)')
    }
    if (opts.limit !== undefined && (!Number.isInteger(opts.limit) || opts.limit < 1)) throw new InvalidArgumentError('limit must be a positive integer')
    this._opts = opts
    this._limit = opts.limit ?? 100
    this._hasNext = true
    this._nextToken = opts.nextToken
    this._all = null
  }

  get hasNext() {
    return this._hasNext
  }
  get nextToken() {
    return this._nextToken
  }

  async nextItems(opts) {
    if (!this._hasNext) throw new Error('No more items to fetch')
    if (!this._all) {
      const q = this._opts.query ?? {}
      const states = q.state ?? ['running', 'paused']
      const state = states.includes('running') && states.includes('paused') ? 'any' : states[0] ?? 'any'
      const { client } = resolveConn(this._opts)
      const r = await rpc(client, 'list', { state, all: true }, { ...this._opts, ...opts })
      let all = r.map(sandboxInfoOf)
      if (q.template !== undefined) all = all.filter((s) => s.templateId === q.template)
      if (q.startedAfter !== undefined) all = all.filter((s) => s.startedAt && s.startedAt >= q.startedAfter)
      if (this._opts.order === 'asc') all.reverse()
      this._all = all
    }
    const from = this._nextToken === undefined ? 0 : Number(this._nextToken)
    if (!Number.isInteger(from) || from < 0) throw new InvalidArgumentError('nextToken is not one this paginator gave')
    const page = this._all.slice(from, from + this._limit)
    if (from + this._limit < this._all.length) this._nextToken = String(from + this._limit)
    else {
      this._nextToken = undefined
      this._hasNext = false
    }
    return page
  }
}

export function limitsOf(opts) {
  const net = opts.network
  if (net) {
    const known = new Set(['allowOut', 'denyOut'])
    for (const k of Object.keys(net)) {
      if (net[k] !== undefined && !known.has(k)) throw new InvalidArgumentError(`network.${k} is not in this engine (egress is none, an allowlist of hosts, or open)`)
    }
    const deny = net.denyOut ?? []
    const allow = net.allowOut ?? []
    if (allow.length || deny.length) {
      if (deny.length !== 1 || deny[0] !== '0.0.0.0/0') {
        throw new InvalidArgumentError("network: this engine takes allowOut with denyOut ['0.0.0.0/0'] (an allowlist), or denyOut ['0.0.0.0/0'] alone")
      }
      if (opts.allowInternetAccess === true) throw new InvalidArgumentError('allowInternetAccess: true contradicts denyOut 0.0.0.0/0')
      return allow.length ? { egress: 'allowlist', allow_hosts: [...allow] } : { egress: 'none' }
    }
  }
  return { egress: opts.allowInternetAccess === false ? 'none' : 'open' }
}

export const UNSUPPORTED_CREATE = ['mcp', 'volumeMounts', 'iam', 'lifecycle']

// The engine's create takes a name and replaces a sandbox of the same name: each E2B-shape
// create gets one of its own (E2B's sandboxes have none).
export function randomName() {
  return `e2b-${randomUUID()}`
}

export async function resumeOrThrow(client, id, opts) {
  const r = await rpc(client, 'resume', { id }, opts)
  if (r.status === 'gone') throw new SandboxNotFoundError(`Sandbox ${id} not found`)
  paused.delete(id)
}

export async function killById(client, id, opts) {
  try {
    await rpc(client, 'info', { id }, opts)
  } catch (e) {
    if (e instanceof SandboxNotFoundError) return false
    throw e
  }
  await rpc(client, 'destroy', { id }, opts)
  paused.delete(id)
  return true
}

export async function pauseById(client, id, opts) {
  const info = await rpc(client, 'info', { id }, opts)
  if (info.state === 'paused') return false
  paused.add(id)
  try {
    await rpc(client, 'suspend', { id }, opts)
  } catch (e) {
    paused.delete(id)
    throw e
  }
  return true
}

export async function setTimeoutById(client, id, timeoutMs, opts) {
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new InvalidArgumentError('timeoutMs must be a positive number of milliseconds')
  await rpc(client, 'set_timeout', { id, timeout_seconds: Math.ceil(timeoutMs / 1000) }, opts)
}

export async function metricsById(client, id, opts = {}) {
  const secs = (d) => (d === undefined ? undefined : Math.floor(d.getTime() / 1000))
  const r = await rpc(client, 'metrics', clean({ id, start: secs(opts.start), end: secs(opts.end) }), opts)
  return r.metrics.map((m) => ({
    timestamp: new Date(m.timestamp_unix * 1000),
    cpuUsedPct: m.cpu_used_pct,
    cpuCount: m.cpu_count,
    memUsed: m.mem_used,
    memTotal: m.mem_total,
    memCache: m.mem_cache,
    diskUsed: m.disk_used,
    diskTotal: m.disk_total,
  }))
}
