// The LLM providers' stand-in (Anthropic Messages, OpenAI chat completions,
// OpenAI-compatible speech to text and text to speech): scripted answers,
// streamed or whole, refusing what the real APIs refuse (llm-wire.mjs), with
// usage as the providers count it (llm-cache.mjs); every request recorded so
// tests can assert on what Hearth sent.
import { listen, sendJson, sleep } from "./http.mjs";
import { promptCache, tokensOf } from "./llm-cache.mjs";
import { EXTENDED_CACHE_TTL_BETA, cacheControlProblem, chatCompletionsProblem, errorBody, messagesProblem, serverToolProblem } from "./llm-wire.mjs";

export { EXTENDED_CACHE_TTL_BETA, REFUSES_MAX_TOKENS } from "./llm-wire.mjs";
export { promptCache } from "./llm-cache.mjs";

function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    if (typeof m.content === "string") return m.content;
    const texts = (m.content || []).filter((b) => b.type === "text").map((b) => b.text);
    if (texts.length) return texts[texts.length - 1];
  }
  return "";
}


/**
 * An LLM stand-in serving both Anthropic (`/v1/messages`) and OpenAI-compatible
 * (`/v1/chat/completions`) requests. By default it answers "echo: <last user
 * text>"; `script` queues answers: {status, body, headers, delayMs},
 * {text} / {toolCall: {name, input, id}} (`id` overrides the generated one,
 * e.g. "" as some OpenAI-compatible servers send), or {raw: body}: a whole
 * 200 response body as a provider sent it (the real-world fixtures), or
 * (Anthropic) {content: [blocks], stopReason}: a reply with these blocks.
 * Like the real APIs, it refuses (400, recorded as `invalid`) a body they
 * would refuse: see messagesProblem and chatCompletionsProblem.
 *
 * A request with `"stream": true` is answered as the provider streams it
 * (see streamAnswer): the text in pieces (`pieces: [...]`, else word by word),
 * `pieceDelayMs` apart; `breakAfter: n` drops the connection after n pieces,
 * `errorAfter: n` ends with Anthropic's in-stream `error` event (overloaded)
 * after n pieces; `sse: "..."` sends a recorded transcript as it is. Each
 * request records `firstPieceAt` and `lastByteAt` (ms, for the bench), and
 * `aborted` (ms) when the client hung up before the answer's end.
 *
 * Usage is computed as the providers would report it ([promptCache]: the
 * cache reads and writes of the request's prefix, 4 characters a token),
 * recorded on each request as `usage` ({input, output, cacheRead,
 * cacheWrite}) and, for Anthropic, `cacheCreation` (the writes by lifetime,
 * as the API's `usage.cache_creation`); a step's `usage` (the provider's own
 * usage object) replaces it.
 *
 * The cache's clock is the wall clock, or the time a test sets with
 * `setTime(ms)` (`null`: the wall clock again): a test that fires the cron
 * trigger at 10:00 and 10:30 lets the cache see 30 minutes pass.
 */
