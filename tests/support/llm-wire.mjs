// What the LLM providers' APIs reject, as the stand-in checks each request:
// OpenAI chat completions, Anthropic Messages, its cache markers and server
// tools; and the providers' error bodies.

/** OpenAI's models that refuse `max_tokens` (gpt-5.x, the o-series). */
export const REFUSES_MAX_TOKENS = /^(gpt-5|o\d)/i;

/**
 * What OpenAI would reject in a chat-completions body (the rules Hearth can
 * break), or null: roles, content shapes, image parts as URLs, `null`
 * content only beside tool calls, arguments as JSON strings, tool call ids
 * and names not empty, every tool call answered by a `tool` message before
 * the conversation goes on, and `max_tokens` for the models that refuse it.
 * A string is the message of an invalid_request_error; an object is the
 * whole error body (real ones, tests/fixtures/real-world/llm/openai/).
 */
export function chatCompletionsProblem(body) {
  if (typeof body.model !== "string" || !body.model) return "you must provide a model parameter";
  if (!Array.isArray(body.messages) || body.messages.length === 0) return "messages must be a non-empty array";
  if (body.max_tokens !== undefined && !Number.isInteger(body.max_tokens)) return "max_tokens must be an integer";
  if (body.max_completion_tokens !== undefined && !Number.isInteger(body.max_completion_tokens)) return "max_completion_tokens must be an integer";
  if (body.stream_options !== undefined && body.stream !== true) {
    return { error: { message: "The 'stream_options' parameter is only allowed when 'stream' is enabled.", type: "invalid_request_error", param: "stream_options", code: null } };
  }
  if (body.max_tokens !== undefined && REFUSES_MAX_TOKENS.test(body.model.split("/").pop())) {
    // error-400-max-tokens-unsupported.json, verbatim.
    return {
      error: {
        message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        type: "invalid_request_error",
        param: "max_tokens",
        code: "unsupported_parameter",
      },
    };
  }
  // OpenAI's wording for an empty string where one is required
  // (error-400-empty-function-name.json).
  const empty = (path) => `Invalid '${path}': empty string. Expected a string with minimum length 1, but got an empty string instead.`;
  const part = (p, i) => {
    if (p?.type === "text") return typeof p.text === "string" ? null : `messages[${i}]: text part without text`;
    if (p?.type === "image_url") {
      const u = p.image_url?.url;
      return typeof u === "string" && /^(data:image\/[a-z+.-]+;base64,|https?:\/\/)/.test(u) ? null : `messages[${i}]: invalid image_url`;
    }
    return `messages[${i}]: unknown content part ${JSON.stringify(p?.type)}`;
  };
  let pending = []; // tool_call ids awaiting their tool message
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== "tool" && pending.length) return `messages[${i}]: tool_calls ${pending.join(",")} have no tool message`;
    switch (m.role) {
      case "system":
      case "developer":
      case "user":
        if (typeof m.content === "string") break;
        if (!Array.isArray(m.content) || m.content.length === 0) return `messages[${i}].content must be a string or parts`;
        if (m.role !== "user" && m.content.some((p) => p.type !== "text")) return `messages[${i}]: only text parts allowed`;
        for (const p of m.content) {
          const bad = part(p, i);
          if (bad) return bad;
        }
        break;
      case "assistant": {
        const calls = m.tool_calls ?? [];
        if (m.content === null || m.content === undefined) {
          if (!calls.length) return `messages[${i}]: assistant content is required unless tool_calls is given`;
        } else if (typeof m.content !== "string") return `messages[${i}].content must be a string`;
        for (const [k, c] of calls.entries()) {
          if (typeof c.id !== "string" || c.type !== "function" || typeof c.function?.name !== "string") return `messages[${i}]: malformed tool call`;
          if (c.id === "") return empty(`messages[${i}].tool_calls[${k}].id`);
          if (c.function.name === "") return empty(`messages[${i}].tool_calls[${k}].function.name`);
          if (typeof c.function.arguments !== "string") return `messages[${i}]: arguments must be a JSON string`;
          try {
            JSON.parse(c.function.arguments);
          } catch {
            return `messages[${i}]: arguments are not JSON`;
          }
        }
        pending = calls.map((c) => c.id);
        break;
      }
      case "tool":
        if (m.tool_call_id === "") return empty(`messages[${i}].tool_call_id`);
        if (!pending.includes(m.tool_call_id)) return `messages[${i}]: tool message does not answer a preceding tool call`;
        if (typeof m.content !== "string") return `messages[${i}]: tool content must be a string`;
        pending = pending.filter((id) => id !== m.tool_call_id);
        break;
      default:
        return `messages[${i}]: invalid role ${JSON.stringify(m.role)}`;
    }
  }
  if (pending.length) return `tool_calls ${pending.join(",")} have no tool message`;
  for (const t of body.tools ?? []) {
    if (t.type !== "function" || typeof t.function?.name !== "string" || typeof t.function?.parameters !== "object") return "malformed tool definition";
  }
  return null;
}

