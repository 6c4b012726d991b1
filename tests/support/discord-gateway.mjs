// A Discord Gateway stand-in: a local WebSocket server that speaks the
// Gateway's protocol (API v10, JSON, no compression) as Discord's docs say:
// HELLO with a heartbeat interval; IDENTIFY checked (token, intents,
// properties) and answered with READY (session id, resume_gateway_url, the
// bot's user); heartbeats acknowledged; RESUME replays what the session
// missed, or is refused with INVALID_SESSION; close 4004 for a bad token,
// 4014 when the privileged MESSAGE_CONTENT intent is not enabled for the bot,
// 4002/4003 for frames sent out of order. Tests drive it: dispatch events,
// ask for a RECONNECT, stop acknowledging heartbeats, refuse the next resume,
// drop the connection (1006) or close it with a code (4000 resumes, 4009
// ends the session), close 4009 right after READY, and queue events that
// happen while the bot is disconnected (replayed when it resumes).
import { WebSocketServer } from "ws";

export const INTENTS = { GUILD_MESSAGES: 1 << 9, DIRECT_MESSAGES: 1 << 12, MESSAGE_CONTENT: 1 << 15 };

export async function startGateway({ token = "test-bot-token", botId = "1016612301262041098", heartbeatMs = 41250, messageContentEnabled = true } = {}) {
  const state = {
    token,
    botId,
    heartbeatMs,
    messageContentEnabled,
    connections: [],
    frames: [], // every frame received: {conn, op, d, at}
    sessions: new Map(), // session id → {seq, events: [frames]}
    ackHeartbeats: true,
    refuseNextResume: false,
    closeAfterReady: 0, // this many next READYs are followed at once by close 4009
    lastSession: null, // the session of the last identified connection
    closes: [], // {conn, code, by}
  };
  let sessionSeq = 0;
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
  await new Promise((r) => wss.on("listening", r));
  const url = `ws://127.0.0.1:${wss.address().port}`;

  wss.on("connection", (ws, req) => {
    const conn = { id: state.connections.length + 1, ws, path: req.url, session: null, identified: false, open: true, heartbeats: 0 };
    state.connections.push(conn);
    const send = (frame) => conn.open && ws.send(JSON.stringify(frame));
    const close = (code, reason) => {
      state.closes.push({ conn: conn.id, code, by: "server" });
      ws.close(code, reason);
    };
    const dispatch = (t, d) => {
      const s = state.sessions.get(conn.session);
      s.seq += 1;
      const frame = { op: 0, t, s: s.seq, d };
      s.events.push(frame);
      send(frame);
    };
    conn.dispatch = dispatch;
    ws.on("close", (code) => {
      conn.open = false;
      if (!state.closes.some((c) => c.conn === conn.id)) state.closes.push({ conn: conn.id, code, by: "client" });
    });
    send({ op: 10, d: { heartbeat_interval: state.heartbeatMs, _trace: ['["gateway-standin",{"micros":0.0}]'] }, s: null, t: null });
    ws.on("message", (raw) => {
      let f;
      try {
        f = JSON.parse(raw.toString());
      } catch {
        return close(4002, "Error while decoding payload.");
      }
      state.frames.push({ conn: conn.id, op: f.op, d: f.d, at: Date.now() });
      switch (f.op) {
        case 1:
          conn.heartbeats += 1;
          if (state.ackHeartbeats) send({ op: 11 });
          return;
        case 2: {
          const d = f.d ?? {};
          if (conn.identified) return close(4005, "Already authenticated.");
          if (d.token !== state.token) return close(4004, "Authentication failed.");
          if (typeof d.intents !== "number" || !d.properties?.os || !d.properties?.browser || !d.properties?.device) {
            return close(4002, "Error while decoding payload.");
          }
          if ((d.intents & INTENTS.MESSAGE_CONTENT) && !state.messageContentEnabled) return close(4014, "Disallowed intent(s).");
          conn.identified = true;
          conn.intents = d.intents;
          const id = `session-${++sessionSeq}`;
          state.sessions.set(id, { seq: 0, events: [] });
          conn.session = id;
          state.lastSession = id;
          dispatch("READY", {
            v: 10,
            user: { id: state.botId, username: "Hearth", discriminator: "0", bot: true, avatar: null, global_name: null },
            session_type: "normal",
            session_id: id,
            resume_gateway_url: `${url}/resume`,
            guilds: [],
            application: { id: state.botId, flags: 0 },
          });
          if (state.closeAfterReady > 0) {
            state.closeAfterReady -= 1;
            close(4009, "Session timed out.");
          }
          return;
        }
        case 6: {
          const d = f.d ?? {};
          if (d.token !== state.token) return close(4004, "Authentication failed.");
          const s = state.sessions.get(d.session_id);
          if (!s || state.refuseNextResume) {
            state.refuseNextResume = false;
            if (s) state.sessions.delete(d.session_id);
            return send({ op: 9, d: false });
          }
          conn.identified = true;
          conn.session = d.session_id;
          conn.resumed = true;
          state.lastSession = d.session_id;
          // Replay what the session missed, then RESUMED.
          for (const ev of s.events.filter((e) => e.s > d.seq)) send(ev);
          dispatch("RESUMED", {});
          return;
        }
        default:
          return close(4001, "Unknown opcode.");
      }
    });
  });

  const live = () => [...state.connections].reverse().find((c) => c.open && c.identified);
  return {
    url,
    state,
    /** Frames the client sent with opcode `op`. */
    sent: (op) => state.frames.filter((f) => f.op === op),
    live,
    /** Dispatches an event on the live connection. */
    dispatch(t, d) {
      const c = live();
      if (!c) throw new Error("no identified connection");
      c.dispatch(t, d);
    },
    /** Asks the client to reconnect (op 7). */
    reconnect() {
      live()?.ws.send(JSON.stringify({ op: 7, d: null }));
    },
    /** Drops the live connection without a close frame (the client sees 1006). */
    drop() {
      const c = live();
      c.open = false;
      c.ws.terminate();
    },
    /** Closes the live connection from the server's side with `code`. */
    closeWith(code, reason = "") {
      const c = live();
      if (!c) throw new Error("no identified connection");
      state.closes.push({ conn: c.id, code, by: "server" });
      c.open = false;
      c.ws.close(code, reason);
    },
    /** An event of the last session while no connection is open: sent only when the session resumes. */
    queue(t, d) {
      const s = state.sessions.get(state.lastSession);
      if (!s) throw new Error("no session to queue in");
      s.seq += 1;
      s.events.push({ op: 0, t, s: s.seq, d });
    },
    close: () =>
      new Promise((r) => {
        for (const c of state.connections) c.ws.terminate();
        wss.close(r);
      }),
  };
}

