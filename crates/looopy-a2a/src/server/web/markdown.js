// A small Markdown renderer for the agent's answers: paragraphs, headings,
// lists (nested), block quotes, fenced code (with a copy button), tables,
// rules, and inline code, emphasis, strike-through and links.
//
// Safety: the model's text never becomes HTML. Everything is built with
// createElement and text nodes (no innerHTML, no HTML passthrough: `<img>`
// or `<script>` in an answer shows as those characters), and a link keeps
// its href only when it parses as an absolute http:, https: or mailto: URL
// (javascript:, data: and relative links show as plain text). Images are
// never loaded: `![alt](url)` becomes a link to the image. Exposes
// `window.Markdown.render(text) -> DocumentFragment`.
'use strict';

(function () {
  const SAFE_PROTOCOLS = ['http:', 'https:', 'mailto:'];

  function el(tag, cls, ...children) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    for (const c of children) node.append(c);
    return node;
  }

  /** The URL when it is absolute and of a safe scheme, else null. */
  function safeUrl(raw) {
    let url;
    try { url = new URL(raw.trim()); } catch (_) { return null; }
    return SAFE_PROTOCOLS.includes(url.protocol) ? url.href : null;
  }

  function link(href, children) {
    const a = el('a', null, ...children);
    a.href = href;
    a.target = '_blank';
    a.rel = 'noopener noreferrer nofollow';
    return a;
  }

  // ------------------------------------------------------------- inline

  const PUNCT = /[!-/:-@[-`{-~]/;

  /** The index of `]` closing the `[` at `open`, or -1. */
  function closingBracket(s, open) {
    let depth = 0;
    for (let i = open; i < s.length; i++) {
      if (s[i] === '\\') { i++; continue; }
      if (s[i] === '[') depth++;
      else if (s[i] === ']' && --depth === 0) return i;
    }
    return -1;
  }

  /** `(url "title")` at `at`: the URL and the index after `)`, or null. */
  function destination(s, at) {
    if (s[at] !== '(') return null;
    let depth = 0;
    for (let i = at; i < s.length; i++) {
      if (s[i] === '\\') { i++; continue; }
      if (s[i] === '(') depth++;
      else if (s[i] === ')' && --depth === 0) {
        const inner = s.slice(at + 1, i).trim();
        const url = inner.replace(/\s+("[^"]*"|'[^']*')$/, '').replace(/^<(.*)>$/, '$1');
        return { url, end: i + 1 };
      }
    }
    return null;
  }

  /** Emphasis-like spans: delimiter, tag, whether it must sit at word edges. */
  const SPANS = [
    ['**', 'strong', false], ['__', 'strong', true], ['~~', 'del', false],
    ['*', 'em', false], ['_', 'em', true],
  ];

  /** The end of a `delim` span opened at `at` (inner text not blank at
   * either edge), or -1. */
  function spanEnd(s, at, delim, wordEdges) {
    const start = at + delim.length;
    if (start >= s.length || /\s/.test(s[start])) return -1;
    if (wordEdges && at > 0 && /\w/.test(s[at - 1])) return -1;
    for (let i = start + 1; i <= s.length - delim.length; i++) {
      if (s[i] === '\\') { i++; continue; }
      if (s[i] === '`') { // code spans are opaque
        const run = /^`+/.exec(s.slice(i))[0];
        const close = s.indexOf(run, i + run.length);
        if (close > 0) { i = close + run.length - 1; continue; }
      }
      if (s.startsWith(delim, i) && !/\s/.test(s[i - 1])) {
        const after = s[i + delim.length];
        if (delim.length === 1 && after === delim) { i++; continue; } // part of a longer run
        if (wordEdges && after && /\w/.test(after)) continue;
        return i;
      }
    }
    return -1;
  }

  /** Inline Markdown in `s` as nodes appended to `parent`. */
  function inline(s, parent) {
    let text = '';
    const flush = () => { if (text) { parent.append(document.createTextNode(text)); text = ''; } };
    let i = 0;
    outer:
    while (i < s.length) {
      const c = s[i];
      if (c === '\\' && i + 1 < s.length && PUNCT.test(s[i + 1])) {
        text += s[i + 1]; i += 2; continue;
      }
      if (c === '`') {
        const run = /^`+/.exec(s.slice(i))[0];
        const close = s.indexOf(run, i + run.length);
        if (close > 0 && s[close + run.length] !== '`') {
          let code = s.slice(i + run.length, close).replace(/\n/g, ' ');
          if (/^ .* $/.test(code) && code.trim()) code = code.slice(1, -1);
          flush(); parent.append(el('code', null, code));
          i = close + run.length; continue;
        }
        text += run; i += run.length; continue;
      }
      if (c === '[' || (c === '!' && s[i + 1] === '[')) {
        const open = c === '!' ? i + 1 : i;
        const close = closingBracket(s, open);
        const dest = close > 0 ? destination(s, close + 1) : null;
        if (dest) {
          const label = s.slice(open + 1, close);
          const href = safeUrl(dest.url);
          flush();
          if (href) {
            const a = link(href, []);
            if (c === '!') a.append(label || href); else inline(label, a);
            parent.append(a);
          } else {
            // Unsafe or relative: the label as text, the target dropped.
            inline(label, parent);
          }
          i = dest.end; continue;
        }
      }
      if (c === '<') {
        const m = /^<((?:https?|mailto):[^\s<>]+)>/i.exec(s.slice(i));
        const href = m && safeUrl(m[1]);
        if (href) { flush(); parent.append(link(href, [m[1]])); i += m[0].length; continue; }
      }
      if ((c === 'h' || c === 'H') && (i === 0 || /[\s(]/.test(s[i - 1]))) {
        const m = /^https?:\/\/[^\s<>]+/i.exec(s.slice(i));
        if (m) {
          const raw = m[0].replace(/[.,;:!?)'"*_]+$/, '');
          const href = safeUrl(raw);
          if (href) { flush(); parent.append(link(href, [raw])); i += raw.length; continue; }
        }
      }
      for (const [delim, tag, wordEdges] of SPANS) {
        if (s.startsWith(delim, i)) {
          const end = spanEnd(s, i, delim, wordEdges);
          if (end > 0) {
            flush();
            const node = el(tag, null);
            inline(s.slice(i + delim.length, end), node);
            parent.append(node);
            i = end + delim.length;
            continue outer;
          }
          break;
        }
      }
      text += c; i++;
    }
    flush();
  }

  // ------------------------------------------------------------- blocks

  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
  const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
  const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
  const QUOTE = /^ {0,3}> ?/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
  const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

  const blank = (line) => /^\s*$/.test(line);

  function startsBlock(lines, i) {
    const line = lines[i];
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line)
      || ITEM.test(line) || isTable(lines, i);
  }

  function isTable(lines, i) {
    return lines[i].includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1])
      && lines[i + 1].includes('-');
  }

  function cells(line) {
    let s = line.trim();
    if (s.startsWith('|')) s = s.slice(1);
    if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
    const out = [];
    let cur = '';
    for (let i = 0; i < s.length; i++) {
      if (s[i] === '\\' && s[i + 1] === '|') { cur += '|'; i++; } else if (s[i] === '|') { out.push(cur.trim()); cur = ''; } else cur += s[i];
    }
    out.push(cur.trim());
    return out;
  }

  function codeBlock(code, lang) {
    const wrap = el('div', 'code-block');
    if (lang) wrap.dataset.lang = lang;
    const codeEl = el('code', null, code);
    const copy = el('button', 'copy-code');
    copy.type = 'button';
    copy.setAttribute('aria-label', 'Copy code');
    copy.addEventListener('click', () => copyText(copy, code));
    wrap.append(copy, el('pre', null, codeEl));
    return wrap;
  }

  /** Copies `code`; the button says "Copied" (its label lives in CSS so that
   * the answer's text stays the answer). */
  function copyText(button, code) {
    const done = () => {
      button.dataset.copied = '';
      button.setAttribute('aria-label', 'Copied');
      setTimeout(() => { delete button.dataset.copied; button.setAttribute('aria-label', 'Copy code'); }, 2000);
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(code).then(done, () => selectCode(button));
    } else {
      selectCode(button);
    }
  }

  /** Without clipboard access: select the code for the user to copy. */
  function selectCode(button) {
    const pre = button.parentNode.querySelector('pre');
    const range = document.createRange();
    range.selectNodeContents(pre);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
  }

  function table(lines, i, parent) {
    const head = cells(lines[i]);
    const aligns = cells(lines[i + 1]).map((c) =>
      c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : '');
    const cell = (tag, text, k) => {
      const td = el(tag, aligns[k] ? 'align-' + aligns[k] : null);
      inline(text, td);
      return td;
    };
    const thead = el('thead', null, el('tr', null, ...head.map((h, k) => cell('th', h, k))));
    const tbody = el('tbody', null);
    i += 2;
    while (i < lines.length && !blank(lines[i]) && lines[i].includes('|')) {
      const row = cells(lines[i]);
      tbody.append(el('tr', null, ...head.map((_, k) => cell('td', row[k] || '', k))));
      i++;
    }
    parent.append(el('div', 'table-wrap', el('table', null, thead, tbody)));
    return i;
  }

  function list(lines, i, parent) {
    const first = ITEM.exec(lines[i]);
    const ordered = /\d/.test(first[2]);
    const listEl = el(ordered ? 'ol' : 'ul', null);
    if (ordered && parseInt(first[2], 10) !== 1) listEl.start = parseInt(first[2], 10);
    let loose = false;
    while (i < lines.length) {
      const m = ITEM.exec(lines[i]);
      if (!m || /\d/.test(m[2]) !== ordered) break;
      const indent = m[1].length + m[2].length + Math.min(m[3].length || 1, 4);
      const body = [m[4]];
      i++;
      while (i < lines.length) {
        const line = lines[i];
        if (blank(line)) {
          // A blank line continues the item when indented text follows.
          let j = i;
          while (j < lines.length && blank(lines[j])) j++;
          if (j < lines.length && /^\s*/.exec(lines[j])[0].length >= indent) {
            body.push(''); i++; loose = true; continue;
          }
          break;
        }
        const lead = /^\s*/.exec(line)[0].length;
        if (lead >= indent) { body.push(line.slice(indent)); i++; continue; }
        if (ITEM.test(line) || startsBlock(lines, i)) break;
        body.push(line.trim()); i++; // a lazy continuation of the item's text
      }
      const li = el('li', null);
      blocks(body, li);
      listEl.append(li);
      // A blank line between items makes the list loose.
      let j = i;
      while (j < lines.length && blank(lines[j])) j++;
      if (j > i && j < lines.length && ITEM.test(lines[j]) && /\d/.test(ITEM.exec(lines[j])[2]) === ordered) {
        loose = true; i = j;
      }
    }
    if (!loose) {
      // Tight: items hold their text, not paragraphs.
      for (const li of listEl.children) {
        for (const p of [...li.children]) if (p.tagName === 'P') p.replaceWith(...p.childNodes);
      }
    }
    parent.append(listEl);
    return i;
  }

  /** Block Markdown in `lines` as nodes appended to `parent`. */
  function blocks(lines, parent) {
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      let m;
      if (blank(line)) { i++; continue; }
      if ((m = FENCE.exec(line))) {
        const fence = m[1];
        const body = [];
        i++;
        // An unclosed fence (an answer still streaming) runs to the end.
        while (i < lines.length && !(lines[i].trim().startsWith(fence) && /^[`~]+$/.test(lines[i].trim()))) {
          body.push(lines[i]); i++;
        }
        i++;
        parent.append(codeBlock(body.join('\n'), m[2]));
        continue;
      }
      if ((m = HEADING.exec(line))) {
        // Answers sit under the page's h3: their headings start at h4.
        const h = el('h' + Math.min(m[1].length + 3, 6), 'md-heading');
        inline(m[2] || '', h);
        parent.append(h); i++; continue;
      }
      if (RULE.test(line)) { parent.append(el('hr', null)); i++; continue; }
      if (QUOTE.test(line)) {
        const body = [];
        while (i < lines.length && !blank(lines[i]) && (QUOTE.test(lines[i]) || body.length)) {
          if (!QUOTE.test(lines[i]) && startsBlock(lines, i)) break;
          body.push(lines[i].replace(QUOTE, '')); i++;
        }
        const q = el('blockquote', null);
        blocks(body, q);
        parent.append(q); continue;
      }
      if (ITEM.test(line)) { i = list(lines, i, parent); continue; }
      if (isTable(lines, i)) { i = table(lines, i, parent); continue; }
      const para = [line.trim()];
      i++;
      while (i < lines.length && !blank(lines[i]) && !startsBlock(lines, i)) {
        para.push(lines[i].trim()); i++;
      }
      const p = el('p', null);
      inline(para.join('\n'), p);
      parent.append(p);
    }
  }

  /** `text` rendered as Markdown, as DOM nodes (never parsed as HTML). */
  function render(text) {
    const frag = document.createDocumentFragment();
    blocks(String(text).replace(/\r\n?/g, '\n').split('\n'), frag);
    return frag;
  }

  window.Markdown = { render, safeUrl };
})();
