// A2A 1.0 over JSON-RPC for the chat page: calls with fetch, streamed
// responses parsed as Server-Sent Events from the response body, the bearer
// token kept in sessionStorage. Exposes `window.A2A`.
'use strict';

(function () {
  /** The tool-progress extension this page activates on every request. */
  const TOOL_PROGRESS = 'https://looopy.dev/extensions/tool-progress/v1';
  const TOKEN_KEY = 'looopy.token';
  /** The JSON-RPC endpoint: the page's own path (`POST /` is the endpoint). */
  const ENDPOINT = new URL('.', location.href).href;
  const CARD_URL = new URL('.well-known/agent-card.json', ENDPOINT).href;
  const PROMPTS_URL = new URL('web/prompts', ENDPOINT).href;

  /** The server could not be reached (or the connection broke). */
  class NetworkError extends Error {}
  /** HTTP 401: no token, or a refused one (`hadToken`). */
  class AuthError extends Error {
    constructor(hadToken) {
      super(hadToken ? 'token refused' : 'token needed');
      this.hadToken = hadToken;
    }
  }
  /** A JSON-RPC error object. */
  class RpcError extends Error {
    constructor(error, httpStatus) {
      super(error && error.message ? error.message : 'unknown error');
      this.code = error && typeof error.code === 'number' ? error.code : 0;
      this.data = error ? error.data : undefined;
      this.httpStatus = httpStatus || 200;
    }
  }
  /** An HTTP answer that is neither JSON-RPC nor SSE. */
  class HttpError extends Error {
    constructor(status, text) {
      super('HTTP ' + status + (text ? ': ' + text.slice(0, 200) : ''));
      this.status = status;
    }
  }

  /** The bearer token, for this tab only (never localStorage or cookies). */
  const token = {
    get() {
      try { return sessionStorage.getItem(TOKEN_KEY) || ''; } catch (_) { return ''; }
    },
    set(value) { sessionStorage.setItem(TOKEN_KEY, value); },
    clear() { sessionStorage.removeItem(TOKEN_KEY); },
  };

  let nextId = 1;

  function headers(streaming, lastEventId) {
    const h = {
      'Content-Type': 'application/json',
      'Accept': streaming ? 'text/event-stream' : 'application/json',
      'A2A-Version': '1.0',
      'A2A-Extensions': TOOL_PROGRESS,
    };
    const t = token.get();
    if (t) h['Authorization'] = 'Bearer ' + t;
    if (lastEventId) h['Last-Event-ID'] = lastEventId;
    return h;
  }

  /** Reads an error body: a JSON-RPC error when it is one. */
  async function failure(res) {
    const text = await res.text().catch(() => '');
    try {
      const body = JSON.parse(text);
      if (body && body.error) return new RpcError(body.error, res.status);
    } catch (_) { /* not JSON */ }
    return new HttpError(res.status, text);
  }

  async function post(method, params, options) {
    const opts = options || {};
    const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
    let res;
    try {
      res = await fetch(ENDPOINT, {
        method: 'POST',
        headers: headers(!!opts.stream, opts.lastEventId),
        body,
        signal: opts.signal,
        cache: 'no-store',
        credentials: 'omit',
      });
    } catch (e) {
      if (e && e.name === 'AbortError') throw e;
      throw new NetworkError(String(e && e.message ? e.message : e));
    }
    if (res.status === 401) throw new AuthError(!!token.get());
    if (!res.ok) throw await failure(res);
    return res;
  }

  /** One JSON-RPC call: its result, or a thrown error. */
  async function call(method, params) {
    const res = await post(method, params, {});
    let body;
    try { body = await res.json(); } catch (_) { throw new HttpError(res.status, 'not JSON'); }
    if (body.error) throw new RpcError(body.error, res.status);
    return body.result;
  }

  /** The prompts of the agent's MCP servers (`GET web/prompts`, served by
   * `looopy serve`): `{prompts: [...], errors: [...]}`; none when the
   * server has no such route. */
  async function prompts() {
    const h = { 'Accept': 'application/json' };
    const t = token.get();
    if (t) h['Authorization'] = 'Bearer ' + t;
    let res;
    try {
      res = await fetch(PROMPTS_URL, { headers: h, cache: 'no-store', credentials: 'omit' });
    } catch (e) {
      throw new NetworkError(String(e && e.message ? e.message : e));
    }
    if (res.status === 401) throw new AuthError(!!token.get());
    if (res.status === 404) return { prompts: [], errors: [] };
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  /** Parses one SSE block (the lines between blank lines). */
  function parseBlock(block) {
    let id = null;
    const data = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
    if (data.length === 0) return null;
    return { id, message: JSON.parse(data.join('\n')) };
  }

  /** The SSE events of a response body, as they arrive. */
  async function* sseEvents(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for (;;) {
        let chunk;
        try {
          chunk = await reader.read();
        } catch (e) {
          if (e && e.name === 'AbortError') throw e;
          throw new NetworkError(String(e && e.message ? e.message : e));
        }
        if (chunk.done) break;
        // CRLF line ends become LF (on the whole buffer: a pair may be split
        // between chunks).
        buffer = (buffer + decoder.decode(chunk.value, { stream: true })).replace(/\r\n/g, '\n');
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const event = parseBlock(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          if (event) yield event;
        }
      }
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /**
   * A streaming call (`SendStreamingMessage`, `SubscribeToTask`). Yields
   * `{kind: 'open', progress}` first (`progress`: whether the server
   * activated the tool-progress extension, from the echoed header), then
   * `{kind: 'item', id, result}` for each stream item. Errors are thrown.
   */
  async function* stream(method, params, options) {
    const res = await post(method, params, Object.assign({}, options, { stream: true }));
    const type = res.headers.get('content-type') || '';
    if (!type.includes('text/event-stream')) throw await failure(res);
    const echoed = (res.headers.get('A2A-Extensions') || '').split(',').map((s) => s.trim());
    yield { kind: 'open', progress: echoed.includes(TOOL_PROGRESS) };
    for await (const event of sseEvents(res)) {
      if (event.message.error) throw new RpcError(event.message.error, 200);
      yield { kind: 'item', id: event.id, result: event.message.result };
    }
  }

  /** The agent card (1.0 form), or a thrown error. */
  async function card() {
    let res;
    try {
      res = await fetch(CARD_URL, { headers: { 'A2A-Version': '1.0' }, cache: 'no-store' });
    } catch (e) {
      throw new NetworkError(String(e && e.message ? e.message : e));
    }
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  /** `TASK_STATE_INPUT_REQUIRED` -> `input-required`. */
  function stateName(state) {
    return String(state || '').replace(/^TASK_STATE_/, '').toLowerCase().replace(/_/g, '-');
  }

  /** The text of a list of parts (data parts as JSON). */
  function partsText(parts) {
    return (parts || []).map((p) => {
      if (typeof p.text === 'string') return p.text;
      if (p.data !== undefined) return JSON.stringify(p.data);
      if (p.url || p.raw) return '[file ' + (p.filename || '') + ']';
      return '';
    }).join('');
  }

  function newId() {
    if (crypto.randomUUID) return crypto.randomUUID();
    const b = crypto.getRandomValues(new Uint8Array(16));
    return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  }

  window.A2A = {
    TOOL_PROGRESS, call, stream, card, prompts, token, stateName, partsText, newId,
    NetworkError, AuthError, RpcError, HttpError,
  };
})();
