// Peer test: template builds through the official e2b SDK (pinned in package.json).
// Template.build uploads the COPY sources, fake-e2b runs the steps in a sandbox without
// network, and a sandbox of the result boots with the files, user, working directory,
// environment and start command the build left. Also: build errors with their step, tags,
// alias lookup, an image stand-in (--image) and the upload link's signature.
//
// Run: FAKE_E2B=/path/to/fake-e2b node --test template_builds.test.mjs   (or tests/peer/run.sh)
import { after, before, describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BuildError, Sandbox, Template, waitForFile, waitForProcess } from 'e2b'
import { fakePath, startFake } from './fake.mjs'

const T = { timeout: 120000 }
let fake
let context
const sandboxes = []
let seq = 0

const uniqueName = (what) => `peer-${what}-${process.pid}-${++seq}`

async function create(template) {
  const sbx = await Sandbox.create(template)
  sandboxes.push(sbx.sandboxId)
  return sbx
}

async function build(template, name, logs) {
  return Template.build(template, name, { onBuildLogs: logs ? (e) => logs.push(e.message) : undefined })
}

before(async () => {
  fake = await startFake(fakePath(), { args: ['--image', 'debian:stand-in=capybara-sandbox'] })
  context = mkdtempSync(join(tmpdir(), 'peer-build-context-'))
  mkdirSync(join(context, 'app', 'lib'), { recursive: true })
  writeFileSync(join(context, 'app', 'main.txt'), 'main file\n')
  writeFileSync(join(context, 'app', 'lib', 'deep.txt'), 'deep file\n')
  symlinkSync('main.txt', join(context, 'app', 'link.txt'))
  writeFileSync(join(context, 'single.conf'), 'key=value\n')
})

after(async () => {
  for (const id of sandboxes) await Sandbox.kill(id).catch(() => {})
  if (fake) await fake.stop()
  if (context) rmSync(context, { recursive: true, force: true })
})

