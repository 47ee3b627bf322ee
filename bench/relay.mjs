// bench/relay.mjs: a delaying TCP relay for the latency benchmark (issue 13).
// This kernel has no netem qdisc, so the latency mode puts this relay between
// the clients and fake-e2b: each direction holds every chunk for RTT/2 before
// passing it on, in order, so one request-response exchange costs one RTT.
// With --tls-cert/--tls-key it also terminates TLS behind the delay (client ->
// delay -> TLS server -> plain TCP to the target), so TLS handshakes pay the
// round trips they pay on a real network. Bench tool code only; loopback only.
//
//   node relay.mjs --target HOST:PORT --rtt MS [--port N] [--tls-cert F --tls-key F]
//
// Prints "relay listening on PORT" on stdout when ready; on SIGTERM/SIGINT it
// prints "relay connections N" (client connections accepted) and exits.
import net from 'node:net'
import tls from 'node:tls'
import { readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'

// Forward src to dst, every chunk (and the end) held for `delay` ms, in order.
// Backpressure: src pauses while dst's buffer is full.
export function delayPipe(src, dst, delay) {
  const queue = [] // [due, chunk | null (end)]
  let timer = null
  let blocked = false
  const send = (chunk) => {
    if (chunk === null) return dst.end()
    if (!dst.write(chunk) && !blocked) {
      blocked = true
      src.pause()
      dst.once('drain', () => {
        blocked = false
        src.resume()
      })
    }
  }
  const flush = () => {
    timer = null
    const now = performance.now()
    while (queue.length && queue[0][0] <= now + 0.5) {
      const [, chunk] = queue.shift()
      if (dst.destroyed) return
      send(chunk)
    }
    if (queue.length) timer = setTimeout(flush, Math.max(0, queue[0][0] - performance.now()))
  }
  const push = (chunk) => {
    if (delay <= 0 && !queue.length) return send(chunk)
    queue.push([performance.now() + delay, chunk])
    if (!timer) timer = setTimeout(flush, delay)
  }
  src.on('data', (c) => push(c))
  src.on('end', () => push(null))
}

// Start a relay; resolves to { port, server, connections() }.
export async function startRelay({ target, rtt, port = 0, cert, key }) {
  const [thost, tport] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))]
  const backend = { host: thost, port: tport }
  let upstream = backend
  let tlsServer = null
  if (cert) {
    // TLS terminator behind the delay: decrypted bytes go straight to the target.
    tlsServer = tls.createServer({ cert: readFileSync(cert), key: readFileSync(key) }, (c) => {
      c.setNoDelay(true)
      const u = net.connect(backend, () => u.setNoDelay(true))
      c.pipe(u)
      u.pipe(c)
      c.on('error', () => u.destroy())
      u.on('error', () => c.destroy())
      c.on('close', () => u.destroy())
      u.on('close', () => c.destroy())
    })
    tlsServer.on('tlsClientError', () => {})
    await new Promise((r) => tlsServer.listen(0, '127.0.0.1', r))
    upstream = { host: '127.0.0.1', port: tlsServer.address().port }
  }
  let n = 0
  const half = rtt / 2
  const server = net.createServer((c) => {
    n++
    c.setNoDelay(true)
    const u = net.connect(upstream, () => u.setNoDelay(true))
    delayPipe(c, u, half)
    delayPipe(u, c, half)
    const both = () => {
      c.destroy()
      u.destroy()
    }
    c.on('error', both)
    u.on('error', both)
    c.on('close', () => setTimeout(() => u.destroy(), half))
    u.on('close', () => setTimeout(() => c.destroy(), half))
  })
  await new Promise((r) => server.listen(port, '127.0.0.1', r))
  return {
    port: server.address().port,
    connections: () => n,
    close: () => {
      server.close()
      if (tlsServer) tlsServer.close()
    },
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values: a } = parseArgs({
    options: {
      target: { type: 'string' },
      rtt: { type: 'string', default: '0' },
      port: { type: 'string', default: '0' },
      'tls-cert': { type: 'string' },
      'tls-key': { type: 'string' },
    },
  })
  if (!a.target || !/^\d+(\.\d+)?$/.test(a.rtt) || !!a['tls-cert'] !== !!a['tls-key']) {
    console.error('usage: relay.mjs --target HOST:PORT --rtt MS [--port N] [--tls-cert F --tls-key F]')
    process.exit(2)
  }
  const r = await startRelay({
    target: a.target,
    rtt: Number(a.rtt),
    port: Number(a.port),
    cert: a['tls-cert'],
    key: a['tls-key'],
  })
  console.log(`relay listening on ${r.port}`)
  const stop = () => {
    console.log(`relay connections ${r.connections()}`)
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}
