// JSON-RPC 2.0 over any byte stream, one JSON object per line (the framing of
// `sandbox-e2b serve`, bindings/protocol/methods.md). Knows ids, the pending
// map, cancellation and notifications; nothing of processes or sandboxes.

export class RpcConnection {
  // write(line): sends one line (with its '\n'); onNotification(method, params)
  // gets notifications not routed to a call; onBusy(busy) says whether any
  // call is pending (the child is kept referenced only then).
  constructor({ write, onNotification = () => {}, onBusy = () => {} }) {
    this.write = write
    this.onNotification = onNotification
    this.onBusy = onBusy
    this.nextId = 1
    this.pending = new Map()
    this.buf = [] // the pieces of an unfinished line
    this.closedError = null
    this.routes = new Map() // request id -> notification handler that outlives the response
  }

  // Send a request. signal: abort sends $/cancelRequest (the call still settles
  // with the server's answer). onNotify(method, params): notifications whose
  // params.id is this call's id (e.g. `output`).
  // onId(id): called with the request's id before it is sent (e.g. to route()).
  request(method, params, { signal, onNotify, onId } = {}) {
    if (this.closedError) return Promise.reject(this.closedError)
    const id = this.nextId++
    onId?.(id)
    return new Promise((resolve, reject) => {
      const onAbort = () => this.notify('$/cancelRequest', { id })
      const entry = {
        resolve,
        reject,
        onNotify,
        done: () => signal?.removeEventListener('abort', onAbort),
      }
      this.pending.set(id, entry)
      if (this.pending.size === 1) this.onBusy(true)
      signal?.addEventListener('abort', onAbort, { once: true })
      try {
        this.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n')
      } catch (e) {
        this.settle(id)
        reject(e)
        return
      }
      if (signal?.aborted) onAbort()
    })
  }

  notify(method, params) {
    if (this.closedError) return
    try {
      this.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n')
    } catch {
      // the stream is gone; close() settles everything
    }
  }

  settle(id) {
    const entry = this.pending.get(id)
    if (!entry) return undefined
    this.pending.delete(id)
    entry.done()
    if (this.pending.size === 0) this.onBusy(false)
    return entry
  }

  // Text read from the stream. Only the new chunk is searched for '\n', so a
  // long line (a big read_file result) costs linear time, not quadratic.
  feed(chunk) {
    let start = 0
    let nl
    while ((nl = chunk.indexOf('\n', start)) >= 0) {
      const line = this.buf.length ? this.buf.join('') + chunk.slice(start, nl) : chunk.slice(start, nl)
      this.buf = []
      start = nl + 1
      if (line.trim() !== '') this.handle(line)
    }
    if (start < chunk.length) this.buf.push(start ? chunk.slice(start) : chunk)
  }

  handle(line) {
    let msg
    try {
      msg = JSON.parse(line)
    } catch {
      return
    }
    if (msg === null || typeof msg !== 'object') return
    if (typeof msg.method === 'string' && msg.id === undefined) {
      const key = msg.params && typeof msg.params === 'object' ? msg.params.id : undefined
      const fn = this.pending.get(key)?.onNotify ?? this.routes.get(key)
      if (fn) fn(msg.method, msg.params)
      else this.onNotification(msg.method, msg.params)
      return
    }
    const entry = this.settle(msg.id)
    if (!entry) return
    if (msg.error !== undefined) entry.reject(Object.assign(new Error('rpc'), { rpc: msg.error }))
    else entry.resolve(msg.result)
  }

  // Keep delivering notifications for request `id` after its response
  // (a background command's output); unroute(id) ends it.
  route(id, fn) {
    this.routes.set(id, fn)
  }

  unroute(id) {
    this.routes.delete(id)
  }

  // The stream ended: every pending call rejects with err, later ones too.
  close(err) {
    this.closedError = err
    this.routes.clear()
    for (const id of [...this.pending.keys()]) this.settle(id).reject(err)
  }
}
