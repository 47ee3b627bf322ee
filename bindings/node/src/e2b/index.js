// Sandbox: the official `e2b` SDK's shape (2.51.0: Sandbox.create / connect /
// list / kill, sbx.commands, sbx.files, pause, setTimeout, getInfo, getMetrics,
// getHost, isRunning, pty, E2B's error classes) over the same engine as
// createE2BSandbox: one `sandbox-e2b serve` child per connection config
// (bindings/protocol/methods.md). What E2B has and serve does not yet is left
// out, not faked; bindings/MIGRATING.md lists every call and difference.
//
// One file a concept, as E2B's SDK splits them: connection.js (the serve child, one call),
// commands.js and commandHandle.js, pty.js, filesystem.js, sandboxApi.js (by id, list, create
// options); its error classes are ../e2b-errors.js.
import { SandboxNotFoundError, InvalidArgumentError } from '../e2b-errors.js'
import { Commands } from './commands.js'
import { DEFAULT_TEMPLATE, DEFAULT_TIMEOUT_MS, clean, resolveConn, rpc, sandboxInfoOf } from './connection.js'
import { Filesystem } from './filesystem.js'
import { Pty } from './pty.js'
import {
  SandboxPaginator,
  UNSUPPORTED_CREATE,
  killById,
  limitsOf,
  metricsById,
  pauseById,
  randomName,
  resumeOrThrow,
  setTimeoutById,
} from './sandboxApi.js'

export { CommandHandle } from './commandHandle.js'
export { closeAll } from './connection.js'
export { WatchHandle } from './filesystem.js'
export { PtyHandle } from './pty.js'
export { SandboxPaginator } from './sandboxApi.js'

export class Sandbox {
  // Use Sandbox.create / Sandbox.connect.
  constructor({ sandboxId, client, domain, conn }) {
    this.sandboxId = sandboxId
    this.sandboxDomain = domain
    this._client = client
    this._conn = conn
    this.commands = new Commands(this)
    this.files = new Filesystem(this)
    this.pty = new Pty(this)
  }

  // create(opts) or create(template, opts): { timeoutMs, metadata, envs, allowInternetAccess,
  // network: { allowOut, denyOut }, apiKey, domain, apiUrl, sandboxUrl, logger, signal,
  // requestTimeoutMs }.
  static async create(templateOrOpts, maybeOpts) {
    const template = typeof templateOrOpts === 'string' ? templateOrOpts : undefined
    const opts = (typeof templateOrOpts === 'string' ? maybeOpts : templateOrOpts) ?? {}
    for (const k of UNSUPPORTED_CREATE) if (opts[k] !== undefined) throw new InvalidArgumentError(`Sandbox.create: ${k} is not in this engine`)
    const tpl = template ?? opts.template ?? process.env.E2B_TEMPLATE ?? DEFAULT_TEMPLATE
    const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
    const { client, domain, conn } = resolveConn(opts, tpl, timeoutMs)
    const params = clean({
      name: randomName(),
      limits: limitsOf(opts),
      timeout_seconds: Math.max(1, Math.ceil(timeoutMs / 1000)),
      env: opts.envs,
      metadata: opts.metadata,
    })
    const r = await rpc(client, 'create', params, opts)
    return new this({ sandboxId: r.id, client, domain, conn })
  }

  // A running or paused sandbox (a paused one is resumed), by id.
  static async connect(sandboxId, opts = {}) {
    const { client, domain, conn } = resolveConn(opts, undefined, opts.timeoutMs)
    await resumeOrThrow(client, sandboxId, opts)
    return new this({ sandboxId, client, domain, conn })
  }

  async connect(opts) {
    await resumeOrThrow(this._client, this.sandboxId, opts)
    return this
  }

  static list(opts) {
    return new SandboxPaginator(opts)
  }

  // true when it was found and killed, false when there was no such sandbox.
  static async kill(sandboxId, opts = {}) {
    return killById(resolveConn(opts).client, sandboxId, opts)
  }

  static async getInfo(sandboxId, opts = {}) {
    return sandboxInfoOf(await rpc(resolveConn(opts).client, 'info', { id: sandboxId }, opts))
  }

  static async setTimeout(sandboxId, timeoutMs, opts = {}) {
    await setTimeoutById(resolveConn(opts).client, sandboxId, timeoutMs, opts)
  }

  static async pause(sandboxId, opts = {}) {
    return pauseById(resolveConn(opts).client, sandboxId, opts)
  }

  static async getMetrics(sandboxId, opts = {}) {
    return metricsById(resolveConn(opts).client, sandboxId, opts)
  }

  async kill(opts) {
    return killById(this._client, this.sandboxId, opts)
  }

  async pause(opts) {
    return pauseById(this._client, this.sandboxId, opts)
  }

  async setTimeout(timeoutMs, opts) {
    await setTimeoutById(this._client, this.sandboxId, timeoutMs, opts)
  }

  async getInfo(opts) {
    return sandboxInfoOf(await rpc(this._client, 'info', { id: this.sandboxId }, opts))
  }

  async getMetrics(opts) {
    return metricsById(this._client, this.sandboxId, opts)
  }

  async isRunning(opts) {
    try {
      return (await rpc(this._client, 'info', { id: this.sandboxId }, opts)).state === 'running'
    } catch (e) {
      if (e instanceof SandboxNotFoundError) return false
      throw e
    }
  }

  // `${port}-${sandboxId}.${domain}`, as E2B's SDK makes it (no request).
  getHost(port) {
    return `${port}-${this.sandboxId}.${this.sandboxDomain}`
  }

  // ---- the engine's, not E2B's: the URL and traffic token serve's `host` gives ----
  async getHostInfo(port, opts) {
    const r = await rpc(this._client, 'host', { id: this.sandboxId, port }, opts)
    return { url: r.url, hostname: r.hostname, port: r.port, trafficToken: r.traffic_token ?? undefined }
  }
}
