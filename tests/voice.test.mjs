// End to end: voice replies. The TTS endpoint is the LLM stand-in's
// OpenAI-compatible /audio/speech; Telegram's stand-in takes sendVoice as
// multipart with an OGG file, as the Bot API does.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import { FRIEND, OWNER, startHearth, tgUpdate } from "./support/hearth.mjs";
import { serveFile, voiceUpdate } from "./support/media.mjs";

const ADMIN = "voice-admin";
let h;
before(async () => {
  h = await startHearth({
    bindings: ({ llm }) => ({
      TRANSCRIBE_BASE_URL: `${llm.base}/v1`,
      TTS_BASE_URL: `${llm.base}/v1`,
      TTS_API_KEY: "tts-key",
      TTS_MODEL: "tts-1",
      TTS_VOICE: "nova",
      TTS_MAX_CHARS: "200",
      ADMIN_TOKEN: ADMIN,
      USAGE_SETTLE_MS: "0",
    }),
  });
});
after(() => h.close());
beforeEach(() => h.reset());

const texts = (chat) => h.telegram.sent().filter((r) => Number(r.body.chat_id) === chat).map((r) => r.body.text);
const voices = (chat) => h.telegram.calls("sendVoice").filter((r) => Number(r.body.chat_id) === chat);
const oggNote = () => {
  const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(2000, 7)]);
  return voiceUpdate(serveFile(h, ogg, "oga"), ogg.length, { from: FRIEND });
};

describe("voice replies", () => {
  test("a voice note is answered with the text and a voice note of it (Ogg/Opus from /audio/speech)", async () => {
    h.llm.push({ text: "**Done**: I noted the plants." });
    const note = oggNote();
    await h.sendUpdate(note);
    await h.until(() => voices(FRIEND).length === 1, { what: "the voice note" });
    assert.deepEqual(texts(FRIEND), ["<b>Done</b>: I noted the plants."], "the text comes too");
    const [speech] = h.llm.state.speech;
    assert.equal(speech.headers.authorization, "Bearer tts-key");
    assert.deepEqual(speech.body, { model: "tts-1", voice: "nova", input: "Done: I noted the plants.", response_format: "opus" });
    const [v] = voices(FRIEND);
    assert.equal(v.files.voice.contentType, "audio/ogg");
    // In a private chat too, the voice note replies to the message it answers.
    const reply = JSON.parse(v.body.reply_parameters ?? "null");
    assert.equal(reply?.message_id, note.message.message_id, `reply_parameters: ${v.body.reply_parameters}`);
    assert.equal(reply.allow_sending_without_reply, true);
    assert.equal(h.telegram.sent().filter((r) => Number(r.body.chat_id) === FRIEND)[0].body.reply_parameters, undefined,
      "the text answer in a private chat quotes nothing");
    assert.ok(v.files.voice.bytes.subarray(0, 4).equals(Buffer.from("OggS")));
    // The ledger prices the speech per character (tts-1: $15 per million).
    await h.settle(`agent:main:telegram:dm:${FRIEND}`);
    const usage = await (await h.fetch("/api/agents/main/usage?period=today", { headers: { authorization: `Bearer ${ADMIN}` } })).json();
    const tts = usage.byKind.tts;
    assert.equal(tts.calls, 1);
    assert.equal(tts.promptTokens, "Done: I noted the plants.".length);
    assert.ok(Math.abs(tts.cost - 25 * 15 / 1e6) < 1e-9, JSON.stringify(tts));
  });

  test("/voice on speaks every answer, a long one by its opening; /voice off stops it, voice notes too", async () => {
    await h.sendUpdate(tgUpdate({ text: "/voice on" }));
    await h.until(() => texts(OWNER).length === 1, { what: "the /voice answer" });
    assert.match(texts(OWNER)[0], /Voice replies on/);
    assert.equal(h.llm.requests.length, 0, "no LLM call for /voice");
    const long = "This is the first point. ".repeat(20) + "And the end.";
    h.llm.push({ text: long });
    await h.sendUpdate(tgUpdate({ text: "tell me everything" }));
    await h.until(() => voices(OWNER).length === 1, { what: "the voice note" });
    const input = h.llm.state.speech[0].body.input;
    assert.ok(input.length <= 200 && input.endsWith("The rest is in my message."), input);
    assert.equal(texts(OWNER)[1].replace(/\s+/g, " ").trim(), long.trim(), "the whole text is sent");
    await h.sendUpdate(tgUpdate({ text: "/voice off" }));
    await h.until(() => texts(OWNER).length === 3, { what: "the /voice off answer" });
    h.llm.push({ text: "text only now" });
    const ogg = Buffer.concat([Buffer.from("OggS"), Buffer.alloc(500, 1)]);
    await h.sendUpdate(voiceUpdate(serveFile(h, ogg, "oga"), ogg.length));
    await h.until(() => texts(OWNER).length === 4, { what: "the answer" });
    await h.settle("agent:main:main");
    assert.equal(voices(OWNER).length, 1, "no voice after /voice off");
    assert.equal(h.llm.state.speech.length, 1);
  });

  test("when TTS fails the user gets the text and nothing else is lost", async () => {
    h.llm.state.speechFailure = 503;
    h.llm.push({ text: "Here is your answer." });
    await h.sendUpdate(oggNote());
    await h.until(() => texts(FRIEND).length === 1, { what: "the text" });
    await h.settle(`agent:main:telegram:dm:${FRIEND}`);
    assert.equal(h.llm.state.speech.length, 1, "TTS was asked");
    assert.equal(voices(FRIEND).length, 0);
    assert.deepEqual(texts(FRIEND), ["Here is your answer."]);
    // The next message goes on as usual.
    h.llm.state.speechFailure = 0;
    h.llm.push({ text: "And again." });
    await h.sendUpdate(oggNote());
    await h.until(() => voices(FRIEND).length === 1, { what: "a voice note once TTS is back" });
  });
});