let msgSeq = 0n;
/** A MESSAGE_CREATE `d` as the Gateway sends it (the shape of the real frames in fixtures/real-world/discord). */
export function messageCreate({ channel, guild, author, content, mentions = [], replyTo = null, attachments = [] }) {
  msgSeq += 1n;
  return {
    type: replyTo ? 19 : 0,
    tts: false,
    timestamp: new Date().toISOString(),
    referenced_message: replyTo,
    ...(replyTo ? { message_reference: { type: 0, message_id: replyTo.id, channel_id: channel, ...(guild ? { guild_id: guild } : {}) } } : {}),
    pinned: false,
    nonce: String(1400000000000000000n + msgSeq),
    mentions,
    mention_roles: [],
    mention_everyone: false,
    ...(guild ? { member: { roles: [], nick: null, joined_at: "2024-01-01T00:00:00.000000+00:00", deaf: false, mute: false, flags: 0 } } : {}),
    id: String(1500000000000000000n + msgSeq),
    flags: 0,
    embeds: [],
    edited_timestamp: null,
    content,
    components: [],
    channel_id: channel,
    author: { id: author.id, username: author.username, global_name: author.name ?? null, discriminator: "0", avatar: null, public_flags: 0, ...(author.bot ? { bot: true } : {}) },
    attachments,
    ...(guild ? { guild_id: guild } : {}),
  };
}
