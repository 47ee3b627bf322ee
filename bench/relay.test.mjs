// bench/relay.test.mjs: the delaying relay holds each direction for RTT/2 and
// keeps every byte in order. Lower bounds only (a loaded machine is slower,
// never faster), exact byte checks.
import assert from 'node:assert/strict'
import net from 'node:net'
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
console.log('relay ok')
