// The bench's channel Worker for GSV (the TypeScript agent the bench compares
// Hearth with; bench/gsv/gsv.mjs runs it). GSV takes messages from channel
// Workers over a service binding (`GatewayEntrypoint.channelInbound`) and
// answers through the channel's own entrypoint (`send`, `setTyping`). This
// one does for GSV what Telegram's webhook and Bot API do for Hearth in the
// same run: a POST in, and the typing action and the answer posted to the
// same Telegram stand-in, so both are timed from a request to the stand-in
// receiving the reply.
//
// Written for the bench; nothing of GSV is in it (GSV's own channels speak
// WhatsApp and Discord).
import { WorkerEntrypoint } from "cloudflare:workers";

const ACCOUNT = "bench";

async function telegram(env, method, body) {
  const res = await fetch(`${env.TELEGRAM_API_BASE}/bot${env.TELEGRAM_BOT_TOKEN}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return res.json();
}

/** GSV's `ChannelWorkerInterface` (gateway/src/channel-interface.ts), the calls GSV makes on a turn. */
export class BenchChannel extends WorkerEntrypoint {
  async send(accountId, message) {
    const r = await telegram(this.env, "sendMessage", { chat_id: Number(message.peer.id), text: message.text });
    return r.ok ? { ok: true, messageId: String(r.result.message_id) } : { ok: false, error: r.description };
  }
  async setTyping(accountId, peer, typing) {
    if (typing) await telegram(this.env, "sendChatAction", { chat_id: Number(peer.id), action: "typing" });
  }
  async start() {
    return { ok: true };
  }
  async stop() {
    return { ok: true };
  }
  async status() {
    return [{ accountId: ACCOUNT, connected: true, authenticated: true }];
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/health") return env.GSV.fetch("http://gsv/health");
    // GSV's settings (its Gateway object's config store), as its web UI's
    // `config.set` writes them.
    if (url.pathname === "/config" && request.method === "POST") {
      const gateway = env.GSV_GATEWAY.get(env.GSV_GATEWAY.idFromName("singleton"));
      for (const [path, value] of Object.entries(await request.json())) await gateway.setConfigPath(path, value);
      return Response.json({ ok: true });
    }
    // A message: `{from, chat?, text, id}`: a DM of person `from`, or with
    // `chat` a message of theirs in that group.
    if (url.pathname === "/inbound" && request.method === "POST") {
      const m = await request.json();
      const who = { id: String(m.from), name: m.name ?? `Person ${m.from}` };
      const peer = m.chat === undefined ? { kind: "dm", ...who } : { kind: "group", id: String(m.chat), name: `Group ${m.chat}` };
      const result = await env.GATEWAY.channelInbound("test", ACCOUNT, {
        messageId: String(m.id),
        peer,
        sender: who,
        text: m.text,
        timestamp: Date.now(),
      });
      return Response.json(result, { status: result.ok ? 200 : 500 });
    }
    return new Response("not found", { status: 404 });
  },
};
