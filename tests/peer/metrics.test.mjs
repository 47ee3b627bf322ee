// Peer test: sandbox metrics measured, not made up. fake-e2b samples each running sandbox every
// 5 s (E2B's collection interval): CPU from its cgroup's CPU time, memory without page cache and
// the memory limit from its memory cgroup, disk from its root's filesystem (or its own files on a
// shared one). Checked through the npm SDK's getMetrics and a plain GET /sandboxes/metrics:
// memUsed grows by at least what a process allocates and holds (64 MiB), diskUsed by at least a
// 20 MiB file, cpuUsedPct rises while a process spins.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test metrics.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { Sandbox } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
const MiB = 1024 * 1024
let fake
const made = []

before(async () => {
  fake = await startFake(fakePath())
})

after(async () => {
  await Promise.all(made.map((s) => s.kill().catch(() => {})))
  if (fake) await fake.stop()
})

// The first sample taken after `when` (a Date): the sampler takes one every 5 s, so this waits
// for the sampler, at most ~10 s; samples are asked for from the next whole second on, so none
// taken before `when` counts.
async function sampleAfter(sbx, when) {
  const start = new Date(Math.floor(when.getTime() / 1000) * 1000 + 1000)
  const deadline = Date.now() + 30000
  for (;;) {
    const m = await sbx.getMetrics({ start, end: new Date(Math.max(Date.now() + 1000, start.getTime())) })
    if (m.length > 0) return m[m.length - 1]
    assert.ok(Date.now() < deadline, 'no metrics sample within 30 s')
    await new Promise((r) => setTimeout(r, 250))
  }
}

describe('metrics from the sandbox\'s own counters', { concurrency: false }, () => {
  test('a new sandbox has a sample at once, with its limits', T, async () => {
    const sbx = await Sandbox.create('base')
    made.push(sbx)
    const m = await sbx.getMetrics()
    assert.ok(m.length >= 1)
    const last = m[m.length - 1]
    assert.equal(last.cpuCount, 2)
    assert.equal(last.memTotal, 512 * MiB) // the memory cgroup's limit
    assert.ok(last.memUsed > 0 && last.memUsed < last.memTotal, String(last.memUsed))
    assert.ok(last.diskUsed > 0 && last.diskUsed <= last.diskTotal)
    assert.ok(last.cpuUsedPct >= 0 && last.cpuUsedPct <= 100)
  })

  test('memUsed grows by the 64 MiB a process holds; diskUsed by a 20 MiB file', T, async () => {
    const sbx = await Sandbox.create('base')
    made.push(sbx)
    const before = await sampleAfter(sbx, new Date())

    // python3 fills 64 MiB (every page written), says so, and holds it until /tmp/release exists
    let held
    const heldSeen = new Promise((r) => (held = r))
    const hold = await sbx.commands.run(
      'python3 -c "import os, time\n' +
        'b = bytes(range(256)) * (256 * 1024)\n' +
        "print('held', len(b), flush=True)\n" +
        "while not os.path.exists('/tmp/release'): time.sleep(0.05)\n" +
        'print(len(b))"',
      { background: true, onStdout: (d) => d.includes('held 67108864') && held() },
    )
    await heldSeen
    const heldAt = new Date()
    const withHeld = await sampleAfter(sbx, heldAt)
    assert.ok(
      withHeld.memUsed - before.memUsed >= 64 * MiB,
      `memUsed ${before.memUsed} -> ${withHeld.memUsed}`,
    )
    await sbx.files.write('/tmp/release', '')
    assert.equal((await hold.wait()).stdout, 'held 67108864\n67108864\n')

    const w = await sbx.commands.run(
      'dd if=/dev/urandom of=/home/user/twenty bs=1M count=20 conv=fsync status=none && stat -c %s /home/user/twenty',
    )
    assert.equal(w.stdout, `${20 * MiB}\n`)
    const written = await sampleAfter(sbx, new Date())
    assert.ok(
      written.diskUsed - before.diskUsed >= 20 * MiB,
      `diskUsed ${before.diskUsed} -> ${written.diskUsed}`,
    )
    assert.ok(written.diskUsed <= written.diskTotal)
  })

  test('cpuUsedPct rises while a process spins; GET /sandboxes/metrics has the latest sample', T, async () => {
    const sbx = await Sandbox.create('base')
    made.push(sbx)
    const spin = await sbx.commands.run('while [ ! -e /tmp/stop ]; do :; done', { background: true })
    // a sample taken after the spin began, then the next one: its whole interval is spinning
    const first = await sampleAfter(sbx, new Date())
    const busy = await sampleAfter(sbx, new Date(first.timestamp.getTime() + 5000))
    // one of the 2 CPUs busy is 50 %; a loaded host gives the spin less, never next to nothing
    assert.ok(busy.cpuUsedPct >= 5 && busy.cpuUsedPct <= 100, String(busy.cpuUsedPct))
    await sbx.files.write('/tmp/stop', '')
    await spin.wait()

    const r = await fetch(`${fake.url}/sandboxes/metrics?sandbox_ids=${sbx.sandboxId},inosuchsandbox000000`, {
      headers: { 'X-API-Key': fake.apiKey },
    })
    assert.equal(r.status, 200)
    const body = await r.json()
    assert.deepEqual(Object.keys(body), ['sandboxes'])
    assert.deepEqual(Object.keys(body.sandboxes), [sbx.sandboxId])
    const latest = body.sandboxes[sbx.sandboxId]
    assert.deepEqual(Object.keys(latest).sort(), [
      'cpuCount', 'cpuUsedPct', 'diskTotal', 'diskUsed', 'memCache', 'memTotal', 'memUsed', 'timestamp',
      'timestampUnix',
    ])
    assert.equal(latest.timestampUnix, Math.floor(Date.parse(latest.timestamp) / 1000))
    assert.equal(latest.memTotal, 512 * MiB)
    for (const bad of ['', `?sandbox_ids=${sbx.sandboxId},${sbx.sandboxId}`]) {
      const b = await fetch(`${fake.url}/sandboxes/metrics${bad}`, { headers: { 'X-API-Key': fake.apiKey } })
      assert.equal(b.status, 400, bad)
    }
  })
})
