// Peer test: envd's process service beyond the basics, through the official e2b SDK (pinned in
// package.json): PTY terminals (data.pty, input, resize through Update) and the end of a Start
// stream when the process exits while a background child still holds its output.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test process.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
let sbx
const enc = new TextEncoder()

before(async () => {
  fake = await startFake(fakePath())
  sbx = await Sandbox.create('base')
})

after(async () => {
  if (sbx) await sbx.kill().catch(() => {})
  if (fake) await fake.stop()
})

// Output of a terminal, and a promise for the first time it contains `text`.
function terminalOutput() {
  const dec = new TextDecoder()
  const o = { text: '', waiters: [] }
  o.onData = (d) => {
    o.text += dec.decode(d, { stream: true })
    o.waiters = o.waiters.filter(([t, res]) => (o.text.includes(t) ? (res(), false) : true))
  }
  o.seen = (t) =>
    o.text.includes(t)
      ? Promise.resolve()
      : new Promise((res, rej) => {
          o.waiters.push([t, res])
          setTimeout(() => rej(new Error(`no ${JSON.stringify(t)} in ${JSON.stringify(o.text)}`)), 20000)
        })
  return o
}

describe('process', { concurrency: false }, () => {
  test('pty: a real terminal of the requested size, input, resize, exit code', T, async () => {
    const out = terminalOutput()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: out.onData, envs: { PEER_X: 'y1' } })
    await sbx.pty.sendInput(term.pid, enc.encode('echo "v=$PEER_X"; tty; stty size\n'))
    await out.seen('24 80')
    assert.match(out.text, /v=y1\r\n/)
    assert.match(out.text, /\/dev\/pts\/\d+\r\n/) // not "not a tty"
    await sbx.pty.resize(term.pid, { cols: 123, rows: 45 })
    await sbx.pty.sendInput(term.pid, enc.encode('stty size; exit 3\n'))
    const r = await term.wait().catch((e) => e)
    assert.equal(r.exitCode, 3)
    assert.match(out.text, /45 123\r\n/)
  })

  test('pty: reconnect to a running terminal and keep typing', T, async () => {
    const out1 = terminalOutput()
    const term = await sbx.pty.create({ cols: 80, rows: 24, onData: out1.onData })
    await sbx.pty.sendInput(term.pid, enc.encode('echo first-$((40+2))\n'))
    await out1.seen('first-42')
    await term.disconnect()
    const out2 = terminalOutput()
    const again = await sbx.pty.connect(term.pid, { onData: out2.onData })
    await sbx.pty.sendInput(term.pid, enc.encode('echo second-$((40+3)); exit\n'))
    const r = await again.wait()
    assert.equal(r.exitCode, 0)
    assert.match(out2.text, /second-43/)
  })

  test('envd 0.6.13 (default): a background child holding the output holds the command', T, async () => {
    const t0 = Date.now()
    const r = await sbx.commands.run('(sleep 3; echo late) & echo started')
    assert.equal(r.stdout, 'started\nlate\n')
    assert.ok(Date.now() - t0 >= 2900, `took ${Date.now() - t0} ms`)
  })

  test('--stream-end exit: a command ends when it exits, though a background child holds its output', T, async () => {
    const saved = { api: process.env.E2B_API_URL }
    const other = await startFake(fakePath(), { args: ['--stream-end', 'exit'] })
    let s2
    try {
      s2 = await Sandbox.create('base')
      await checkEndOnExit(s2)
    } finally {
      if (s2) await s2.kill().catch(() => {})
      await other.stop()
      process.env.E2B_API_URL = saved.api
      process.env.E2B_SANDBOX_URL = saved.api
    }
  })
})

async function checkEndOnExit(sbx) {
  {
    const t0 = Date.now()
    const r = await sbx.commands.run('sleep 30 & echo started')
    assert.equal(r.stdout, 'started\n')
    assert.equal(r.exitCode, 0)
    assert.ok(Date.now() - t0 < 10000, `took ${Date.now() - t0} ms`)
    // the tail of a long output written just before the exit is not lost
    const big = await sbx.commands.run('seq 1 50000; sleep 30 &')
    const lines = big.stdout.split('\n')
    assert.equal(lines.length, 50001)
    assert.equal(lines[49999], '50000')
  }
}
