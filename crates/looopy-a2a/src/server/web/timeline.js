// The turn timeline: a "Timeline" button on each finished turn opens a
// dialog with the waterfall of the task's latest turn, read from its
// execution record (`GET v1/tasks/{id}/record`, with the server's cost
// estimates beside it): iterations, model calls, tool calls, retries,
// fallbacks, compaction, recovery and decisions, each bar placed by its
// start and sized by its duration. Choosing a step shows its request and
// response. Exposes `window.Timeline`.
'use strict';

(function () {
  const { el, pretty } = window.ChatView;

  const ENDED = ['completed', 'canceled', 'failed', 'rejected', 'input-required', 'auth-required'];
  const ENDPOINT = new URL('.', location.href).href;

  const TYPE_LABELS = {
    'model-call': 'Model call', 'tool-call': 'Tool call', retry: 'Retry', fallback: 'Fallback',
    compaction: 'Compaction', recovered: 'Resumed', decision: 'Decision',
  };

  const FAILURE_LABELS = {
    timeout: 'timed out', denied: 'denied', cancelled: 'cancelled', unknown_tool: 'unknown tool',
    bad_arguments: 'bad arguments', panicked: 'crashed', interrupted: 'interrupted', failed: 'error',
  };

  // ------------------------------------------------------------- formats

  function ms(value) {
    if (typeof value !== 'number' || !isFinite(value)) return '';
    if (value < 1) return value.toFixed(2) + ' ms';
    if (value < 1000) return Math.round(value) + ' ms';
    return (value / 1000).toFixed(2) + ' s';
  }

  function money(cost) {
    if (!cost) return '';
    const v = (cost.input || 0) + (cost.output || 0);
    if (v === 0) return '$0';
    if (v < 0.0001) return '<$0.0001';
    return '$' + (v < 0.01 ? v.toPrecision(2) : v.toFixed(4));
  }

  function tokens(usage) {
    if (!usage) return '';
    return (usage.inputTokens || 0) + ' in · ' + (usage.outputTokens || 0) + ' out';
  }

  function time(ts) {
    const t = Date.parse(ts);
    return isNaN(t) ? null : t;
  }

  /** A kept payload as text: the value (strings as they are, content
   * made of text parts as its text), or the preview of a cut one with what
   * was left out. */
  function payloadText(p) {
    if (!p) return '';
    if (p.kind === 'inline') {
      const v = p.value;
      if (typeof v === 'string') return v;
      if (Array.isArray(v) && v.length && v.every((x) => x && x.kind === 'text' && typeof x.text === 'string')) {
        return v.map((x) => x.text).join('');
      }
      return pretty(v);
    }
    if (p.kind === 'truncated') return p.preview + '\n[cut: ' + p.bytes + ' bytes in all]';
    if (p.kind === 'artifact') return p.preview + '\n[kept whole in artifact ' + p.artifactId + ']';
    return pretty(p);
  }

  // ------------------------------------------------------------- steps

  /** What a step is, in words: `{label, failed, failure, tokens}`. */
  function describe(step) {
    switch (step.type) {
      case 'model-call': {
        const r = step.response;
        const failed = !r;
        const what = r ? (r.toolCalls && r.toolCalls.length
          ? r.toolCalls.length + (r.toolCalls.length === 1 ? ' tool call' : ' tool calls')
          : r.finishReason) : '';
        return {
          label: 'Model call: ' + step.model + (what ? ' → ' + what : ''),
          failed, failure: failed ? (step.error ? step.error.kind : 'no answer') : '',
          tokens: r ? tokens(r.usage) : '',
        };
      }
      case 'tool-call':
        return {
          label: 'Tool call: ' + step.name,
          failed: !!step.failure,
          failure: step.failure ? (FAILURE_LABELS[step.failure] || step.failure) : '',
        };
      case 'retry':
        return { label: 'Retry #' + step.retry + ' after ' + ms(step.delayMs) + ' (' + step.error.kind + ')' };
      case 'fallback':
        return { label: 'Fallback: ' + step.from + ' → ' + step.to + ' (' + step.error.kind + ')' };
      case 'compaction':
        return { label: 'Compaction: ' + step.summarizedMessages + ' messages summarized, ' + step.keptMessages + ' kept' };
      case 'recovered':
        return { label: 'Resumed here after a restart (' + step.previousSteps + ' earlier steps)' };
      case 'decision':
        return {
          label: 'Decision by ' + step.by + ': ' + step.decision,
          failed: ['denied', 'blocked', 'rejected'].includes(step.decision),
          failure: ['denied', 'blocked', 'rejected'].includes(step.decision) ? step.decision : '',
        };
      default:
        return { label: TYPE_LABELS[step.type] || String(step.type) };
    }
  }

  /** The record's steps in groups: each iteration (the model attempts and
   * what their answer asked for), with compaction and recovery markers
   * between them. */
  function groups(steps) {
    const out = [];
    let current = null;
    let n = 0;
    steps.forEach((step, index) => {
      if (step.type === 'compaction' || step.type === 'recovered') {
        out.push({ index });
        current = null;
        return;
      }
      const modelish = ['model-call', 'retry', 'fallback'].includes(step.type);
      if (!current || (modelish && current.answered)) {
        current = { iteration: ++n, members: [] };
        out.push(current);
      }
      current.members.push(index);
      if (step.type === 'model-call' && step.response) current.answered = true;
    });
    // Within an iteration, bars in the order they started.
    for (const g of out) {
      if (g.members) g.members.sort((a, b) => (time(steps[a].startedAt) || 0) - (time(steps[b].startedAt) || 0));
    }
    return out;
  }

  // ------------------------------------------------------------- details

  function field(name, value, pre) {
    if (value === undefined || value === null || value === '') return null;
    return el('div', { class: 'tl-field' }, el('dt', {}, name),
      el('dd', {}, pre ? el('pre', {}, value) : value));
  }

  function fields(...rows) { return el('dl', { class: 'tl-fields' }, ...rows.filter(Boolean)); }

  /** The messages of a request, one per item: its role and its text (a
   * whole message as JSON when it has no text). */
  function messagesList(payload) {
    const value = payload && payload.kind === 'inline' ? payload.value : null;
    if (!Array.isArray(value)) return el('pre', {}, payloadText(payload));
    const list = el('ol', { class: 'tl-messages' });
    for (const m of value) {
      const text = ((m && m.parts) || []).map((p) => (typeof p.text === 'string' ? p.text : pretty(p))).join('\n');
      const calls = ((m && m.toolCalls) || []).map((c) => '→ ' + c.name + ' ' + (typeof c.arguments === 'string' ? c.arguments : pretty(c.arguments)));
      list.append(el('li', {},
        el('p', { class: 'tl-role' }, String((m && m.role) || 'message') + (m && m.toolCallId ? ' (answers ' + m.toolCallId + ')' : '')),
        el('pre', {}, [text].concat(calls).filter(Boolean).join('\n') || pretty(m))));
    }
    return list;
  }

  function section(title, ...children) {
    return el('section', { class: 'tl-part' }, el('h4', {}, title), ...children.filter(Boolean));
  }

  function errorFields(error) {
    return error ? fields(field('Kind', error.kind), field('Message', error.message, true)) : null;
  }

  /** The request and response of a step. */
  function detail(step, cost) {
    switch (step.type) {
      case 'model-call': {
        const req = step.request || {};
        const r = step.response;
        const request = section('Request',
          fields(
            field('Model', step.model + ' (' + step.provider + ')'),
            field('Streamed', step.streamed ? 'yes' : 'no'),
            field('Tools offered', (req.tools || []).length ? req.tools.join(', ') : 'none'),
            field('Settings', req.settings && Object.keys(req.settings).length ? pretty(req.settings) : 'defaults', true),
            req.systemPrompt ? field('System prompt', payloadText(req.systemPrompt), true) : null),
          el('h5', {}, 'Messages sent'), messagesList(req.messages));
        const response = r
          ? section('Response',
            fields(
              field('Text', payloadText(r.text) || '(none)', true),
              r.toolCalls && r.toolCalls.length ? field('Tool calls',
                r.toolCalls.map((c) => c.name + ' (' + c.id + ') ' + payloadText(c.arguments)).join('\n'), true) : null,
              r.reasoning ? field('Reasoning', payloadText(r.reasoning), true) : null,
              field('Finish reason', r.finishReason),
              field('Usage', r.usage ? tokens(r.usage) + ' · ' + (r.usage.totalTokens || 0) + ' total'
                + (r.usage.cachedInputTokens ? ' · ' + r.usage.cachedInputTokens + ' cached' : '') : 'not reported'),
              field('Cost (estimate)', cost ? money(cost) : 'unknown (no price for this model)')))
          : section('Failure', el('p', { class: 'tl-failed-note' }, '✕ The call failed.'), errorFields(step.error));
        return [request, response];
      }
      case 'tool-call':
        return [
          section('Request', fields(field('Tool', step.name), field('Call id', step.callId),
            field('Arguments', payloadText(step.arguments), true))),
          step.failure
            ? section('Failure', el('p', { class: 'tl-failed-note' },
              '✕ ' + (FAILURE_LABELS[step.failure] || step.failure) + ' (' + step.failure + ')'),
            fields(field('Result', payloadText(step.result), true)))
            : section('Result', fields(field('Result', payloadText(step.result), true))),
        ];
      case 'retry':
        return [section('Retry', fields(field('Retry', '#' + step.retry), field('Wait', ms(step.delayMs))),
          el('h5', {}, 'Caused by'), errorFields(step.error))];
      case 'fallback':
        return [section('Fallback', fields(field('From', step.from), field('To', step.to)),
          el('h5', {}, 'Caused by'), errorFields(step.error))];
      case 'compaction':
        return [section('Compaction', fields(field('Messages summarized', String(step.summarizedMessages)),
          field('Messages kept', String(step.keptMessages))))];
      case 'recovered':
        return [section('Recovery', el('p', {}, 'The process that ran this turn stopped; the turn was carried on '
          + 'from its last checkpoint here. The ' + step.previousSteps + ' steps before this point were written by that process.'))];
      case 'decision':
        return [section('Decision', fields(field('By', step.by), field('Tool call', step.callId),
          field('Decision', step.decision), field('Reason', step.reason)))];
      default:
        return [section('Step', el('pre', {}, pretty(step)))];
    }
  }

  // ------------------------------------------------------------- dialog

  let dialog = null;
  const D = {};

  function ensureDialog() {
    if (dialog) return dialog;
    D.title = el('h2', { id: 'tl-title' }, 'Turn timeline');
    D.close = el('button', { type: 'button', class: 'secondary small tl-close' }, 'Close');
    D.summary = el('p', { class: 'tl-summary', id: 'tl-summary' });
    D.axis = el('span', { class: 'tl-axis' });
    D.steps = el('ol', { class: 'tl-steps', 'aria-label': 'Steps of the turn' });
    D.detailTitle = el('h3', { id: 'tl-detail-title' }, 'Step details');
    D.detailBody = el('div', { class: 'tl-detail-body' },
      el('p', { class: 'muted' }, 'Choose a step to see its request and response.'));
    D.detail = el('section', { id: 'tl-detail', class: 'tl-detail', 'aria-labelledby': 'tl-detail-title', tabindex: '-1' },
      D.detailTitle, D.detailBody);
    dialog = el('dialog', { id: 'timeline-dialog', class: 'timeline', 'aria-labelledby': 'tl-title', 'aria-describedby': 'tl-summary' },
      el('div', { class: 'tl-head' }, D.title, D.close), D.summary,
      el('div', { class: 'tl-axis-row', 'aria-hidden': 'true' }, el('span', {}), D.axis, el('span', {})),
      D.steps, D.detail);
    D.close.addEventListener('click', () => dialog.close());
    // Escape closes the dialog only (the page's Escape stops a running answer).
    dialog.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') ev.stopPropagation();
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        const buttons = [...D.steps.querySelectorAll('button.tl-step-button')];
        const at = buttons.indexOf(document.activeElement);
        if (at < 0) return;
        ev.preventDefault();
        const next = buttons[Math.max(0, Math.min(buttons.length - 1, at + (ev.key === 'ArrowDown' ? 1 : -1)))];
        next.focus();
      }
    });
    dialog.addEventListener('close', () => {
      if (D.back && D.back.isConnected) D.back.focus();
    });
    document.body.append(dialog);
    return dialog;
  }

  /** A bar of the waterfall, placed by `start` and sized by `length`
   * (both in ms from the turn's start) on a turn of `span` ms. */
  function bar(start, length, span, cls) {
    const b = el('span', { class: 'tl-bar ' + (cls || '') });
    const left = span > 0 ? Math.max(0, Math.min(100, (start / span) * 100)) : 0;
    const width = span > 0 ? Math.max(0, Math.min(100 - left, (length / span) * 100)) : 0;
    b.style.setProperty('--tl-left', left + '%');
    b.style.setProperty('--tl-width', width + '%');
    if (length <= 0) b.classList.add('tl-instant');
    return el('span', { class: 'tl-track', 'aria-hidden': 'true' }, b);
  }

  function selectStep(button, step, cost) {
    for (const b of D.steps.querySelectorAll('button[aria-pressed="true"]')) b.setAttribute('aria-pressed', 'false');
    button.setAttribute('aria-pressed', 'true');
    D.detailTitle.textContent = button.dataset.label;
    D.detailBody.replaceChildren(...detail(step, cost).filter(Boolean));
    D.detail.dataset.type = step.type;
  }

  /** Draws `view` (a record with its costs) into the dialog. */
  function render(view) {
    const steps = view.steps || [];
    const costs = (view.costs && view.costs.steps) || [];
    const t0 = time(view.startedAt) || (steps.length ? time(steps[0].startedAt) : 0) || 0;
    const startOf = (s) => Math.max(0, (time(s.startedAt) || t0) - t0);
    let span = view.endedAt ? Math.max(0, time(view.endedAt) - t0) : 0;
    for (const s of steps) span = Math.max(span, startOf(s) + (s.durationMs || 0));

    let input = 0;
    let output = 0;
    for (const s of steps) {
      const u = s.type === 'model-call' && s.response && s.response.usage;
      if (u) { input += u.inputTokens || 0; output += u.outputTokens || 0; }
    }
    const total = view.costs && view.costs.total;
    const unpriced = (view.costs && view.costs.unpriced) || [];
    const outcome = view.outcome ? view.outcome.state + ' (' + view.outcome.end + ')' : 'not finished';
    D.title.textContent = 'Turn timeline' + (view.turnNumber ? ' · turn ' + view.turnNumber : '');
    D.summary.textContent = [
      steps.length + (steps.length === 1 ? ' step' : ' steps'), ms(span),
      input + ' in · ' + output + ' out tokens',
      total ? money(total) + ' estimated' : (unpriced.length ? 'cost unknown (no price for ' + unpriced.join(', ') + ')' : 'no cost'),
      outcome,
    ].join(' · ');
    D.axis.replaceChildren(el('span', {}, '0'), el('span', {}, ms(span / 2)), el('span', {}, ms(span)));

    const items = [];
    const stepItem = (index) => {
      const step = steps[index];
      const d = describe(step);
      const cost = costs[index] || null;
      const meta = [ms(step.durationMs), d.tokens, cost ? money(cost) : ''].filter(Boolean).join(' · ');
      const label = (d.failed ? '✕ ' : '') + d.label + (d.failed ? ' — failed: ' + d.failure : '');
      const button = el('button', {
        type: 'button', class: 'tl-step-button', 'aria-pressed': 'false', 'data-label': d.label,
        'aria-controls': 'tl-detail',
      },
      el('span', { class: 'tl-label' }, label),
      bar(startOf(step), step.durationMs || 0, span, step.type),
      el('span', { class: 'tl-meta' }, meta));
      button.addEventListener('click', () => selectStep(button, step, cost));
      return el('li', {
        class: 'tl-step', 'data-type': step.type, 'data-index': String(index),
        'data-failed': d.failed ? 'yes' : null,
      }, button);
    };
    for (const g of groups(steps)) {
      if (g.members) {
        const first = Math.min(...g.members.map((i) => startOf(steps[i])));
        const last = Math.max(...g.members.map((i) => startOf(steps[i]) + (steps[i].durationMs || 0)));
        const failed = g.members.some((i) => describe(steps[i]).failed);
        const list = el('ol', { class: 'tl-group', 'aria-label': 'Iteration ' + g.iteration });
        for (const i of g.members) list.append(stepItem(i));
        items.push(el('li', { class: 'tl-iteration', 'data-iteration': String(g.iteration) },
          el('p', { class: 'tl-iteration-head' },
            el('span', { class: 'tl-label' }, 'Iteration ' + g.iteration + (failed ? ' (with failures)' : '')),
            bar(first, last - first, span, 'iteration'),
            el('span', { class: 'tl-meta' }, ms(last - first))),
          list));
      } else {
        const li = stepItem(g.index);
        if (steps[g.index].type === 'recovered') li.classList.add('tl-resumed');
        items.push(li);
      }
    }
    D.steps.replaceChildren(...items);
    if (steps.length === 0) D.steps.append(el('li', { class: 'muted' }, 'The record has no steps yet.'));
    D.detailTitle.textContent = 'Step details';
    D.detailBody.replaceChildren(el('p', { class: 'muted' }, 'Choose a step to see its request and response.'));
  }

  /** Why the record could not be shown, in plain words. */
  function problem(status) {
    if (status === 401) return 'The server needs an access token to show this timeline.';
    if (status === 404) return 'No execution record of this task: the server keeps none, or the task is not yours.';
    return 'The timeline could not be loaded (HTTP ' + status + ').';
  }

  async function load(taskId) {
    const headers = { Accept: 'application/json' };
    const token = A2A.token.get();
    if (token) headers.Authorization = 'Bearer ' + token;
    const url = new URL('v1/tasks/' + encodeURIComponent(taskId) + '/record', ENDPOINT).href;
    let res;
    try {
      res = await fetch(url, { headers, cache: 'no-store', credentials: 'omit' });
    } catch (_) {
      throw new Error('Cannot reach the agent server to load the timeline.');
    }
    if (!res.ok) throw new Error(problem(res.status));
    return res.json();
  }

  /** Opens the timeline of `taskId`'s latest turn; focus returns to
   * `back` when it closes. */
  async function open(taskId, back) {
    ensureDialog();
    D.back = back;
    D.title.textContent = 'Turn timeline';
    D.summary.textContent = 'Loading…';
    D.axis.replaceChildren();
    D.steps.replaceChildren();
    D.detailBody.replaceChildren();
    if (!dialog.open) dialog.showModal();
    D.close.focus();
    try {
      render(await load(taskId));
      const first = D.steps.querySelector('button.tl-step-button');
      if (first) first.focus();
    } catch (e) {
      D.summary.textContent = e.message;
    }
  }

  /** Offers the timeline on a finished turn `view` of a known task (once). */
  function offer(view) {
    const state = view.state && view.state.dataset.state;
    if (!view.taskId || !ENDED.includes(state) || view.timelineButton) return;
    const button = el('button', { type: 'button', class: 'secondary small timeline-open', 'aria-haspopup': 'dialog' },
      'Timeline');
    button.addEventListener('click', () => open(view.taskId, button));
    view.timelineButton = button;
    view.root.querySelector('.bubble.agent').append(el('div', { class: 'timeline-actions' }, button));
  }

  window.Timeline = { offer, open, groups, describe };
})();
