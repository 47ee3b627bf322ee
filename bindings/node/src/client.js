// Client: one `sandbox-e2b serve` child per client, started on the first call
// and again after it dies, initialized with the deployment config; call()
// sends one JSON-RPC request (methods and shapes: bindings/protocol/methods.md).
import { findBinary, startChild } from './child.js'
import { errorFromRpc } from './errors.js'

const LEVELS = new Set(['debug', 'info', 'warn', 'error'])

// With a config of its own the child must not also read the CLI's config sources
// (they would only be replaced by initialize, after a warning if invalid).
function withoutConfigSources(env) {
  const e = { ...env }
  for (const k of ['SANDBOX_E2B_CONFIG', 'E2B_API_KEY', 'E2B_TEMPLATE']) delete e[k]
  return e
}

// The rule of every front end (README "Configuration"), as E2B's SDKs do: a key
// the config leaves out is taken from its variable when that is set and not empty.
const ENV_KEYS = [
  ['apiKey', 'E2B_API_KEY'],
  ['template', 'E2B_TEMPLATE'],
  ['apiUrl', 'E2B_API_URL'],
  ['domain', 'E2B_DOMAIN'],
]

export function configWithEnv(config, env) {
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return config
  const c = { ...config }
  for (const [key, name] of ENV_KEYS) if (c[key] === undefined && env[name]) c[key] = env[name]
  return c
}

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
    const env = this.env ?? process.env
    const bin = this.bin ?? findBinary(env)
    const conn = startChild({
      bin,
      env: this.config === undefined ? this.env : withoutConfigSources(env),
      log: this.log,
      onNotification: (method, params) => this.onNotification(method, params),
    })
    this.conn = conn
    const params = { log: 'notify', log_level: this.logLevel }
    if (this.config !== undefined) params.config = configWithEnv(this.config, env)
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
