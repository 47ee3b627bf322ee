// bench/relay.test.mjs: the delaying relay holds each direction for RTT/2 and
// keeps every byte in order. Lower bounds only (a loaded machine is slower,
// never faster), exact byte checks.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import http2 from 'node:http2'
import https from 'node:https'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startRelay } from './relay.mjs'

const echo = net.createServer((c) => c.pipe(c))
await new Promise((r) => echo.listen(0, '127.0.0.1', r))
const target = `127.0.0.1:${echo.address().port}`

async function exchange(port, chunks) {
  const s = net.connect({ host: '127.0.0.1', port })
  s.setNoDelay(true)
  await new Promise((r) => s.once('connect', r))
  const want = Buffer.concat(chunks)
  const got = []
  let n = 0
  const t0 = performance.now()
  let first = -1
  const done = new Promise((resolve) =>
    s.on('data', (d) => {
      if (first < 0) first = performance.now() - t0
      got.push(d)
      n += d.length
      if (n >= want.length) resolve()
    }),
  )
  for (const c of chunks) s.write(c)
  await done
  s.destroy()
  return { first, bytes: Buffer.concat(got), want }
}

for (const rtt of [0, 40, 100]) {
  const r = await startRelay({ target, rtt })
  const chunks = Array.from({ length: 50 }, (_, i) => Buffer.alloc(1000 + i * 37, i))
  chunks.push(Buffer.alloc(4 << 20, 7)) // large enough to hit backpressure
  const { first, bytes, want } = await exchange(r.port, chunks)
  assert.equal(bytes.length, want.length, `rtt ${rtt}: byte count`)
  assert.ok(bytes.equals(want), `rtt ${rtt}: bytes in order`)
  // timer slack: setTimeout may fire up to 1 ms early in its own accounting
  assert.ok(first >= rtt - 2, `rtt ${rtt}: first echoed byte after ${first.toFixed(1)} ms`)
  assert.equal(r.connections(), 1)
  r.close()
  console.log(`rtt ${rtt}: first byte back after ${first.toFixed(1)} ms, ${bytes.length} bytes in order`)
}
echo.close()

// --h2: an HTTP/2 (and HTTP/1.1) TLS front forwarding to an HTTP/1.1 backend, bodies streamed
// both ways, hop-by-hop headers dropped, streams of one connection counted.
{
  const dir = mkdtempSync(join(tmpdir(), 'sbx-relay-'))
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore' })
    const ca = readFileSync(join(dir, 'c.pem'))
    const seen = []
    const backend = http.createServer((req, res) => {
      const body = []
      req.on('data', (d) => body.push(d))
      req.on('end', () => {
        seen.push({ method: req.method, url: req.url, host: req.headers.host, pseudo: Object.keys(req.headers).some((k) => k.startsWith(':')) })
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-len': String(Buffer.concat(body).length) })
        res.write(Buffer.alloc(70000, 1)) // more than one h2 DATA frame
        setTimeout(() => res.end(Buffer.concat(body)), 20) // the rest later: streamed, not buffered
      })
    })
    await new Promise((r) => backend.listen(0, '127.0.0.1', r))
    const r = await startRelay({ target: `127.0.0.1:${backend.address().port}`, rtt: 0, cert: join(dir, 'c.pem'), key: join(dir, 'k.pem'), h2: true, maxStreams: 7 })
    const session = http2.connect(`https://127.0.0.1:${r.port}`, { ca })
    const settings = await new Promise((res) => session.once('remoteSettings', res))
    assert.equal(settings.maxConcurrentStreams, 7)
    assert.equal(settings.initialWindowSize, 1 << 20)
    const one = (i) =>
      new Promise((resolve, reject) => {
        const st = session.request({ ':method': 'POST', ':path': `/x/${i}?q=1`, ':authority': `h${i}.example:443` })
        const got = []
        let head
        st.on('response', (h) => (head = h))
        st.on('data', (d) => got.push(d))
        st.on('end', () => resolve({ head, body: Buffer.concat(got) }))
        st.on('error', reject)
        st.end(Buffer.from(`payload-${i}`))
      })
    const answers = await Promise.all([0, 1, 2].map(one))
    for (const [i, a] of answers.entries()) {
      assert.equal(a.head[':status'], 200)
      assert.equal(a.head['x-len'], String(`payload-${i}`.length))
      assert.equal(a.body.length, 70000 + `payload-${i}`.length)
      assert.equal(a.body.subarray(70000).toString(), `payload-${i}`)
    }
    session.close()
    assert.deepEqual(seen.map((x) => [x.method, x.url, x.host, x.pseudo]).sort(), [0, 1, 2].map((i) => ['POST', `/x/${i}?q=1`, `h${i}.example:443`, false]))
    assert.equal(r.stats.h2, 1)
    assert.equal(r.stats.streams, 3)
    assert.equal(r.stats.most, 3)
    // an HTTP/1.1 client of the same relay
    const a1 = await new Promise((resolve, reject) => {
      const req = https.request({ host: '127.0.0.1', port: r.port, path: '/one', method: 'GET', ca, agent: false }, (res) => {
        const got = []
        res.on('data', (d) => got.push(d))
        res.on('end', () => resolve({ status: res.statusCode, len: Buffer.concat(got).length }))
      })
      req.on('error', reject)
      req.end()
    })
    assert.deepEqual(a1, { status: 200, len: 70000 })
    assert.equal(r.stats.http1, 1)
    assert.equal(r.connections(), 2)
    r.close()
    backend.close()
    console.log('h2 front ok: 3 streams on one connection, HTTP/1.1 beside it')

    // The relay closes its idle backend sockets itself (idleMs) before the backend's idle
    // timeout could close one as it is reused; a socket busy with a quiet response is kept.
    let closedAt, lastByte
    const whenClosed = new Promise((res) => (closedAt = res))
    let conns = 0
    const quiet = http.createServer((req, res) => {
      res.writeHead(200)
      setTimeout(() => {
        lastByte = performance.now()
        res.end('late')
      }, 900) // 3 idleMs without a byte
    })
    quiet.keepAliveTimeout = 120000 // so only the relay closes it
    quiet.on('connection', (sock) => ++conns && sock.on('close', () => closedAt(performance.now())))
    await new Promise((res) => quiet.listen(0, '127.0.0.1', res))
    const r2 = await startRelay({ target: `127.0.0.1:${quiet.address().port}`, rtt: 0, cert: join(dir, 'c.pem'), key: join(dir, 'k.pem'), h2: true, idleMs: 300 })
    const s2 = http2.connect(`https://127.0.0.1:${r2.port}`, { ca })
    const late = await new Promise((resolve, reject) => {
      const st = s2.request({ ':method': 'GET', ':path': '/quiet' })
      const got = []
      st.on('data', (d) => got.push(d))
      st.on('end', () => resolve(Buffer.concat(got).toString()))
      st.on('error', reject)
      st.end()
    })
    assert.equal(late, 'late')
    const never = setTimeout(() => assert.fail('the relay kept an idle backend socket 20 s'), 20000)
    const at = await whenClosed // closed by the relay once idle, not while quiet but busy
    clearTimeout(never)
    assert.equal(conns, 1)
    assert.ok(at - lastByte >= 295, `closed ${at - lastByte} ms after its last byte, before idleMs`)
    s2.close()
    r2.close()
    quiet.close()
    console.log('h2 front ok: idle backend sockets closed by the relay, busy ones kept')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
console.log('relay ok')