describe('template builds', { concurrency: false }, () => {
  test('COPY, RUN, ENV, WORKDIR and USER in the build; a sandbox of the result boots with them', T, async () => {
    const name = uniqueName('full')
    const logs = []
    const template = Template({ fileContextPath: context })
      .fromBaseImage()
      .copy('app', 'app')
      .copy('single.conf', '/etc/peer/', { user: 'root', mode: 0o600 })
      .runCmd('cat app/main.txt app/lib/deep.txt > joined.txt && id -un > built-by')
      .setEnvs({ PEER_HOME: '$HOME', PEER_PLAIN: 'plain value' })
      .setUser('builder')
      .setWorkdir('/srv/work')
      .runCmd('pwd > here && echo "$PEER_PLAIN" > env-seen')
    const info = await build(template, name, logs)
    assert.match(info.templateId, /^[a-z0-9]{20}$/)
    assert.match(info.buildId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    assert.deepEqual(info.tags, ['default'])
    assert.ok(logs.includes('[builder 3/7] RUN cat app/main.txt app/lib/deep.txt > joined.txt && id -un > built-by'), logs.join('\n'))
    assert.ok(logs.includes('[builder 5/7] USER builder'), logs.join('\n'))

    const sbx = await create(name)
    const r = await sbx.commands.run('id -un; pwd; echo "$HOME|$PEER_HOME|$PEER_PLAIN|$E2B_TEMPLATE_ID"')
    // ENV values are expanded as root expands them when the step runs (E2B's builder)
    assert.equal(r.stdout, `builder\n/srv/work\n/home/builder|/root|plain value|${info.templateId}\n`)
    const files = await sbx.commands.run(
      'cat /home/user/joined.txt /home/user/built-by here env-seen; readlink /home/user/app/link.txt; ' +
        "stat -c '%U:%G %a' /home/user/app/main.txt /etc/peer/single.conf /srv/work",
      { user: 'root' },
    )
    assert.equal(
      files.stdout,
      'main file\ndeep file\nuser\n/srv/work\nplain value\nmain.txt\nuser:user 644\nroot:root 600\nbuilder:builder 755\n',
    )
    assert.equal(sbx.sandboxId.length, 21)
    const listed = (await Sandbox.getInfo(sbx.sandboxId)).templateId
    assert.equal(listed, info.templateId)
  })

  test('a build has no network: its sandbox cannot reach the host loopback', T, async () => {
    const port = new URL(fake.url).port
    const template = Template()
      .fromTemplate('base')
      .runCmd(`if (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null; then echo reached; exit 1; fi; echo isolated`)
    const logs = []
    await build(template, uniqueName('nonet'), logs)
    assert.ok(logs.includes('[builder 1/1] [stdout]: isolated'), logs.join('\n'))
  })

  test('a failing step fails the build with E2B\'s message and its step number', T, async () => {
    const name = uniqueName('fail')
    const template = Template().fromBaseImage().runCmd('echo fine').runCmd('echo broken >&2; exit 3')
    await assert.rejects(build(template, name), (e) => {
      assert.ok(e instanceof BuildError)
      assert.equal(e.message, "failed to run command 'echo broken >&2; exit 3': exit status 3")
      return true
    })
    const unknownUser = Template().fromBaseImage().runCmd('whoami', { user: 'nobody-here' })
    await assert.rejects(build(unknownUser, uniqueName('nouser')), {
      message: "failed to run command 'whoami': command failed: unauthenticated: invalid username: 'nobody-here'",
    })
    // a failed build leaves no template to start
    await assert.rejects(Sandbox.create(name), /404/)
    // the status names the failed step: steps count from 1, as the SDK's stack traces do
    const bg = await Template.buildInBackground(template, uniqueName('failstep'))
    let st
    for (let i = 0; i < 400 && (!st || st.status === 'building'); i++) {
      st = await Template.getBuildStatus(bg)
      if (st.status === 'building') await new Promise((r) => setTimeout(r, 50))
    }
    assert.equal(st.status, 'error')
    assert.deepEqual(
      { message: st.reason.message, step: st.reason.step },
      { message: "failed to run command 'echo broken >&2; exit 3': exit status 3", step: '2' },
    )
    // and its entries of that step at warn or above (E2B's reason.logEntries)
    assert.deepEqual(
      st.reason.logEntries.map((e) => [e.level, e.message]),
      [['error', "[builder 2/2] failed to run command 'echo broken >&2; exit 3': exit status 3"]],
    )
  })

  test('status: building while a step runs, logs from an offset, unknown build 400', T, async () => {
    // the step never ends: the build stays `building` (fake-e2b's shutdown ends it)
    const template = Template().fromBaseImage().runCmd('sleep 600')
    const info = await Template.buildInBackground(template, uniqueName('poll'))
    const early = await Template.getBuildStatus(info)
    assert.equal(early.status, 'building')
    assert.equal(early.logEntries[0].message, `Building template ${info.templateId}/${info.buildId}`)
    // wait (bounded) until the builder has logged the step it runs
    let entries = []
    for (let i = 0; i < 200 && entries.length < 2; i++) {
      entries = (await Template.getBuildStatus(info, { logsOffset: 1 })).logEntries
      if (entries.length < 2) await new Promise((r) => setTimeout(r, 50))
    }
    assert.deepEqual(
      entries.map((e) => e.message),
      ['[base] FROM e2bdev/base', '[builder 1/1] RUN sleep 600'],
    )
    assert.equal((await Template.getBuildStatus(info)).status, 'building')
    await assert.rejects(
      Template.getBuildStatus({ templateId: info.templateId, buildId: '00000000-0000-4000-8000-000000000000' }),
      /400: Build '00000000-0000-4000-8000-000000000000' not found/, // E2B's words and status
    )
    await assert.rejects(
      Template.getBuildStatus({ templateId: info.templateId, buildId: 'not-a-build' }),
      /400: Invalid build id/,
    )
  })

  test('start and ready commands run in the build and again in each new sandbox', T, async () => {
    const name = uniqueName('start')
    const template = Template()
      .fromBaseImage()
      .setStartCmd('echo "$(id -un) in $PWD" > /tmp/start-ran && exec sleep 600', waitForProcess('sleep'))
    await build(template, name)
    const sbx = await create(name)
    // the ready command (pgrep sleep) succeeded before create answered
    const r = await sbx.commands.run('cat /tmp/start-ran; pgrep -x sleep >/dev/null && echo running')
    assert.equal(r.stdout, 'user in /home/user\nrunning\n')
    // a start command that fails before the ready command succeeds fails the build's finalize
    const broken = Template().fromBaseImage().setStartCmd('exit 7', waitForFile('/nowhere'))
    await assert.rejects(build(broken, uniqueName('badstart')), { message: 'error running start command: exit status 7' })
  })

  test('FROM a built template keeps its user, workdir, environment and files', T, async () => {
    const parent = uniqueName('parent')
    await build(Template().fromBaseImage().setEnvs({ LAYER: 'one' }).setWorkdir('/opt/one').runCmd('echo 1 > mark'), parent)
    const child = uniqueName('child')
    await build(Template().fromTemplate(parent).runCmd('echo "$LAYER-two" >> mark'), child)
    const sbx = await create(child)
    assert.equal((await sbx.commands.run('id -un; pwd; cat mark')).stdout, 'user\n/opt/one\n1\none-two\n')
  })

  test('names, tags and alias lookup', T, async () => {
    const name = uniqueName('tags')
    const v1 = await build(Template().fromBaseImage().runCmd('echo one > /tmp/v'), `${name}:v1`)
    assert.deepEqual(v1.tags, ['v1'])
    const v2 = await build(Template().fromBaseImage().runCmd('echo two > /tmp/v'), `${name}:v2`)
    assert.equal(v2.templateId, v1.templateId)
    assert.notEqual(v2.buildId, v1.buildId)
    assert.equal(await Template.exists(name), true)
    assert.equal(await Template.exists(`${name}-missing`), false)
    assert.equal(await Template.exists('base'), true)

    const assigned = await Template.assignTags(`${name}:v1`, ['stable'])
    assert.deepEqual(assigned, { buildId: v1.buildId, tags: ['stable'] })
    const tags = (await Template.getTags(v1.templateId)).map((t) => `${t.tag}=${t.buildId}`).sort()
    assert.deepEqual(tags, [`stable=${v1.buildId}`, `v1=${v1.buildId}`, `v2=${v2.buildId}`])
    await assert.rejects(Template.assignTags(`${name}:v1`, ':bad'), /400/)
    await Template.removeTags(name, ['v2'])
    assert.deepEqual((await Template.getTags(name)).map((t) => t.tag).sort(), ['stable', 'v1'])

    const stable = await create(`${name}:stable`)
    assert.equal((await stable.commands.run('cat /tmp/v')).stdout, 'one\n')
    await assert.rejects(Sandbox.create(`${name}:v2`), /404/)
  })

  test('fromImage: e2bdev/base is `base`, --image gives a stand-in, any other image is refused at step base', T, async () => {
    const name = uniqueName('standin')
    await build(Template().fromImage('debian:stand-in').runCmd('id -un > /tmp/who'), name)
    const sbx = await create(name)
    assert.equal((await sbx.commands.run('cat /tmp/who; pwd')).stdout, 'sandbox\n/workspace\n')

    await assert.rejects(build(Template().fromImage('alpine:3.20').runCmd('true'), uniqueName('alpine')), {
      message:
        "image 'alpine:3.20' is not available: fake-e2b builds offline, FROM one of its templates (fromTemplate, " +
        "or an image named as the template), E2B's base image e2bdev/base (fromBaseImage) or an image given a " +
        'stand-in with --image',
    })
    await assert.rejects(build(Template().fromTemplate('no-such-parent'), uniqueName('orphan')), {
      message: "template 'no-such-parent' not found",
    })
  })

  test('fromDockerfile: FROM a local template, then COPY, RUN, ENV, WORKDIR and USER', T, async () => {
    const name = uniqueName('dockerfile')
    const dockerfile = [
      'FROM capybara-sandbox',
      'COPY single.conf /workspace/conf/',
      'RUN chmod 640 /workspace/conf/single.conf && echo "built as $(id -un)" > /workspace/built',
      'ENV MODE=docker LEVEL=2',
      'WORKDIR /workspace/conf',
      'USER sandbox',
      'RUN echo "$MODE-$LEVEL as $(id -un) in $PWD" > /workspace/second',
    ].join('\n')
    await build(Template({ fileContextPath: context }).fromDockerfile(dockerfile), name)
    const sbx = await create(name)
    const r = await sbx.commands.run(
      "id -un; pwd; echo $MODE $LEVEL; cat /workspace/built /workspace/second; stat -c '%U %a' single.conf",
    )
    // the SDK runs a Dockerfile's steps as root from / (it adds USER root, WORKDIR /)
    assert.equal(
      r.stdout,
      'sandbox\n/workspace/conf\ndocker 2\nbuilt as root\ndocker-2 as sandbox in /workspace/conf\nroot 640\n',
    )
  })

  test('upload links are signed: a PUT without the right token is refused', T, async () => {
    const headers = { 'X-API-Key': fake.apiKey, 'Content-Type': 'application/json' }
    const made = await (await fetch(`${fake.url}/v3/templates`, { method: 'POST', headers, body: JSON.stringify({ name: uniqueName('link') }) })).json()
    const hash = 'ab'.repeat(32)
    const res = await fetch(`${fake.url}/templates/${made.templateID}/files/${hash}`, { headers })
    assert.equal(res.status, 201)
    const link = await res.json()
    assert.equal(link.present, false)
    const url = new URL(link.url)
    assert.equal(url.origin, fake.url)
    assert.match(url.searchParams.get('token'), /^[0-9a-f]{64}$/)
    url.searchParams.set('token', '0'.repeat(64))
    assert.equal((await fetch(url, { method: 'PUT', body: 'x' })).status, 403)
    assert.equal((await fetch(link.url, { method: 'PUT', body: 'archive bytes' })).status, 200)
    const again = await (await fetch(`${fake.url}/templates/${made.templateID}/files/${hash}`, { headers })).json()
    assert.equal(again.present, true)
    const bad = await fetch(`${fake.url}/templates/${made.templateID}/files/not-a-hash`, { headers })
    assert.equal(bad.status, 400)
  })

  // last: its builds never end and keep their slots until fake-e2b stops
  test('at most 4 builds run at once; the next one waits (status `waiting`)', T, async () => {
    const never = Template().fromBaseImage().runCmd('sleep 600')
    const infos = []
    for (let i = 0; i < 5; i++) infos.push(await Template.buildInBackground(never, uniqueName('queue')))
    const states = []
    for (const info of infos) states.push((await Template.getBuildStatus(info)).status)
    // the status test's build still holds a slot: three of these run, two wait
    assert.deepEqual(states, ['building', 'building', 'building', 'waiting', 'waiting'])
    const queued = await Template.getBuildStatus(infos[4])
    // nothing of it ran yet: no logs, as E2B answers for a build pending its start
    assert.deepEqual(queued.logEntries, [])
  })
})
