// The chat page's turn views: the user's message, the agent's answer as it
// streams, its tool calls, state, problems, token usage and trace id. All
// text goes in through textContent; answers are Markdown, built as DOM nodes
// by markdown.js (never as HTML). Exposes `window.ChatView`.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  const STATE_LABELS = {
    sending: 'Sending…', submitted: 'Queued', working: 'Working…', stopping: 'Stopping…',
    'input-required': 'Waiting for your answer', 'auth-required': 'Needs authorization',
    completed: 'Done', canceled: 'Canceled', failed: 'Failed', rejected: 'Rejected',
    unknown: 'Unknown', error: 'Not sent', lost: 'Connection lost',
  };

  /** An element with attributes and children (strings become text). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v === null || v === undefined) continue;
      if (k === 'class') node.className = v;
      else if (v === true) node.setAttribute(k, '');
      else node.setAttribute(k, v);
    }
    for (const c of children) {
      if (c !== null && c !== undefined) node.append(c);
    }
    return node;
  }

  /** Says `text` to screen readers (the polite live region). */
  function announce(text) {
    const a = $('announcer');
    a.textContent = '';
    setTimeout(() => { a.textContent = text; }, 50);
  }

  function duration(ms) {
    if (typeof ms !== 'number') return '';
    return ms < 1000 ? ms + ' ms' : (ms / 1000).toFixed(1) + ' s';
  }

  function when(ts) {
    const d = new Date(ts);
    if (isNaN(d)) return '';
    return d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
  }

  function pretty(value) {
    try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
  }

  // ------------------------------------------------------------- turns

  /** A turn in the log: the user's message (none when `null`) and the
   * agent's side, headed by `agentName`. */
  function createTurn(userText, agentName) {
    $('empty-hint').hidden = true;
    const root = el('article', { class: 'turn' });
    if (userText !== null) {
      root.append(el('div', { class: 'bubble user' },
        el('h3', { class: 'who' }, 'You'),
        el('p', { class: 'text' }, userText)));
    }
    const state = el('span', { class: 'state' });
    const tools = el('ol', { class: 'tools', 'aria-label': 'Tool calls', hidden: true });
    const answer = el('div', { class: 'answer', 'aria-live': 'polite', 'aria-busy': 'false' });
    const problem = el('div', { class: 'problem', role: 'alert', hidden: true });
    const note = el('p', { class: 'note', hidden: true });
    const info = el('dl', { class: 'turn-info', hidden: true });
    root.append(el('div', { class: 'bubble agent' },
      el('div', { class: 'agent-head' }, el('h3', { class: 'who' }, agentName), state),
      tools, answer, note, problem, info));
    $('log').append(root);
    const view = {
      root, state, tools, answer, note, problem, info,
      artifacts: new Map(), toolItems: new Map(),
      usage: null, trace: null, taskId: null, ended: false,
    };
    return view;
  }

  function scrollToEnd() {
    const log = $('log');
    log.scrollTop = log.scrollHeight;
  }

  function setState(view, state) {
    view.state.textContent = STATE_LABELS[state] || state;
    view.state.dataset.state = state;
    const stoppedEarly = state === 'canceled' && !answerText(view).trim();
    view.note.textContent = stoppedEarly ? 'Stopped before the agent answered.' : '';
    view.note.hidden = !stoppedEarly;
    // A finished turn of a known task offers its timeline (timeline.js).
    if (window.Timeline) window.Timeline.offer(view);
  }

  /** The answer's Markdown source: its artifacts' text in arrival order
   * (or the text `setAnswer` gave). */
  function answerText(view) { return [...view.artifacts.values()].join(''); }

  /** Shows the answer's source as Markdown (built as DOM nodes, never as
   * HTML: see markdown.js). Re-rendered whole at each chunk, so that a list
   * or a code block still streaming is shown as one. */
  function renderAnswer(view) {
    view.answer.replaceChildren(Markdown.render(answerText(view)));
  }

  function setAnswer(view, text) {
    view.artifacts.clear();
    if (text) view.artifacts.set('', text);
    renderAnswer(view);
  }

  /** An artifact (or a chunk of one, `append`) joins the streamed answer. */
  function setArtifact(view, artifact, append) {
    const text = A2A.partsText(artifact.parts);
    const before = append ? view.artifacts.get(artifact.artifactId) || '' : '';
    view.artifacts.set(artifact.artifactId, before + text);
    renderAnswer(view);
    scrollToEnd();
  }

  function showProblem(view, summary, detail) {
    view.problem.replaceChildren(el('p', {}, summary));
    if (detail && detail !== summary) {
      view.problem.append(el('details', {}, el('summary', {}, 'Details'), el('pre', {}, detail)));
    }
    view.problem.hidden = false;
    scrollToEnd();
  }

  function renderInfo(view) {
    const rows = [];
    const u = view.usage;
    if (u && (u.inputTokens || u.outputTokens || u.totalTokens)) {
      rows.push(['Tokens', (u.inputTokens || 0) + ' in · ' + (u.outputTokens || 0) + ' out · '
        + (u.totalTokens || 0) + ' total']);
    }
    if (view.trace) {
      rows.push(['Trace', view.trace.id + (view.trace.generated ? ' (local id, tracing is off)' : '')]);
    }
    view.info.replaceChildren(...rows.map(([k, v]) =>
      el('div', {}, el('dt', {}, k), el('dd', { class: k === 'Trace' ? 'trace' : 'usage' }, v))));
    view.info.hidden = rows.length === 0;
  }

  // ------------------------------------------------------------- tool progress

  function toolItem(view, data) {
    let item = view.toolItems.get(data.callId);
    if (item) return item;
    const status = el('span', { class: 'tool-status' }, 'running…');
    const time = el('span', { class: 'tool-time' });
    const args = el('pre', { class: 'args' });
    const result = el('pre', { class: 'result' });
    const resultLabel = el('p', { class: 'label' }, 'Result');
    const li = el('li', { class: 'tool running' },
      el('details', { open: true },
        el('summary', {}, el('span', { class: 'tool-name' }, data.name || 'tool'), status, time),
        el('div', { class: 'tool-body' },
          el('p', { class: 'label' }, 'Arguments'), args, resultLabel, result)));
    item = { li, status, time, args, result, resultLabel };
    view.toolItems.set(data.callId, item);
    view.tools.append(li);
    view.tools.hidden = false;
    return item;
  }

  function onProgress(view, data) {
    switch (data.event) {
      case 'turn-start':
        view.trace = { id: data.traceId, generated: !!data.traceIdGenerated };
        renderInfo(view);
        break;
      case 'tool-call-begin': {
        // The model started writing the call: its arguments stream in
        // until the call starts.
        const item = toolItem(view, data);
        if (!item.started) {
          item.li.classList.replace('running', 'preparing');
          item.status.textContent = 'preparing…';
        }
        scrollToEnd();
        break;
      }
      case 'tool-call-delta': {
        const item = toolItem(view, data);
        if (!item.started && typeof data.delta === 'string') {
          item.args.textContent += data.delta;
          item.li.dataset.streamed = 'yes';
        }
        break;
      }
      case 'sub-agent':
        onSubAgent(toolItem(view, data), data.update || {});
        scrollToEnd();
        break;
      case 'tool-start': {
        const item = toolItem(view, data);
        item.started = true;
        item.li.classList.remove('preparing');
        item.li.classList.add('running');
        item.status.textContent = 'running…';
        item.args.textContent = pretty(data.arguments);
        item.result.textContent = '…';
        announce('Running tool ' + data.name);
        scrollToEnd();
        break;
      }
      case 'tool-complete': {
        const item = toolItem(view, data);
        const failed = !!data.isError;
        item.li.classList.remove('running', 'preparing');
        item.li.classList.add(failed ? 'failed' : 'done');
        item.status.textContent = failed ? failureLabel(data) : 'done';
        item.time.textContent = duration(data.durationMs);
        item.resultLabel.textContent = failed ? 'Error' : 'Result';
        item.result.textContent = (data.result || '') + (data.truncated ? '\n[shortened]' : '');
        break;
      }
      case 'usage':
        view.usage = data.total;
        renderInfo(view);
        break;
      default:
        break;
    }
  }

  /** The text parts of a core message (a sub-agent's). */
  function coreText(message) {
    return ((message && message.parts) || []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  }

  /** An event of the agent a tool called (`internal:sub-agent`), shown
   * nested under that tool call: its state and status text, and its
   * answer as it streams. */
  function onSubAgent(item, update) {
    if (!item.sub) {
      const state = el('span', { class: 'sub-state' });
      const status = el('p', { class: 'sub-status' });
      const answer = el('pre', { class: 'sub-answer' });
      const box = el('section', { class: 'sub-agent', 'aria-label': 'Called agent' },
        el('p', { class: 'label' }, 'Called agent ', state), status, answer);
      item.li.querySelector('.tool-body').append(box);
      item.sub = { box, state, status, answer, artifacts: new Map() };
    }
    const sub = item.sub;
    if (update.kind === 'status-update' || update.kind === 'task') {
      const state = (update.status && update.status.state) || '';
      sub.state.textContent = STATE_LABELS[state] || state;
      sub.box.dataset.state = state;
      const text = coreText(update.status && update.status.message);
      if (text) sub.status.textContent = text;
    } else if (update.kind === 'artifact-update' && update.artifact) {
      const a = update.artifact;
      const before = update.append ? sub.artifacts.get(a.artifactId) || '' : '';
      sub.artifacts.set(a.artifactId, before + coreText(a));
      sub.answer.textContent = [...sub.artifacts.values()].join('');
    }
  }

  /** Words for how a tool call failed (from its kind; shown as text only). */
  const FAILURE_LABELS = {
    timeout: 'timed out', denied: 'denied', cancelled: 'cancelled',
    unknown_tool: 'unknown tool', bad_arguments: 'bad arguments', panicked: 'crashed',
    interrupted: 'interrupted', failed: 'error',
  };

  function failureLabel(data) {
    const kind = typeof data.failure === 'string' ? data.failure
      : (data.outcome === 'timeout' ? 'timeout' : 'failed');
    return Object.prototype.hasOwnProperty.call(FAILURE_LABELS, kind) ? FAILURE_LABELS[kind] : 'error';
  }

  /** Marks the tool calls still running when the turn ended. */
  function finishTools(view) {
    for (const item of view.toolItems.values()) {
      if (item.li.classList.contains('running') || item.li.classList.contains('preparing')) {
        item.li.classList.remove('running', 'preparing');
        item.li.classList.add('stopped');
        item.status.textContent = 'did not finish';
        item.result.textContent = '';
      }
    }
  }

  // ------------------------------------------------------------- approvals

  /** The approval requests of an `input-required` status message (its
   * data part's `approvalRequests`), or none. */
  function approvalRequests(message) {
    for (const p of (message && message.parts) || []) {
      const list = p.data && p.data.approvalRequests;
      if (Array.isArray(list)) return list.filter((r) => r && typeof r.toolCallId === 'string');
    }
    return [];
  }

  /** The text parts of a message only (no data parts as JSON). */
  function textOf(message) {
    return ((message && message.parts) || []).map((p) => (typeof p.text === 'string' ? p.text : '')).join('');
  }

  /** Shows each request's question, the call's arguments, and Approve /
   * Deny buttons; a click calls `decide(request, 'approve' | 'deny')` once
   * (every button of the turn is then disabled). */
  function showApprovals(view, requests, decide) {
    if (view.approvals) view.approvals.remove();
    const box = el('div', { class: 'approvals', role: 'group', 'aria-label': 'Approval needed' });
    const buttons = [];
    for (const r of requests) {
      const approve = el('button', { type: 'button', class: 'approve', 'data-call-id': r.toolCallId }, 'Approve');
      const deny = el('button', { type: 'button', class: 'deny', 'data-call-id': r.toolCallId }, 'Deny');
      const choose = (decision) => {
        for (const b of buttons) b.disabled = true;
        box.dataset.decided = decision;
        decide(r, decision);
      };
      approve.addEventListener('click', () => choose('approve'));
      deny.addEventListener('click', () => choose('deny'));
      buttons.push(approve, deny);
      box.append(el('div', { class: 'approval' },
        el('p', { class: 'question' }, r.question || ('Allow ' + r.name + '?')),
        el('pre', { class: 'args' }, pretty(r.arguments)),
        el('div', { class: 'approval-buttons' }, approve, deny)));
    }
    view.approvals = box;
    view.answer.after(box);
    scrollToEnd();
    if (buttons[0]) buttons[0].focus();
  }

  // --------------------------------------------------- tools' questions

  /** The questions tools asked in an `input-required` status message (its
   * data part's `elicitations`), or none. */
  function elicitations(message) {
    for (const p of (message && message.parts) || []) {
      const list = p.data && p.data.elicitations;
      if (Array.isArray(list)) {
        return list.filter((q) => q && typeof q.toolCallId === 'string' && typeof q.requestId === 'string');
      }
    }
    return [];
  }

  /** The allowed values of an enum property (or of a multi-select's
   * items): `[{value, label}]`, none when it is no enum. */
  function choicesOf(property) {
    const p = property || {};
    if (Array.isArray(p.enum)) {
      return p.enum.map((v, i) => ({ value: v, label: (p.enumNames && p.enumNames[i]) || String(v) }));
    }
    const options = p.oneOf || p.anyOf;
    if (Array.isArray(options)) {
      return options.filter((o) => o && 'const' in o).map((o) => ({ value: o.const, label: o.title || String(o.const) }));
    }
    return [];
  }

  /** One form field for a property of the requested schema; `read()`
   * gives its value, or undefined when left empty. */
  function fieldFor(name, property, required) {
    const p = property || {};
    const id = 'f-' + Math.random().toString(36).slice(2);
    const label = el('label', { for: id }, (p.title || name) + (required ? ' *' : ''));
    const help = p.description ? el('small', { class: 'help' }, p.description) : null;
    let input;
    let read;
    const choices = p.type === 'array' ? choicesOf(p.items) : choicesOf(p);
    if (p.type === 'array') {
      input = el('select', { id, name, multiple: true });
      for (const c of choices) input.append(el('option', { value: JSON.stringify(c.value) }, c.label));
      read = () => {
        const picked = [...input.selectedOptions].map((o) => JSON.parse(o.value));
        return picked.length ? picked : undefined;
      };
    } else if (choices.length) {
      input = el('select', { id, name });
      input.append(el('option', { value: '' }, required ? 'Choose…' : '(none)'));
      for (const c of choices) input.append(el('option', { value: JSON.stringify(c.value) }, c.label));
      read = () => (input.value === '' ? undefined : JSON.parse(input.value));
    } else if (p.type === 'boolean') {
      input = el('input', { id, name, type: 'checkbox' });
      if (p.default === true) input.checked = true;
      read = () => input.checked;
    } else if (p.type === 'integer' || p.type === 'number') {
      input = el('input', {
        id, name, type: 'number', step: p.type === 'integer' ? '1' : 'any',
        min: p.minimum, max: p.maximum, required: required || null,
      });
      read = () => (input.value === '' ? undefined : Number(input.value));
    } else {
      const type = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' }[p.format] || 'text';
      input = el('input', {
        id, name, type, minlength: p.minLength, maxlength: p.maxLength, required: required || null,
      });
      read = () => (input.value === '' ? undefined : input.value);
    }
    if (p.default !== undefined && p.type !== 'boolean' && p.type !== 'array' && !choices.length) {
      input.value = String(p.default);
    }
    return { node: el('div', { class: 'field' }, label, input, help), read };
  }

  /** Shows each question as a form built from its schema, with Send,
   * Decline and Cancel; `reply(question, action, content)` is called once
   * (every form of the turn is then disabled). */
  function showQuestions(view, questions, reply) {
    if (view.questions) view.questions.remove();
    const box = el('div', { class: 'elicitations', role: 'group', 'aria-label': 'A tool asks' });
    const controls = [];
    for (const q of questions) {
      const schema = q.requestedSchema || {};
      const required = Array.isArray(schema.required) ? schema.required : [];
      const fields = Object.entries(schema.properties || {})
        .map(([name, p]) => [name, fieldFor(name, p, required.includes(name))]);
      const send = el('button', { type: 'submit', class: 'send' }, 'Send');
      const decline = el('button', { type: 'button', class: 'decline' }, 'Decline');
      const cancel = el('button', { type: 'button', class: 'cancel' }, 'Cancel');
      const form = el('form', { class: 'elicitation', 'data-call-id': q.toolCallId },
        el('p', { class: 'question' }, q.message || 'The tool asks:'),
        q.error ? el('p', { class: 'error', role: 'alert' }, 'The last answer did not fit: ' + q.error) : null,
        ...fields.map(([, f]) => f.node),
        el('div', { class: 'elicitation-buttons' }, send, decline, cancel));
      const answer = (action, content) => {
        for (const c of controls) c.disabled = true;
        box.dataset.answered = action;
        reply(q, action, content);
      };
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        const content = {};
        for (const [name, f] of fields) {
          const v = f.read();
          if (v !== undefined) content[name] = v;
        }
        answer('accept', content);
      });
      decline.addEventListener('click', () => answer('decline'));
      cancel.addEventListener('click', () => answer('cancel'));
      controls.push(send, decline, cancel, ...form.querySelectorAll('input, select'));
      box.append(form);
    }
    view.questions = box;
    (view.approvals || view.answer).after(box);
    scrollToEnd();
    const first = box.querySelector('input, select');
    if (first) first.focus();
  }

  window.ChatView = {
    STATE_LABELS, el, announce, duration, when, pretty, createTurn, scrollToEnd, setState,
    answerText, setAnswer, setArtifact, showProblem, renderInfo, onProgress, finishTools,
    approvalRequests, textOf, showApprovals, elicitations, showQuestions,
  };
})();