/** The media type bytes really are, for the types the providers decode. */
function sniffImage(bytes) {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg";
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png";
  if (bytes.subarray(0, 4).toString("latin1") === "GIF8") return "image/gif";
  if (bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP") return "image/webp";
  return null;
}

/**
 * What Anthropic's Messages API would refuse in a body (the rules Hearth can
 * break), or null. The messages are the API's own, verbatim where a real one
 * is known (tests/fixtures/real-world/llm/anthropic/error-400-*.json): empty
 * and whitespace-only text blocks, messages without content, tool_use ids
 * outside the pattern, inputs that are not objects, a tool_use without its
 * tool_result in the next message and a tool_result without its tool_use in
 * the previous one, image bytes that are no image or not the declared type.
 */
export function messagesProblem(body) {
  if (typeof body.model !== "string" || !body.model) return "model: Field required";
  if (!Number.isInteger(body.max_tokens)) return "max_tokens: Field required";
  if (!Array.isArray(body.messages)) return "messages: Field required";
  let open = null; // {index, ids}: tool_use ids the next message must answer
  for (const [i, m] of body.messages.entries()) {
    if (m.role !== "user" && m.role !== "assistant") return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks)) return `messages.${i}.content: Input should be a valid list`;
    const finalAssistant = m.role === "assistant" && i === body.messages.length - 1;
    if (blocks.length === 0 && !finalAssistant) return `messages.${i}: all messages must have non-empty content except for the optional final assistant message`;
    const answers = m.role === "user" ? blocks.filter((b) => b?.type === "tool_result").map((b) => b.tool_use_id) : [];
    if (open) {
      const missing = open.ids.filter((id) => !answers.includes(id));
      if (missing.length) return `messages.${open.index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
    }
    const answerable = open?.ids ?? [];
    open = null;
    const ids = [];
    for (const [j, b] of blocks.entries()) {
      switch (b?.type) {
        case "text":
          if (typeof b.text !== "string") return `messages.${i}.content.${j}.text.text: Field required`;
          if (b.text === "") return "messages: text content blocks must be non-empty";
          if (!b.text.trim()) return "messages: text content blocks must contain non-whitespace text";
          break;
        case "image": {
          const src = b.source ?? {};
          if (src.type !== "base64") break;
          const kind = sniffImage(Buffer.from(String(src.data ?? ""), "base64"));
          if (!kind) return "Could not process image";
          if (kind !== src.media_type) return `messages.${i}.content.${j}.image.source.base64.data: Image does not match the provided media type ${src.media_type}`;
          break;
        }
        case "tool_use":
          if (typeof b.id !== "string" || !/^[a-zA-Z0-9_-]+$/.test(b.id)) return `messages.${i}.content.${j}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
          if (b.input === null || typeof b.input !== "object" || Array.isArray(b.input)) return `messages.${i}.content.${j}.tool_use.input: Input should be a valid dictionary`;
          ids.push(b.id);
          break;
        case "tool_result":
          if (!answerable.includes(b.tool_use_id)) return `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
          break;
        default:
          break;
      }
    }
    if (ids.length) open = { index: i, ids };
  }
  if (open) return `messages.${open.index}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${open.ids.join(", ")}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
  return null;
}

/** The `anthropic-beta` flag the 1-hour cache came with (see promptCache). */
export const EXTENDED_CACHE_TTL_BETA = "extended-cache-ttl-2025-04-11";

/**
 * What Anthropic refuses in a body's `cache_control` markers, or null: a
 * type other than "ephemeral", a `ttl` other than "5m" or "1h", more than
 * four breakpoints, and a 1-hour breakpoint after a 5-minute one in the
 * order the API reads them (tools, system, messages). The messages are the
 * API's (tests/fixtures/real-world/SOURCES.md).
 */
export function cacheControlProblem(body) {
  const marked = [];
  (body.tools ?? []).forEach((t, i) => marked.push({ block: t, at: `tools.${i}`, typed: `tools.${i}.custom` }));
  if (Array.isArray(body.system)) body.system.forEach((b, i) => marked.push({ block: b, at: `system.${i}`, typed: `system.${i}` }));
  (body.messages ?? []).forEach((m, i) => {
    if (!Array.isArray(m.content)) return;
    m.content.forEach((b, j) => marked.push({ block: b, at: `messages.${i}.content.${j}`, typed: `messages.${i}.content.${j}.${b?.type}` }));
  });
  let shorter = false;
  let count = 0;
  for (const { block, at, typed } of marked) {
    const cc = block?.cache_control;
    if (cc === undefined || cc === null) continue;
    count++;
    if (cc.type !== "ephemeral") return `${typed}.cache_control.type: Input should be 'ephemeral'`;
    if (cc.ttl !== undefined && cc.ttl !== "5m" && cc.ttl !== "1h") return `${typed}.cache_control.ephemeral.ttl: Input should be '5m' or '1h'`;
    if (cc.ttl === "1h" && shorter) {
      return `${at}.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that blocks are processed in the following order: \`tools\`, \`system\`, \`messages\`.`;
    }
    if (cc.ttl !== "1h") shorter = true;
  }
  if (count > 4) return `A maximum of 4 blocks with cache_control may be provided. Found ${count}.`;
  return null;
}

/**
 * What the Messages API refuses about server tools (Anthropic's web search),
 * or null: a server tool definition of an unknown type or without its name,
 * a `server_tool_use` replayed without its `web_search_tool_result` in the
 * same assistant message, and citations that are not a list.
 */
export function serverToolProblem(body) {
  for (const t of body.tools ?? []) {
    if (t.type === undefined) continue;
    if (!/^web_search_\d{8}$/.test(t.type) || t.name !== "web_search") return `tools: unknown server tool ${JSON.stringify(t)}`;
  }
  for (const [i, m] of (body.messages ?? []).entries()) {
    if (m.role !== "assistant" || !Array.isArray(m.content)) continue;
    // A paused turn (pause_turn) is continued by sending its reply back as the last message.
    if (i === body.messages.length - 1) continue;
    const uses = m.content.filter((b) => b.type === "server_tool_use").map((b) => b.id);
    const results = m.content.filter((b) => b.type === "web_search_tool_result").map((b) => b.tool_use_id);
    for (const id of uses) if (!results.includes(id)) return `messages.${i}: server_tool_use ${id} has no web_search_tool_result`;
    for (const id of results) if (!uses.includes(id)) return `messages.${i}: web_search_tool_result ${id} answers no server_tool_use`;
    for (const b of m.content) if (b.type === "text" && b.citations !== undefined && !Array.isArray(b.citations)) return `messages.${i}: citations must be a list`;
  }
  return null;
}

export function errorBody(provider, status) {
  if (provider === "openai") {
    return { error: { message: `stand-in error ${status}`, type: status === 429 ? "rate_limit_exceeded" : "server_error", code: null } };
  }
  const type = status === 429 ? "rate_limit_error" : status === 529 ? "overloaded_error" : "api_error";
  return { type: "error", error: { type, message: `stand-in error ${status}` } };
}
