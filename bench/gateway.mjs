// Bench rows for the Discord Gateway, in workerd with the Gateway stand-in:
//
// 1. A MESSAGE_CREATE (a DM from an allowed person) → the reply POSTed to
//    the Discord stand-in, with an instant LLM, against a Telegram turn
//    (webhook → sendMessage) of the same Hearth, interleaved, each in its own
//    session of the same length. Target: p50 within 5 ms of Telegram's.
// 2. The resident Gateway object's CPU while idle (heartbeats only): workerd
//    user+sys over an idle window with the Gateway connected, minus the same
//    window before it connected, with the stand-in asking for a heartbeat
//    every 500 ms. Per heartbeat, then per hour at Discord's real interval
//    (HELLO's 41,250 ms: 87.3 heartbeats an hour). The object does nothing
//    else while idle: one alarm, one frame out, one frame in per heartbeat.
import { FRIEND, startHearth, tgUpdate } from "../tests/support/hearth.mjs";
import { startDiscord } from "../tests/support/discord.mjs";
import { messageCreate, startGateway } from "../tests/support/discord-gateway.mjs";
import { cpuMeasurable, workerdCpuMeter } from "../tests/support/workerd-cpu.mjs";
import { percentile } from "../tests/support/stats.mjs";

const PERSON = "100000000000000005";
const DM = "400000000000000005";
const ADMIN = "bench-admin";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const sorted = (xs) => [...xs].sort((a, b) => a - b);

async function start(heartbeatMs) {
  const discord = await startDiscord();
  const gw = await startGateway({ token: discord.botToken, heartbeatMs });
  const h = await startHearth({
    bindings: {
      ADMIN_TOKEN: ADMIN,
      DISCORD_GATEWAY: "on",
      DISCORD_GATEWAY_URL: gw.url,
      DISCORD_BOT_TOKEN: discord.botToken,
      DISCORD_API_BASE: discord.base,
      ALLOW_FROM: `telegram:${FRIEND},discord:${PERSON}`,
      USAGE_LEDGER: "off",
    },
  });
  const connect = async () => {
    await h.fetch("/api/agents/main/gateway", { headers: { authorization: `Bearer ${ADMIN}` } });
    await h.until(async () => gw.live() && gw.live().session, { what: "gateway ready", timeoutMs: 20000 });
  };
  const close = async () => {
    await h.close();
    await gw.close();
    await discord.close();
  };
  return { h, gw, discord, connect, close };
}

async function latency({ n = 40, warmup = 10 } = {}) {
  const { h, gw, discord, connect, close } = await start(41250);
  try {
    await connect();
    const gatewayTurn = async (k) => {
      const want = discord.calls("channel").length + 1;
      const t0 = performance.now();
      gw.dispatch("MESSAGE_CREATE", messageCreate({ channel: DM, author: { id: PERSON, username: "pat" }, content: `question ${k}` }));
      await discord.untilCalls("channel", want, { timeoutMs: 20000 });
      return performance.now() - t0;
    };
    const telegramTurn = async (k) => {
      const want = h.telegram.sent().length + 1;
      const t0 = performance.now();
      await h.sendUpdate(tgUpdate({ from: FRIEND, text: `question ${k}` }));
      await h.telegram.untilSent(want, { timeoutMs: 20000 });
      return performance.now() - t0;
    };
    const g = [];
    const t = [];
    for (let k = 0; k < warmup + n; k++) {
      const gm = await gatewayTurn(k);
      const tm = await telegramTurn(k);
      if (k >= warmup) {
        g.push(gm);
        t.push(tm);
      }
    }
    return { n, gateway: sorted(g), telegram: sorted(t) };
  } finally {
    await close();
  }
}

async function idleCpu({ windowMs = 60000, heartbeatMs = 500 } = {}) {
  const { h, gw, connect, close } = await start(heartbeatMs);
  try {
    // Let the boot settle, then the same idle window without and with the Gateway.
    await h.fetch("/health");
    await sleep(3000);
    const meter = workerdCpuMeter();
    let c0 = meter.read();
    await sleep(windowMs);
    const baseline = meter.read() - c0;
    await connect();
    await sleep(3000);
    const beats0 = gw.sent(1).length;
    c0 = meter.read();
    await sleep(windowMs);
    const withGateway = meter.read() - c0;
    const beats = gw.sent(1).length - beats0;
    return { baseline, withGateway, beats, resolution: meter.resolutionMs };
  } finally {
    await close();
  }
}

/** `npm run bench` rows. */
export async function bench() {
  const rows = [];
  const r = await latency();
  const g50 = percentile(r.gateway, 50);
  const t50 = percentile(r.telegram, 50);
  rows.push({
    name: `Gateway MESSAGE_CREATE → reply posted, instant LLM (n=${r.n}, interleaved with Telegram turns)`,
    value: `p50 ${g50.toFixed(1)} ms, p99 ${percentile(r.gateway, 99).toFixed(1)} ms; Telegram turn p50 ${t50.toFixed(1)} ms (Δ ${(g50 - t50).toFixed(1)} ms)`,
    target: `p50 within 5 ms of Telegram's${g50 - t50 <= 5 ? " ✓" : " ✗"}`,
  });
  if (!cpuMeasurable()) {
    rows.push({ name: "Gateway object idle CPU", value: "n/a (reads Linux /proc)" });
    return rows;
  }
  const idle = await idleCpu();
  const perBeat = Math.max(0, idle.withGateway - idle.baseline) / Math.max(1, idle.beats);
  const perHour = perBeat * (3600000 / 41250);
  rows.push({
    name: `Gateway object idle CPU (heartbeats only; ${idle.beats} heartbeats at 500 ms in 60 s, minus 60 s idle without it)`,
    value: `${perBeat.toFixed(2)} ms per heartbeat → ${perHour.toFixed(0)} ms CPU per hour at Discord's 41.25 s (raw: ${idle.withGateway.toFixed(0)} vs ${idle.baseline.toFixed(0)} ms, clock ${idle.resolution} ms)`,
  });
  return rows;
}