export async function startLlm() {
  const cache = promptCache();
  const state = { requests: [], script: [], inFlight: 0, maxInFlight: 0, defaultDelayMs: 0, transcriptions: [], transcript: "stand-in transcript", speech: [], speechFailure: 0, time: null };
  const now = () => state.time ?? Date.now();
  const server = await listen(async (req, res, raw) => {
    const url = new URL(req.url, "http://x");
    // OpenAI-compatible speech to text: a multipart upload (`file`, `model`), recorded raw.
    if (url.pathname.endsWith("/audio/transcriptions")) {
      state.transcriptions.push({ headers: req.headers, raw, at: Date.now() });
      return sendJson(res, 200, { text: state.transcript });
    }
    // OpenAI-compatible text to speech: JSON in, audio bytes out (Ogg/Opus for "opus").
    if (url.pathname.endsWith("/audio/speech")) {
      const b = JSON.parse(raw.toString("utf8") || "{}");
      state.speech.push({ headers: req.headers, body: b, at: Date.now() });
      if (state.speechFailure) return sendJson(res, state.speechFailure, { error: { message: "The server is overloaded", type: "server_error" } });
      if (!b.model || !b.voice || typeof b.input !== "string" || !b.input) {
        return sendJson(res, 400, { error: { message: "Missing required parameter", type: "invalid_request_error" } });
      }
      if (b.input.length > 4096) return sendJson(res, 400, { error: { message: "string too long", type: "invalid_request_error" } });
      const ogg = Buffer.concat([Buffer.from("OggS\0\x02"), Buffer.from(b.input.slice(0, 64))]);
      const mp3 = Buffer.concat([Buffer.from("ID3\x04"), Buffer.from(b.input.slice(0, 64))]);
      res.writeHead(200, { "content-type": b.response_format === "opus" ? "audio/ogg" : "audio/mpeg" });
      return res.end(b.response_format === "opus" ? ogg : mp3);
    }
    const body = raw.length ? JSON.parse(raw.toString("utf8")) : {};
    const provider = url.pathname.endsWith("/chat/completions") ? "openai" : url.pathname.endsWith("/messages") ? "anthropic" : "unknown";
    const entry = { provider, path: url.pathname, headers: req.headers, body, raw: raw.toString("utf8"), start: Date.now() };
    state.requests.push(entry);
    // Like the real APIs: a body they would refuse is a 400 with their error
    // body, recorded.
    const invalid = provider === "openai" ? chatCompletionsProblem(body) : provider === "anthropic" ? messagesProblem(body) ?? cacheControlProblem(body) ?? serverToolProblem(body) : null;
    if (invalid) {
      entry.invalid = typeof invalid === "string" ? invalid : invalid.error.message;
      entry.end = Date.now();
      if (provider === "anthropic") {
        return sendJson(res, 400, { type: "error", error: { type: "invalid_request_error", message: invalid } });
      }
      return sendJson(res, 400, typeof invalid === "string" ? { error: { message: invalid, type: "invalid_request_error", param: null, code: null } } : invalid);
    }
    state.inFlight++;
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
    try {
      // A responder answers by content (e.g. compaction requests); else the script.
      const step = (state.responder && state.responder(body, provider)) || state.script.shift() || {};
      const delay = step.delayMs ?? state.defaultDelayMs;
      if (delay) await sleep(delay);
      // A step may hold its answer until the test lets it go (something happens meanwhile).
      if (step.gate) await step.gate;
      if (step.status && step.status !== 200) {
        return sendJson(res, step.status, step.body ?? errorBody(provider, step.status), step.headers || {});
      }
      if (step.raw) return sendJson(res, 200, step.raw);
      const messages = provider === "openai" ? body.messages : body.messages;
      const text = step.text ?? `echo: ${lastUserText(messages || [])}`;
      const extendedTtl = String(req.headers["anthropic-beta"] ?? "").split(",").map((b) => b.trim()).includes(EXTENDED_CACHE_TTL_BETA);
      const prompt = provider === "openai" ? cache.openai(body, now()) : cache.anthropic(body, now(), { extendedTtl });
      const output = Math.max(1, tokensOf(step.toolCall ? JSON.stringify(step.toolCall) : text));
      entry.usage = { input: prompt.input, output, cacheRead: prompt.cacheRead, cacheWrite: prompt.cacheWrite };
      if (provider === "anthropic") entry.cacheCreation = { ephemeral_5m_input_tokens: prompt.cacheWrite5m, ephemeral_1h_input_tokens: prompt.cacheWrite1h };
      if (body.stream === true) return await streamAnswer(res, provider, body, step, text, entry, { prompt, output });
      if (provider === "openai") {
        const message = step.toolCall
          ? { role: "assistant", content: null, tool_calls: [{ id: step.toolCall.id ?? "call_" + state.requests.length, type: "function", function: { name: step.toolCall.name, arguments: JSON.stringify(step.toolCall.input) } }] }
          : { role: "assistant", content: text };
        const usage = step.usage ?? {
          prompt_tokens: prompt.prompt,
          completion_tokens: output,
          total_tokens: prompt.prompt + output,
          prompt_tokens_details: { cached_tokens: prompt.cacheRead },
        };
        if (step.usage) entry.usage = { input: usage.prompt_tokens - (usage.prompt_tokens_details?.cached_tokens ?? 0), output: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0, cacheWrite: 0 };
        return sendJson(res, 200, {
          id: "chatcmpl-" + state.requests.length,
          object: "chat.completion",
          model: body.model,
          choices: [{ index: 0, message, finish_reason: step.toolCall ? "tool_calls" : "stop" }],
          usage,
        });
      }
      if (step.usage) entry.usage = { input: step.usage.input_tokens ?? 0, output: step.usage.output_tokens ?? 0, cacheRead: step.usage.cache_read_input_tokens ?? 0, cacheWrite: step.usage.cache_creation_input_tokens ?? 0 };
      if (step.usage) entry.cacheCreation = step.usage.cache_creation;
      const content = step.content ?? (step.toolCall
        ? [{ type: "tool_use", id: step.toolCall.id ?? "toolu_" + state.requests.length, name: step.toolCall.name, input: step.toolCall.input }]
        : [{ type: "text", text }]);
      return sendJson(res, 200, {
        id: "msg_" + state.requests.length,
        type: "message",
        role: "assistant",
        model: body.model,
        content,
        stop_reason: step.stopReason ?? (step.toolCall ? "tool_use" : "end_turn"),
        stop_sequence: null,
        usage: step.usage ?? {
          input_tokens: prompt.input,
          cache_creation_input_tokens: prompt.cacheWrite,
          cache_read_input_tokens: prompt.cacheRead,
          cache_creation: entry.cacheCreation,
          output_tokens: output,
          service_tier: "standard",
        },
      });
    } finally {
      entry.end = Date.now();
      state.inFlight--;
    }
  });
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    state,
    base,
    requests: state.requests,
    push: (...steps) => state.script.push(...steps),
    cache,
    /** The cache's clock: `ms` from now on (`null`: the wall clock). */
    setTime: (ms) => {
      state.time = ms;
    },
    reset: () => {
      cache.clear();
      state.requests.length = 0;
      state.script.length = 0;
      state.transcriptions.length = 0;
      state.speech.length = 0;
      state.speechFailure = 0;
      state.maxInFlight = 0;
      state.defaultDelayMs = 0;
      state.responder = null;
      state.time = null;
    },
    close: () => new Promise((r) => server.close(r)),
  };
}

