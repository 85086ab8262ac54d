// The chat page: a conversation with the agent over A2A (client.js speaks
// the protocol, view.js draws the turns): streaming, tool progress, cancel,
// earlier conversations, the bearer token prompt, errors in plain words.
'use strict';

(function () {
  const $ = (id) => document.getElementById(id);

  const ENDED = ['completed', 'canceled', 'failed', 'rejected', 'input-required', 'auth-required'];
  const MODEL_PROBLEMS = {
    connection: 'The agent could not reach its language model. The model service may be down, or the server points at the wrong address.',
    timeout: 'The language model took too long to answer. Try again in a moment.',
    rate_limited: 'The language model is refusing requests for now (rate limit). Wait a moment and try again.',
    authentication: 'The language model refused the agent’s credentials. The server’s API key needs checking.',
    server_error: 'The language model service had an internal error. Try again in a moment.',
    not_found: 'The language model was not found. The server’s model settings need checking.',
    not_configured: 'The agent’s language model is not configured.',
  };

  /** Where the page is. */
  const S = {
    agentName: 'Agent',
    contextId: null,
    /** A task that waits for the user's answer (the next message continues it). */
    pendingTaskId: null,
    /** The turn being streamed: {view, taskId, controller, lastEventId, ...}. */
    run: null,
    tokenPrompt: null,
    /** The MCP servers' prompts, for the prompt menu. */
    prompts: [],
  };

  class NoTokenError extends Error {}

  const {
    STATE_LABELS, el, announce, when, createTurn, scrollToEnd, setState, answerText,
    setAnswer, setArtifact, showProblem, renderInfo, onProgress, finishTools,
    approvalRequests, textOf, showApprovals, elicitations, showQuestions,
  } = window.ChatView;

  // ------------------------------------------------------------- helpers

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

  /** A sentence a person understands for an error. */
  function friendly(e) {
    if (e instanceof NoTokenError) {
      return 'Without an access token this agent cannot be used. Choose “Enter token” to try again.';
    }
    if (e instanceof A2A.NetworkError) {
      return 'Cannot reach the agent server. Check that it is still running and that you are online, then try again.';
    }
    if (e instanceof A2A.AuthError) {
      return e.hadToken ? 'The server refused the access token.' : 'This agent needs an access token.';
    }
    if (e instanceof A2A.RpcError) {
      switch (e.code) {
        case -32001: return 'That conversation no longer exists, or it belongs to someone else.';
        case -32002: return 'That answer had already finished, so there was nothing to stop.';
        case -32004: return 'The agent cannot do that right now: ' + e.message;
        case -32005: return 'The agent does not accept that kind of content.';
        case -32009: return 'This page and the server speak different versions of the A2A protocol.';
        case -32603: return 'The server ran into an internal problem: ' + e.message;
        default:
          if (e.httpStatus === 413) return 'That message is too long for this server.';
          return 'The server refused the request: ' + e.message;
      }
    }
    if (e instanceof A2A.HttpError) {
      return e.status >= 500
        ? 'The server had a problem (HTTP ' + e.status + '). Try again in a moment.'
        : 'The server gave an unexpected answer (HTTP ' + e.status + ').';
    }
    return 'Something went wrong: ' + (e && e.message ? e.message : String(e));
  }

  /** Why a turn failed, from its final status metadata and message. */
  function explainFailure(metadata, text) {
    let type = metadata && metadata.error && metadata.error.type;
    if (!type) {
      const m = /LLM call failed: (connection failed|timed out|rate limited|authentication failed|server error)/.exec(text || '');
      if (m) {
        type = { 'connection failed': 'connection', 'timed out': 'timeout', 'rate limited': 'rate_limited',
          'authentication failed': 'authentication', 'server error': 'server_error' }[m[1]];
      }
    }
    return MODEL_PROBLEMS[type] || 'The agent could not finish this answer.';
  }

  function showBanner(text) {
    $('banner-text').textContent = text;
    $('banner').hidden = false;
  }

  function hideBanner() { $('banner').hidden = true; }

  function setConnection(ok, text) {
    const c = $('connection');
    c.textContent = text;
    c.dataset.ok = ok ? 'yes' : 'no';
  }

  // ------------------------------------------------------------- token

  function updateTokenButtons() {
    const has = !!A2A.token.get();
    $('forget-token').hidden = !has;
    $('token-button').hidden = has || !S.authNeeded;
  }

  /** Shows the token dialog; resolves true once a token is stored. */
  function askToken(reason) {
    return new Promise((resolve) => {
      const dialog = $('token-dialog');
      const form = $('token-form');
      const input = $('token-input');
      const back = document.activeElement;
      $('token-reason').textContent = reason;
      input.value = '';
      const done = (ok) => {
        form.removeEventListener('submit', onSubmit);
        $('token-cancel').removeEventListener('click', onCancel);
        dialog.removeEventListener('cancel', onCancel);
        if (dialog.open) dialog.close();
        if (back && back.focus) back.focus();
        resolve(ok);
      };
      const onSubmit = (ev) => {
        ev.preventDefault();
        const value = input.value.trim();
        if (!value) { input.focus(); return; }
        A2A.token.set(value);
        updateTokenButtons();
        done(true);
      };
      const onCancel = (ev) => { ev.preventDefault(); done(false); };
      form.addEventListener('submit', onSubmit);
      $('token-cancel').addEventListener('click', onCancel);
      dialog.addEventListener('cancel', onCancel);
      dialog.showModal();
      input.focus();
    });
  }

  /** Runs `fn`, asking for a token (once for concurrent callers) on 401. */
  async function withAuth(fn) {
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof A2A.AuthError)) throw e;
        let reason = 'This agent needs an access token. Enter the token you were given for it.';
        if (e.hadToken) {
          A2A.token.clear();
          reason = 'The server refused that token. Check it and enter it again.';
        }
        S.authNeeded = true;
        updateTokenButtons();
        if (!S.tokenPrompt) S.tokenPrompt = askToken(reason).finally(() => { S.tokenPrompt = null; });
        if (!(await S.tokenPrompt)) throw new NoTokenError();
      }
    }
  }

  // ------------------------------------------------------------- streams

  function rememberContext(contextId) {
    if (!contextId || contextId === S.contextId) return;
    S.contextId = contextId;
    history.replaceState(null, '', '#c=' + encodeURIComponent(contextId));
    markCurrentConversation();
  }

  function bindTask(run, taskId, contextId) {
    if (taskId && !run.taskId) {
      run.taskId = taskId;
      run.view.taskId = taskId;
      if (run.cancelRequested) sendCancel(run);
    }
    rememberContext(contextId);
  }

  function onStatus(run, status, metadata) {
    const view = run.view;
    const state = A2A.stateName(status.state);
    if (!(run.cancelRequested && state === 'working')) setState(view, state);
    if (!ENDED.includes(state)) return;
    const text = status.message ? A2A.partsText(status.message.parts) : '';
    const requests = state === 'input-required' ? approvalRequests(status.message) : [];
    const questions = state === 'input-required' ? elicitations(status.message) : [];
    if (requests.length || questions.length) {
      setAnswer(view, textOf(status.message));
      if (requests.length) showApprovals(view, requests, decide);
      if (questions.length) showQuestions(view, questions, reply);
    } else if (state === 'failed' || state === 'rejected') {
      showProblem(view, explainFailure(metadata, text), text);
    } else if (text && !answerText(view).trim()) {
      setAnswer(view, text);
    }
    if (metadata && metadata.usage) {
      view.usage = metadata.usage;
      renderInfo(view);
    }
    endTurn(run, state);
  }

  function endTurn(run, state) {
    const view = run.view;
    if (view.ended) return;
    view.ended = true;
    view.answer.setAttribute('aria-busy', 'false');
    finishTools(view);
    S.pendingTaskId = state === 'input-required' || state === 'auth-required' ? run.taskId : null;
    announce('Answer ' + (STATE_LABELS[state] || state).toLowerCase());
  }

  function onItem(run, result, resuming) {
    const view = run.view;
    if (result.task) {
      const t = result.task;
      bindTask(run, t.id, t.contextId);
      // Resuming after an event id: the replay brings what the snapshot folded.
      if (!resuming) for (const a of t.artifacts || []) setArtifact(view, a, false);
      onStatus(run, t.status, t.metadata);
    } else if (result.statusUpdate) {
      const u = result.statusUpdate;
      bindTask(run, u.taskId, u.contextId);
      if (u.metadata && u.metadata[A2A.TOOL_PROGRESS]) {
        const parts = (u.status.message && u.status.message.parts) || [];
        for (const p of parts) if (p.data) onProgress(view, p.data);
        return;
      }
      onStatus(run, u.status, u.metadata);
    } else if (result.artifactUpdate) {
      const a = result.artifactUpdate;
      bindTask(run, a.taskId, a.contextId);
      setArtifact(view, a.artifact, !!a.append);
    } else if (result.message) {
      setAnswer(view, A2A.partsText(result.message.parts));
      rememberContext(result.message.contextId);
      setState(view, 'completed');
      endTurn(run, 'completed');
    }
  }

  async function consume(run, method, params, lastEventId) {
    const options = { signal: run.controller.signal, lastEventId };
    for await (const ev of A2A.stream(method, params, options)) {
      if (ev.kind === 'open') {
        run.progress = ev.progress;
        continue;
      }
      if (ev.id) run.lastEventId = ev.id;
      onItem(run, ev.result, !!lastEventId);
      if (run.view.ended) return;
    }
  }

  /** Streams a turn into `view`; reconnects (from the last event) when the
   * connection breaks while the turn runs. */
  async function runStream(view, method, params) {
    const run = { view, taskId: null, controller: new AbortController(), lastEventId: null };
    S.run = run;
    setRunning(true);
    view.answer.setAttribute('aria-busy', 'true');
    try {
      let attempt = 0;
      let last = null;
      for (;;) {
        try {
          await withAuth(() => consume(run, method, params, last));
          setConnection(true, 'Connected');
        } catch (e) {
          if (!(e instanceof A2A.NetworkError) || !run.taskId) throw e;
          setConnection(false, 'Reconnecting…');
        }
        if (view.ended || run.controller.signal.aborted) break;
        if (!run.taskId || ++attempt > 3) {
          setState(view, 'lost');
          showProblem(view, 'Lost the connection to the server before the answer finished. '
            + 'Reload the conversation from the list to see how it ended.');
          setConnection(false, 'Cannot reach the server');
          break;
        }
        await sleep(400 * attempt);
        method = 'SubscribeToTask';
        params = { id: run.taskId };
        last = run.lastEventId;
      }
    } catch (e) {
      if (!(e && e.name === 'AbortError')) {
        if (!view.ended) setState(view, run.taskId ? 'lost' : 'error');
        showProblem(view, friendly(e), e && e.message);
        if (e instanceof A2A.NetworkError) setConnection(false, 'Cannot reach the server');
      }
    } finally {
      view.answer.setAttribute('aria-busy', 'false');
      if (S.run === run) {
        S.run = null;
        setRunning(false);
      }
    }
    return run;
  }

  function setRunning(running) {
    $('stop').hidden = !running;
    $('stop').disabled = false;
    $('send').disabled = running;
  }

  /** Sends `parts` (a text part of `text` when not given), shown as `text`. */
  async function send(text, parts) {
    if (S.run) return;
    hideBanner();
    const view = createTurn(text, S.agentName);
    setState(view, 'sending');
    scrollToEnd();
    const message = { messageId: A2A.newId(), role: 'ROLE_USER', parts: parts || [{ text }] };
    if (S.contextId) message.contextId = S.contextId;
    if (S.pendingTaskId) message.taskId = S.pendingTaskId;
    await runStream(view, 'SendStreamingMessage', { message });
    refreshList(true);
  }

  /** Answers an approval request with the typed data part
   * (`{"approval": {"toolCallId", "decision"}}`) on the waiting task. */
  function decide(request, decision) {
    const label = (decision === 'approve' ? 'Approved' : 'Denied') + ': ' + (request.name || 'tool call');
    send(label, [{ data: { approval: { toolCallId: request.toolCallId, decision } } }]);
  }

  /** Answers a tool's question with the typed data part
   * (`{"elicitation": {"toolCallId", "requestId", "action", "content"}}`)
   * on the waiting task. */
  function reply(question, action, content) {
    const label = { accept: 'Answered', decline: 'Declined', cancel: 'Cancelled' }[action] + ': ' + (question.message || 'question');
    const answer = { toolCallId: question.toolCallId, requestId: question.requestId, action };
    if (action === 'accept') answer.content = content || {};
    send(label, [{ data: { elicitation: answer } }]);
  }

  async function sendCancel(run) {
    if (run.cancelSent) return;
    run.cancelSent = true;
    try {
      const task = await withAuth(() => A2A.call('CancelTask', { id: run.taskId }));
      // The stream normally brings the canceled status; if it does not
      // within a moment, the answer to CancelTask is the end.
      setTimeout(() => {
        if (!run.view.ended && task && task.status) {
          onStatus(run, task.status, task.metadata);
          run.controller.abort();
        }
      }, 2000);
    } catch (e) {
      if (!(e instanceof A2A.RpcError && e.code === -32002)) showBanner(friendly(e));
    }
  }

  function stop() {
    const run = S.run;
    if (!run || run.view.ended || run.cancelRequested) return;
    run.cancelRequested = true;
    $('stop').disabled = true;
    setState(run.view, 'stopping');
    announce('Stopping the answer');
    if (run.taskId) sendCancel(run);
  }

  /** Stops following the current stream (the task goes on on the server). */
  function detach() {
    if (S.run) {
      S.run.controller.abort();
      S.run = null;
      setRunning(false);
    }
  }

  // ------------------------------------------------------------- conversations

  function clearLog() {
    for (const t of $('log').querySelectorAll('.turn')) t.remove();
    $('empty-hint').hidden = false;
  }

  function newChat() {
    detach();
    clearLog();
    S.contextId = null;
    S.pendingTaskId = null;
    history.replaceState(null, '', location.pathname + location.search);
    markCurrentConversation();
    closeSidebar(false);
    $('composer-input').focus();
  }

  function markCurrentConversation() {
    for (const b of $('conversations').querySelectorAll('button')) {
      if (b.dataset.context === S.contextId) b.setAttribute('aria-current', 'page');
      else b.removeAttribute('aria-current');
    }
  }

  function firstUserText(tasks) {
    for (let i = tasks.length - 1; i >= 0; i--) {
      for (const m of tasks[i].history || []) {
        if (m.role === 'ROLE_USER') {
          const text = A2A.partsText(m.parts).trim();
          if (text) return text;
        }
      }
    }
    return 'Conversation';
  }

  /** Loads the conversation list; `quiet`: failures only show in the list. */
  async function refreshList(quiet) {
    const status = $('list-status');
    let result;
    try {
      result = await withAuth(() => A2A.call('ListTasks', { pageSize: 100, historyLength: 2 }));
    } catch (e) {
      status.textContent = 'Could not load the conversations.';
      if (!quiet && (e instanceof NoTokenError || e instanceof A2A.NetworkError)) {
        showBanner(friendly(e));
        if (e instanceof A2A.NetworkError) setConnection(false, 'Cannot reach the server');
      }
      return;
    }
    setConnection(true, 'Connected');
    // Tasks come most recently updated first; a context's tasks form one conversation.
    const groups = new Map();
    for (const t of result.tasks || []) {
      if (!groups.has(t.contextId)) groups.set(t.contextId, { updated: t.status.timestamp, tasks: [] });
      groups.get(t.contextId).tasks.push(t);
    }
    const list = $('conversations');
    list.replaceChildren();
    for (const [contextId, g] of groups) {
      const title = firstUserText(g.tasks);
      const turns = g.tasks.length === 1 ? '1 task' : g.tasks.length + ' tasks';
      const button = el('button', { type: 'button', class: 'conversation', 'data-context': contextId },
        el('span', { class: 'title' }, title.length > 80 ? title.slice(0, 80) + '…' : title),
        el('span', { class: 'meta' }, when(g.updated) + ' · ' + turns));
      button.addEventListener('click', () => loadConversation(contextId, true));
      list.append(el('li', {}, button));
    }
    status.textContent = groups.size === 0 ? 'No conversations yet.' : '';
    markCurrentConversation();
  }

  /** Shows the turns of a finished (or running) task. */
  function renderTask(task) {
    const state = A2A.stateName(task.status.state);
    const statusText = task.status.message ? A2A.partsText(task.status.message.parts) : '';
    let view = null;
    for (const m of task.history || []) {
      if (m.role === 'ROLE_USER') {
        view = createTurn(A2A.partsText(m.parts), S.agentName);
        view.taskId = task.id;
        setState(view, 'completed');
        view.ended = true;
      } else if (view) {
        setAnswer(view, A2A.partsText(m.parts));
      }
    }
    if (!view) view = createTurn(null, S.agentName);
    view.ended = false;
    if (!ENDED.includes(state)) {
      setState(view, state);
      for (const a of task.artifacts || []) setArtifact(view, a, false);
      return view; // still running: the caller follows it
    }
    setState(view, state);
    view.ended = true;
    const requests = state === 'input-required' ? approvalRequests(task.status.message) : [];
    const questions = state === 'input-required' ? elicitations(task.status.message) : [];
    if (requests.length || questions.length) {
      setAnswer(view, textOf(task.status.message));
      if (requests.length) showApprovals(view, requests, decide);
      if (questions.length) showQuestions(view, questions, reply);
    } else if (state === 'failed' || state === 'rejected') {
      if (answerText(view) === statusText) setAnswer(view, '');
      showProblem(view, explainFailure(task.metadata, statusText), statusText);
    } else if (!answerText(view).trim()) {
      for (const a of task.artifacts || []) setArtifact(view, a, false);
    }
    return null;
  }

  async function loadConversation(contextId, focus) {
    detach();
    hideBanner();
    clearLog();
    S.contextId = contextId;
    S.pendingTaskId = null;
    history.replaceState(null, '', '#c=' + encodeURIComponent(contextId));
    markCurrentConversation();
    closeSidebar(false);
    let running = null;
    try {
      const list = await withAuth(() => A2A.call('ListTasks', { contextId, pageSize: 100, historyLength: 0 }));
      const tasks = (list.tasks || []).slice().reverse();
      for (const summary of tasks) {
        const task = await withAuth(() => A2A.call('GetTask', { id: summary.id }));
        if (S.contextId !== contextId) return; // the user moved on
        const view = renderTask(task);
        if (view) running = { view, id: task.id };
        const state = A2A.stateName(task.status.state);
        S.pendingTaskId = state === 'input-required' || state === 'auth-required' ? task.id : null;
      }
      if (tasks.length === 0) showBanner('That conversation has no messages (or it is not yours).');
    } catch (e) {
      showBanner(friendly(e));
      return;
    }
    scrollToEnd();
    if (focus) $('composer-input').focus();
    if (running) runStream(running.view, 'SubscribeToTask', { id: running.id });
  }

  // ------------------------------------------------------------- layout

  function narrow() { return window.matchMedia('(max-width: 800px)').matches; }

  function openSidebar() {
    $('sidebar').classList.add('open');
    $('toggle-sidebar').setAttribute('aria-expanded', 'true');
    $('sidebar-title').focus();
  }

  function closeSidebar(focusToggle) {
    if (!$('sidebar').classList.contains('open')) return;
    $('sidebar').classList.remove('open');
    $('toggle-sidebar').setAttribute('aria-expanded', 'false');
    if (focusToggle) $('toggle-sidebar').focus();
  }

  // ------------------------------------------------------------- start

  // ------------------------------------------------------------- prompts

  /** Lists the MCP servers' prompts; the Prompts button shows when there
   * are any. Quiet: a server without the route or a missing token just
   * leaves the menu out. */
  async function loadPrompts() {
    let listed;
    try {
      listed = await A2A.prompts();
    } catch (_) {
      return;
    }
    S.prompts = Array.isArray(listed.prompts) ? listed.prompts : [];
    $('prompt-button').hidden = S.prompts.length === 0;
  }

  /** The prompt chosen in the dialog's select. */
  function chosenPrompt() {
    return S.prompts[Number($('prompt-select').value)] || null;
  }

  /** One input per argument of the chosen prompt. */
  function showPromptArgs() {
    const prompt = chosenPrompt();
    const box = $('prompt-args');
    box.textContent = '';
    $('prompt-description').textContent = (prompt && prompt.description) || '';
    if (!prompt) return;
    (prompt.arguments || []).forEach((arg, i) => {
      const id = 'prompt-arg-' + i;
      const help = arg.description ? id + '-help' : null;
      box.append(
        el('label', { for: id }, arg.name + (arg.required ? ' (required)' : '')),
        el('input', {
          id, type: 'text', name: arg.name, autocomplete: 'off',
          required: !!arg.required, 'aria-describedby': help,
        }),
      );
      if (help) box.append(el('p', { class: 'help', id: help }, arg.description));
    });
  }

  /** The prompt menu: pick a prompt, fill in its arguments, and send it as
   * an `mcpPrompt` reference part before what the message box holds. */
  function openPrompts() {
    const dialog = $('prompt-dialog');
    const select = $('prompt-select');
    select.textContent = '';
    S.prompts.forEach((p, i) => {
      select.append(el('option', { value: String(i) }, p.server + ': ' + (p.title || p.name)));
    });
    showPromptArgs();
    dialog.showModal();
    select.focus();
  }

  function sendPrompt() {
    const prompt = chosenPrompt();
    if (!prompt || S.run) return;
    const args = {};
    const shown = [];
    for (const input of $('prompt-args').querySelectorAll('input')) {
      const value = input.value.trim();
      if (!value && input.required) { input.focus(); return; }
      if (value) { args[input.name] = value; shown.push(input.name + '=' + value); }
    }
    $('prompt-dialog').close();
    const input = $('composer-input');
    const text = input.value.trim();
    input.value = '';
    const parts = [{ data: { mcpPrompt: { server: prompt.server, name: prompt.name, arguments: args } } }];
    if (text) parts.push({ text });
    const label = ['/prompt ' + prompt.server + ':' + prompt.name].concat(shown).join(' ') + (text ? '\n' + text : '');
    send(label, parts);
    input.focus();
  }

  function wire() {
    $('prompt-button').addEventListener('click', openPrompts);
    $('prompt-select').addEventListener('change', showPromptArgs);
    $('prompt-form').addEventListener('submit', (ev) => { ev.preventDefault(); sendPrompt(); });
    $('prompt-cancel').addEventListener('click', () => { $('prompt-dialog').close(); $('composer-input').focus(); });
    const input = $('composer-input');
    $('composer').addEventListener('submit', (ev) => {
      ev.preventDefault();
      const text = input.value.trim();
      if (!text || S.run) return;
      input.value = '';
      send(text);
      input.focus();
    });
    input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        if (S.run) { announce('Wait for the answer, or press Escape to stop it'); return; }
        $('composer').requestSubmit();
      }
    });
    document.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Escape' || $('token-dialog').open || $('prompt-dialog').open) return;
      if ($('sidebar').classList.contains('open') && narrow()) {
        ev.preventDefault();
        closeSidebar(true);
      } else if (S.run) {
        ev.preventDefault();
        stop();
      }
    });
    $('stop').addEventListener('click', () => { stop(); input.focus(); });
    $('new-chat').addEventListener('click', newChat);
    $('refresh-list').addEventListener('click', () => refreshList(false));
    $('close-sidebar').addEventListener('click', () => closeSidebar(true));
    $('banner-close').addEventListener('click', () => { hideBanner(); input.focus(); });
    $('toggle-sidebar').addEventListener('click', () => {
      if ($('sidebar').classList.contains('open')) closeSidebar(true); else openSidebar();
    });
    $('forget-token').addEventListener('click', () => {
      A2A.token.clear();
      S.authNeeded = true;
      updateTokenButtons();
      announce('Token forgotten');
    });
    $('token-button').addEventListener('click', async () => {
      hideBanner();
      if (await askToken('Enter the access token for this agent.')) refreshList(false);
    });
    window.addEventListener('hashchange', () => {
      const id = contextFromHash();
      if (id && id !== S.contextId) loadConversation(id, true);
    });
  }

  function contextFromHash() {
    const m = /^#c=(.+)$/.exec(location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  async function start() {
    wire();
    updateTokenButtons();
    try {
      const card = await A2A.card();
      S.agentName = card.name || 'Agent';
      $('agent-name').textContent = S.agentName;
      document.title = S.agentName + ' · Looopy chat';
      setConnection(true, 'Connected');
    } catch (e) {
      setConnection(false, 'Cannot reach the server');
      showBanner(friendly(e));
    }
    await refreshList(false);
    await loadPrompts();
    const id = contextFromHash();
    if (id) await loadConversation(id, false);
    $('composer-input').focus();
  }

  start();
})();
