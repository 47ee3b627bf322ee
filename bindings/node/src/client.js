// Client: one `sandbox-e2b serve` child per client, started on the first call
// and again after it dies, initialized with the deployment config; call()
// sends one JSON-RPC request (methods and shapes: bindings/protocol/methods.md).
import { findBinary, startChild } from './child.js'
import { errorFromRpc } from './errors.js'

const LEVELS = new Set(['debug', 'info', 'warn', 'error'])

export class Client {
  // config: the deployment config object (checked by the C parser);
  // envdUrl: envd address override (tests, self-hosted); log: { debug, info,
  // warn, error }; bin: the sandbox-e2b path (default: SANDBOX_E2B_BIN, PATH).
  // logLevel: the lowest library log level sent to `log` ('debug' adds one
  // line per HTTP request; default 'info').
  constructor({ config, envdUrl, log, bin, env, logLevel } = {}) {
    this.config = config
    this.logLevel = logLevel ?? 'info'
    this.envdUrl = envdUrl
    this.log = log
    this.bin = bin
    this.env = env
    this.conn = null
    this.ready = null
  }

  ensure() {
    if (this.conn && !this.conn.exited) return this.ready
    const bin = this.bin ?? findBinary(this.env ?? process.env)
    // With a config of its own the child reads none of the CLI's sources at start, and fills
    // the keys the config leaves out from its E2B_* variables (README "Configuration"): the
    // rule is the engine's, so the child gets the environment as it is.
    const conn = startChild({
      bin,
      args: this.config === undefined ? [] : ['--config-from-initialize'],
      env: this.env,
      log: this.log,
      onNotification: (method, params) => this.onNotification(method, params),
    })
    this.conn = conn
    const params = { log: 'notify', log_level: this.logLevel }
    if (this.config !== undefined) params.config = this.config
    if (this.envdUrl !== undefined) params.envd_url = this.envdUrl
    this.ready = conn.rpc.request('initialize', params).then(
      (r) => {
        conn.errorCodes = r?.error_codes
        return r
      },
      (e) => {
        throw e.rpc ? errorFromRpc(e.rpc) : e
      },
    )
    this.ready.catch(() => {}) // reported to each call
    return this.ready
  }

  onNotification(method, params) {
    if (method !== 'log' || !params) return
    const level = LEVELS.has(params.level) ? params.level : 'info'
    this.log?.[level]?.(params.message, params.fields ?? {})
  }

  // One request: resolves with the result, rejects with a SandboxGoneError,
  // SandboxError or BridgeError. signal: abort sends $/cancelRequest.
  // routeNotify: keep onNotify after the response (returns { result, unroute }).
  async call(method, params, { signal, onNotify, routeNotify } = {}) {
    await this.ensure()
    const conn = this.conn
    const rpc = conn.rpc
    let rid
    const onId = routeNotify ? (id) => ((rid = id), rpc.route(id, onNotify)) : undefined
    try {
      const result = await rpc.request(method, params, { signal, onNotify, onId })
      return routeNotify ? { result, unroute: () => rpc.unroute(rid) } : result
    } catch (e) {
      if (rid !== undefined) rpc.unroute(rid)
      throw e.rpc ? errorFromRpc(e.rpc, conn.errorCodes) : e
    }
  }

  // Initialize result (server, version, methods, config with the key redacted).
  info() {
    return this.ensure()
  }

  // End the child cleanly (calls in flight are aborted by the server).
  close() {
    this.conn?.close()
    this.conn = null
    this.ready = null
  }
}
