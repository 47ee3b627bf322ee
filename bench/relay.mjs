// bench/relay.mjs: a delaying TCP relay for the latency benchmark
// (bench/README.md "Latency mode").
// This kernel has no netem qdisc, so the latency mode puts this relay between
// the clients and fake-e2b: each direction holds every chunk for RTT/2 before
// passing it on, in order, so one request-response exchange costs one RTT.
// With --tls-cert/--tls-key it also terminates TLS behind the delay (client ->
// delay -> TLS server -> plain TCP to the target), so TLS handshakes pay the
// round trips they pay on a real network. Bench tool code only; loopback only.
// With --h2 the TLS terminator is an HTTP proxy that offers HTTP/2 by ALPN, as
// E2B's edge does (and HTTP/1.1 to clients that ask for it), and forwards every
// request or stream over HTTP/1.1 keep-alive to the target (fake-e2b speaks
// only HTTP/1.1); --max-streams N announces N concurrent streams per
// connection (default 100, E2B's cap).
//
//   node relay.mjs --target HOST:PORT --rtt MS [--port N] [--tls-cert F --tls-key F]
//                  [--h2 [--max-streams N]]
//
// Prints "relay listening on PORT" on stdout when ready; on SIGTERM/SIGINT it
// prints "relay connections N" (client connections accepted), with --h2 also
// "relay h2 connections N streams M most-at-once K http1 connections L", and exits.
import http from 'node:http'
import http2 from 'node:http2'
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

// Hop-by-hop headers: never forwarded (and not allowed in HTTP/2).
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'host', 'http2-settings'])

// An HTTP/2 (and HTTP/1.1) TLS server forwarding every request to `backend`
// over HTTP/1.1 keep-alive, bodies streamed both ways. `stats` counts
// connections by protocol, streams, and the most streams open at once on one.
function h2Proxy({ cert, key, backend, maxStreams, stats, idleMs }) {
  // Idle backend sockets are closed after idleMs (5 s), well before fake-e2b's own 30 s idle timeout
  // (--idle-timeout-s): a socket reused just as the server closed it made a POST fail with
  // ECONNRESET (502 "relay: backend error" to the client; 7 of 256 execs of scenario e whose
  // sockets had been idle the ~30 s since the round before), and a POST is not retried.
  const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity, timeout: idleMs })
  const server = http2.createSecureServer({
    cert: readFileSync(cert),
    key: readFileSync(key),
    allowHTTP1: true,
    // 1 MiB flow-control windows (stream and connection), as Go's HTTP/2 server (E2B's
    // edge is Go) has by default; Node's 64 KiB would cap an upload at 64 KiB per round trip
    settings: { maxConcurrentStreams: maxStreams, initialWindowSize: 1 << 20 },
  })
  server.on('session', (session) => {
    session.setLocalWindowSize(1 << 20)
    stats.h2++
    session.open = 0
    session.on('stream', () => {
      stats.streams++
      session.open++
      if (session.open > stats.most) stats.most = session.open
    })
  })
  server.on('secureConnection', (sock) => {
    sock.setNoDelay(true)
    if (sock.alpnProtocol !== 'h2') stats.http1++
  })
  server.on('tlsClientError', () => {})
  server.on('request', (req, res) => {
    const session = req.stream && req.stream.session
    if (session) req.stream.once('close', () => session.open--)
    const headers = {}
    for (const [k, v] of Object.entries(req.headers)) if (!k.startsWith(':') && !HOP.has(k)) headers[k] = v
    headers.host = req.headers[':authority'] || req.headers.host
    const up = http.request({ ...backend, agent, method: req.method, path: req.url, headers }, (ur) => {
      const out = {}
      for (const [k, v] of Object.entries(ur.headers)) if (!HOP.has(k)) out[k] = v
      res.writeHead(ur.statusCode, out)
      if (res.flushHeaders) res.flushHeaders()
      ur.pipe(res)
      ur.on('error', () => res.destroy())
    })
    up.on('error', () => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain' })
        res.end('relay: backend error')
      } else res.destroy()
    })
    req.pipe(up)
    res.on('close', () => {
      if (!res.writableFinished) up.destroy()
    })
  })
  return server
}

// Start a relay; resolves to { port, server, connections(), stats }.
export async function startRelay({ target, rtt, port = 0, cert, key, h2 = false, maxStreams = 100, idleMs = 5000 }) {
  const [thost, tport] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))]
  const backend = { host: thost, port: tport }
  const stats = { h2: 0, http1: 0, streams: 0, most: 0 }
  let upstream = backend
  let tlsServer = null
  if (cert && h2) {
    tlsServer = h2Proxy({ cert, key, backend, maxStreams, stats, idleMs })
    await new Promise((r) => tlsServer.listen(0, '127.0.0.1', r))
    upstream = { host: '127.0.0.1', port: tlsServer.address().port }
  } else if (cert) {
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
    stats,
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
      h2: { type: 'boolean', default: false },
      'max-streams': { type: 'string', default: '100' },
    },
  })
  if (
    !a.target ||
    !/^\d+(\.\d+)?$/.test(a.rtt) ||
    !!a['tls-cert'] !== !!a['tls-key'] ||
    (a.h2 && !a['tls-cert']) ||
    !/^[1-9]\d*$/.test(a['max-streams'])
  ) {
    console.error('usage: relay.mjs --target HOST:PORT --rtt MS [--port N] [--tls-cert F --tls-key F] [--h2 [--max-streams N]]')
    process.exit(2)
  }
  const r = await startRelay({
    target: a.target,
    rtt: Number(a.rtt),
    port: Number(a.port),
    cert: a['tls-cert'],
    key: a['tls-key'],
    h2: a.h2,
    maxStreams: Number(a['max-streams']),
  })
  console.log(`relay listening on ${r.port}`)
  const stop = () => {
    console.log(`relay connections ${r.connections()}`)
    const s = r.stats
    if (a.h2) console.log(`relay h2 connections ${s.h2} streams ${s.streams} most-at-once ${s.most} http1 connections ${s.http1}`)
    process.exit(0)
  }
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)
}