const hrNow = () => Number(process.hrtime.bigint()) / 1e6;

/** The answer as the provider streams it (server-sent events). */
async function streamAnswer(res, provider, body, step, text, entry, { prompt, output }) {
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  // A client that hangs up mid-answer (a stopped answer) is recorded, and
  // nothing more is written to it.
  res.on("close", () => {
    if (!res.writableEnded) entry.aborted = Date.now();
  });
  const write = (chunk) => {
    if (res.destroyed) return;
    res.write(chunk);
    entry.lastByteAt = hrNow();
    entry.written = (entry.written ?? 0) + 1;
  };
  if (step.sse) {
    entry.firstPieceAt = hrNow();
    write(step.sse);
    return res.end();
  }
  const ev = (name, data) => write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
  const chunk = (data) => write(`data: ${JSON.stringify(data)}\n\n`);
  const pieces = step.toolCall ? [] : step.pieces ?? (text.match(/\S+\s*|\s+/g) || [text]);
  const pause = async (i) => {
    if (i > 0 && step.pieceDelayMs) await sleep(step.pieceDelayMs);
  };
  const model = body.model;
  if (provider === "anthropic") {
    // Usage as the non-streamed answer reports it: the input in message_start,
    // the output (cumulative) in message_delta.
    const usage = step.usage ?? { input_tokens: prompt.input, cache_creation_input_tokens: prompt.cacheWrite, cache_read_input_tokens: prompt.cacheRead, cache_creation: entry.cacheCreation, output_tokens: output, service_tier: "standard" };
    if (step.usage) entry.usage = { input: usage.input_tokens ?? 0, output: usage.output_tokens ?? 0, cacheRead: usage.cache_read_input_tokens ?? 0, cacheWrite: usage.cache_creation_input_tokens ?? 0 };
    if (step.usage) entry.cacheCreation = usage.cache_creation;
    ev("message_start", { type: "message_start", message: { id: "msg_" + Date.now(), type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
    ev("ping", { type: "ping" });
    if (step.content) {
      // Blocks as given, streamed as Anthropic streams each kind: text in
      // text_delta pieces (citations as citations_delta), a tool call's input
      // in input_json_delta pieces, anything else whole in its start event.
      for (const [index, block] of step.content.entries()) {
        if (block.type === "text") {
          ev("content_block_start", { type: "content_block_start", index, content_block: { type: "text", text: "" } });
          for (const citation of block.citations ?? []) {
            ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "citations_delta", citation } });
          }
          for (const piece of block.text.match(/\S+\s*|\s+/g) || [block.text]) {
            if (entry.firstPieceAt === undefined) entry.firstPieceAt = hrNow();
            ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
          }
        } else if (block.type === "tool_use" || block.type === "server_tool_use") {
          const { input, ...head } = block;
          ev("content_block_start", { type: "content_block_start", index, content_block: { ...head, input: {} } });
          ev("content_block_delta", { type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: JSON.stringify(input) } });
        } else {
          ev("content_block_start", { type: "content_block_start", index, content_block: block });
        }
        ev("content_block_stop", { type: "content_block_stop", index });
      }
      ev("message_delta", { type: "message_delta", delta: { stop_reason: step.stopReason ?? "end_turn", stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
      ev("message_stop", { type: "message_stop" });
      return res.end();
    }
    if (step.toolCall) {
      ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "tool_use", id: step.toolCall.id ?? "toolu_" + Date.now(), name: step.toolCall.name, input: {} } });
      const json = JSON.stringify(step.toolCall.input);
      for (const part of ["", json.slice(0, json.length >> 1), json.slice(json.length >> 1)]) {
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "input_json_delta", partial_json: part } });
      }
    } else {
      ev("content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
      for (const [i, piece] of pieces.entries()) {
        await pause(i);
        if (entry.aborted) return;
        if (step.breakAfter === i) return res.destroy();
        if (step.errorAfter === i) {
          ev("error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } });
          return res.end();
        }
        if (i === 0) entry.firstPieceAt = hrNow();
        ev("content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: piece } });
      }
    }
    ev("content_block_stop", { type: "content_block_stop", index: 0 });
    ev("message_delta", { type: "message_delta", delta: { stop_reason: step.stopReason ?? (step.toolCall ? "tool_use" : "end_turn"), stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
    ev("message_stop", { type: "message_stop" });
    return res.end();
  }
  const base = { id: "chatcmpl-" + Date.now(), object: "chat.completion.chunk", created: Math.floor(Date.now() / 1000), model };
  const choice = (delta, finish = null) => chunk({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] });
  choice({ role: "assistant", content: "" });
  if (step.toolCall) {
    const args = JSON.stringify(step.toolCall.input);
    choice({ tool_calls: [{ index: 0, id: step.toolCall.id ?? "call_" + Date.now(), type: "function", function: { name: step.toolCall.name, arguments: "" } }] });
    for (const part of [args.slice(0, args.length >> 1), args.slice(args.length >> 1)]) {
      choice({ tool_calls: [{ index: 0, function: { arguments: part } }] });
    }
  } else {
    for (const [i, piece] of pieces.entries()) {
      await pause(i);
      if (entry.aborted) return;
      if (step.breakAfter === i) return res.destroy();
      if (i === 0) entry.firstPieceAt = hrNow();
      choice({ content: piece });
    }
  }
  choice({}, step.toolCall ? "tool_calls" : "stop");
  if (body.stream_options?.include_usage) {
    const usage = step.usage ?? { prompt_tokens: prompt.prompt, completion_tokens: output, total_tokens: prompt.prompt + output, prompt_tokens_details: { cached_tokens: prompt.cacheRead } };
    if (step.usage) entry.usage = { input: usage.prompt_tokens - (usage.prompt_tokens_details?.cached_tokens ?? 0), output: usage.completion_tokens, cacheRead: usage.prompt_tokens_details?.cached_tokens ?? 0, cacheWrite: 0 };
    chunk({ ...base, choices: [], usage });
  }
  write("data: [DONE]\n\n");
  return res.end();
}
