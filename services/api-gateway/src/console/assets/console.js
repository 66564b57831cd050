// The ramen console's own script (no libraries). What it does:
// - every <form data-api> calls the REST API itself: same origin, the session cookie, and the
//   `ramen_csrf` cookie echoed in `x-csrf-token` (the API's double-submit check); the API's
//   `{"error": {...}}` is shown inline in the form, on the field it names when it names one;
// - `data-confirm` asks first in the page's <dialog> (`data-confirm-type`: type a name);
// - `data-refresh` elements are re-fetched as HTML fragments while the page is visible;
// - `[data-job-events]` follows a deploy job over the API's SSE route and renders its log;
// - an expired access token is renewed once with the refresh cookie, then the call retried.
'use strict';

(() => {
  const $ = (sel, root = document) => root.querySelector(sel);
  const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

  function csrf() {
    const pair = document.cookie.split('; ').find((c) => c.startsWith('ramen_csrf='));
    return pair ? decodeURIComponent(pair.slice('ramen_csrf='.length)) : '';
  }

  let refreshing = null;
  function refreshSession() {
    if (!csrf()) return Promise.resolve(false);
    if (!refreshing) {
      refreshing = fetch('/api/auth/refresh', {
        method: 'POST', credentials: 'same-origin', headers: { 'x-csrf-token': csrf() },
      }).then((r) => r.ok, () => false).finally(() => { setTimeout(() => { refreshing = null; }, 0); });
    }
    return refreshing;
  }

  async function api(method, path, body) {
    const send = () => {
      const init = { method, credentials: 'same-origin', headers: { accept: 'application/json', 'x-csrf-token': csrf() } };
      if (body !== undefined) {
        init.headers['content-type'] = 'application/json';
        init.body = JSON.stringify(body);
      }
      return fetch(path, init);
    };
    let res;
    try {
      res = await send();
      if (res.status === 401 && !path.startsWith('/api/auth/') && await refreshSession()) res = await send();
    } catch (e) {
      return { ok: false, status: 0, json: { error: { code: 'network', message: 'The API did not answer: ' + e.message } } };
    }
    const text = await res.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch (_) { json = null; }
    return { ok: res.ok, status: res.status, json };
  }

  // ---- forms -----------------------------------------------------------------------------
  class FieldError extends Error {
    constructor(field, message) { super(message); this.field = field; }
  }

  function setPath(obj, name, value) {
    const parts = name.split('.');
    let at = obj;
    for (const p of parts.slice(0, -1)) at = at[p] = at[p] || {};
    at[parts[parts.length - 1]] = value;
  }
  function getPath(obj, name) {
    return name.split('.').reduce((at, p) => (at == null ? undefined : at[p]), obj);
  }

  function value(el) {
    const kind = el.dataset.kind || 'text';
    const raw = el.value;
    const optional = el.dataset.optional !== undefined;
    if (optional && raw.trim() === '' && kind !== 'bool') return undefined;
    switch (kind) {
      case 'bool': return el.checked;
      case 'int': {
        if (raw.trim() === '') return 0;
        const n = Number(raw);
        if (!Number.isInteger(n)) throw new FieldError(el, 'a whole number');
        return n;
      }
      case 'list': return raw.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
      case 'json':
        try { return JSON.parse(raw); } catch (e) { throw new FieldError(el, 'not valid JSON: ' + e.message); }
      case 'datetime': {
        const at = new Date(raw.length === 16 ? raw + ':00Z' : raw);
        if (Number.isNaN(at.getTime())) throw new FieldError(el, 'not a date and time');
        return at.toISOString().replace('.000Z', 'Z');
      }
      default: return raw;
    }
  }

  function collect(form) {
    const out = {};
    for (const el of form.elements) {
      if (el.dataset.sameAs) {
        const other = form.elements.namedItem(el.dataset.sameAs);
        if (other && other.value !== el.value) throw new FieldError(el, 'does not match');
        continue;
      }
      if (!el.name || el.disabled || el.dataset.skip !== undefined || el.type === 'submit' || el.type === 'button') continue;
      if (el.dataset.kind === 'checks') {
        const list = getPath(out, el.name) || [];
        if (el.checked) list.push(el.value);
        setPath(out, el.name, list);
        continue;
      }
      const v = value(el);
      if (v !== undefined) setPath(out, el.name, v);
    }
    return out;
  }

  // `{name}` in a path or URL from the response, then the form's values (used ones leave the body).
  function fill(template, payload, answer, consume) {
    return template.replace(/\{([a-z_.]+)\}/g, (_, key) => {
      let v = answer ? getPath(answer, key) : undefined;
      if (v === undefined) {
        v = getPath(payload, key);
        if (consume && v !== undefined) delete payload[key];
      }
      return encodeURIComponent(v === undefined ? '' : String(v));
    });
  }

  function clearErrors(form) {
    for (const box of $$('.form-error', form)) { box.hidden = true; box.textContent = ''; }
    for (const el of $$('[aria-invalid]', form)) el.removeAttribute('aria-invalid');
    for (const el of $$('.field-error', form)) el.remove();
  }

  function fieldMessage(el, message) {
    el.setAttribute('aria-invalid', 'true');
    const note = document.createElement('span');
    note.className = 'field-error';
    note.textContent = message;
    (el.closest('label') || el.parentElement).append(note);
    el.focus();
  }

  function showError(form, message, field) {
    const box = $('.form-error', form);
    if (field) fieldMessage(field, message);
    if (box) { box.textContent = message; box.hidden = false; } else if (!field) { window.alert(message); }
  }

  // The API names a field first: `name: ...`, `zones[1]: ...`, `restrictions.max_workers_per_zone: ...`.
  function apiError(form, res) {
    const err = (res.json && res.json.error) || { message: 'The API answered ' + res.status };
    const message = err.message || err.code || 'refused';
    const named = /^([a-z_][a-z0-9_.]*)(\[\d+\])?:\s/.exec(message);
    const field = named && form.elements.namedItem(named[1]);
    showError(form, message, field instanceof Element ? field : null);
  }

  function confirmWith(form) {
    const dialog = $('#confirm');
    const text = form.dataset.confirm;
    if (!dialog || typeof dialog.showModal !== 'function') return Promise.resolve(window.confirm(text));
    const expect = form.dataset.confirmType || '';
    $('[data-text]', dialog).textContent = text;
    $('[data-title]', dialog).textContent = form.dataset.confirmTitle || 'Are you sure?';
    const typed = $('[data-typed]', dialog);
    const input = $('input[name="typed"]', dialog);
    const ok = $('[data-ok]', dialog);
    typed.hidden = !expect;
    $('[data-expect]', dialog).textContent = expect;
    input.value = '';
    ok.disabled = Boolean(expect);
    input.oninput = () => { ok.disabled = input.value !== expect; };
    dialog.returnValue = '';
    dialog.showModal();
    if (expect) input.focus(); else ok.focus();
    return new Promise((resolve) => {
      dialog.addEventListener('close', () => resolve(dialog.returnValue === 'ok' && (!expect || input.value === expect)), { once: true });
    });
  }

  function go(url) { window.location.assign(url); }

  const after = {
    async 'github-token'(form, payload, answer) {
      const token = form.elements.namedItem('github_token');
      if (!token || !token.value) return true;
      const res = await api('PUT', '/api/groups/' + encodeURIComponent(answer.name) + '/secrets/GITHUB_TOKEN', { value: token.value });
      if (!res.ok) { apiError(form, res); return false; }
      return true;
    },
  };

  function show(form, answer) {
    const box = $('[data-result]', form);
    if (!box) return;
    for (const el of $$('[data-field]', box)) {
      const v = getPath(answer || {}, el.dataset.field);
      el.textContent = v === undefined || v === null ? '' : String(v);
    }
    box.hidden = false;
  }

  async function submit(form) {
    clearErrors(form);
    let payload;
    try { payload = collect(form); } catch (e) {
      if (e instanceof FieldError) { showError(form, (e.field.name || 'field') + ': ' + e.message, e.field); return; }
      throw e;
    }
    if (form.dataset.confirm && !(await confirmWith(form))) return;
    const method = (form.dataset.method || 'POST').toUpperCase();
    const path = fill(form.dataset.api, payload, null, true);
    const hasBody = !['GET', 'DELETE'].includes(method) && Object.keys(payload).length > 0;
    const buttons = $$('button[type="submit"]', form);
    buttons.forEach((b) => { b.setAttribute('aria-busy', 'true'); b.disabled = true; });
    try {
      const res = await api(method, path, hasBody ? payload : (method === 'POST' ? {} : undefined));
      if (!res.ok) { apiError(form, res); return; }
      const answer = res.json;
      if (form.dataset.after && after[form.dataset.after] && !(await after[form.dataset.after](form, payload, answer))) return;
      const then = form.dataset.then || 'reload';
      if (then === 'reload') window.location.reload();
      else if (then === 'show') show(form, answer);
      else if (then === 'signin') {
        const next = form.dataset.next || '/';
        go(answer && answer.must_change_password ? '/password?next=' + encodeURIComponent(next) : next);
      } else if (then.startsWith('go:')) go(fill(then.slice(3), payload, answer, false).replace(/%2F/g, '/'));
    } finally {
      buttons.forEach((b) => { b.removeAttribute('aria-busy'); b.disabled = false; });
    }
  }

  document.addEventListener('submit', (ev) => {
    const form = ev.target.closest('form[data-api]');
    if (!form) return;
    ev.preventDefault();
    submit(form);
  });

  document.addEventListener('click', (ev) => {
    const reload = ev.target.closest('[data-reload]');
    if (reload) { window.location.reload(); return; }
    const copy = ev.target.closest('[data-copy]');
    if (copy) {
      const source = $('[data-field="' + copy.dataset.copy + '"]', copy.closest('form') || document);
      if (source && navigator.clipboard) navigator.clipboard.writeText(source.textContent).then(() => { copy.textContent = 'Copied'; }, () => {});
    }
  });

  // The sign-in page first tries to resume a session whose access token expired.
  const resume = $('form[data-resume]');
  if (resume && csrf()) {
    refreshSession().then((ok) => { if (ok) go(resume.dataset.next || '/'); });
  }

  // ---- fragments re-fetched while visible --------------------------------------------------
  function poll(el) {
    const every = Number(el.dataset.every) || 2000;
    const tick = async () => {
      if (!document.hidden) {
        try {
          let res = await fetch(el.dataset.refresh, { credentials: 'same-origin', headers: { 'x-console-fragment': '1' } });
          if (res.status === 401 && await refreshSession()) res = await fetch(el.dataset.refresh, { credentials: 'same-origin', headers: { 'x-console-fragment': '1' } });
          if (res.status === 401) { go('/sign-in?next=' + encodeURIComponent(location.pathname)); return; }
          if (res.ok) {
            const html = await res.text();
            // Keep open <details> open across a swap.
            const open = $$('details[open] > summary', el).map((s) => s.textContent);
            el.innerHTML = html;
            $$('details > summary', el).forEach((s) => { if (open.includes(s.textContent)) s.parentElement.open = true; });
            el.dataset.updated = String(Date.now());
            if (res.headers.get('x-console-final')) { el.dataset.final = '1'; return; }
          }
        } catch (_) { /* the next tick tries again */ }
      }
      setTimeout(tick, every);
    };
    setTimeout(tick, every);
  }
  $$('[data-refresh]').forEach(poll);

  // ---- the job log ------------------------------------------------------------------------
  const TERMINAL = ['succeeded', 'failed', 'cancelled', 'dead_lettered'];
  const TONE = {
    succeeded: 'ok', ready: 'ok', failed: 'bad', dead_lettered: 'bad', running: 'warn', queued: 'warn',
    pending: 'warn', failed_resumable: 'warn', cancelled: 'muted', skipped: 'muted', review: 'warn',
  };
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function badge(status) {
    const b = el('span', 'badge ' + (TONE[status] || 'muted'), String(status || 'unknown').replace(/_/g, ' '));
    b.dataset.status = status;
    return b;
  }
  function renderJob(root, job) {
    const state = $('[data-job-state]');
    if (state) state.replaceChildren(badge(job.state));
    const commit = $('[data-job-commit]');
    if (commit && job.commit) commit.textContent = job.commit;
    const error = $('[data-job-error]');
    if (error) { error.textContent = job.error || ''; error.hidden = !job.error; }
    const frag = document.createDocumentFragment();
    if (!job.zones || job.zones.length === 0) frag.append(el('p', 'muted', 'Waiting for the deployer to pick the job up…'));
    for (const z of job.zones || []) {
      const sec = el('section', 'zone-run');
      sec.dataset.zone = z.zone;
      const h = el('h2', '', z.zone + ' ');
      h.append(badge(z.status));
      const steps = el('ol', 'steps');
      for (const s of z.steps || []) {
        const li = el('li', 'step');
        li.dataset.step = s.step;
        li.dataset.status = s.status;
        const head = el('div', 'step-head');
        head.append(badge(s.status), ' ', el('strong', '', String(s.step).replace(/_/g, ' ')));
        if (s.outcome) head.append(' ', el('span', 'muted', s.outcome));
        li.append(head);
        if (s.error) li.append(el('p', 'error-text', s.error));
        for (const w of s.stuck || []) {
          const p = el('p', 'stuck', 'Stuck: ');
          p.append(el('code', '', w.worker), ' — ' + w.reason);
          li.append(p);
        }
        if (s.log && s.log.length) {
          const pre = el('pre', 'log', s.log.map((l) => l.text).join('\n') + '\n');
          li.append(pre);
        }
        steps.append(li);
      }
      sec.append(h, steps);
      frag.append(sec);
    }
    root.replaceChildren(frag);
    for (const pre of $$('pre.log', root)) pre.scrollTop = pre.scrollHeight;
    // A review just opened (its step logged how to decide): the page renders the diff and the
    // decision buttons, which the stream does not carry. Once per job, so it cannot loop.
    const waiting = (job.zones || []).some((z) => (z.steps || []).some((s) => s.step === 'review' && s.status === 'running' && s.log && s.log.length));
    const key = 'ramen-review-shown:' + job.id;
    if (waiting && !$('[data-review]') && !sessionStorage.getItem(key)) {
      sessionStorage.setItem(key, '1');
      window.location.reload();
    }
  }

  function follow(root) {
    let done = false;
    let retried = false;
    const open = () => {
      const source = new EventSource(root.dataset.jobEvents);
      source.addEventListener('job', (ev) => {
        retried = false; // followed again: a later refusal may be retried once more
        const job = JSON.parse(ev.data);
        renderJob(root, job);
        if (TERMINAL.includes(job.state)) {
          done = true;
          source.close();
          for (const gone of $$('[data-job-live], [data-job-cancel]')) gone.hidden = true;
          root.dataset.finished = job.state;
        }
      });
      source.addEventListener('error', (ev) => {
        if (ev.data) {
          const err = JSON.parse(ev.data).error || {};
          const box = $('[data-job-error]');
          if (box) { box.textContent = 'Job stream: ' + (err.message || err.code); box.hidden = false; }
        }
        if (done) return;
        if (source.readyState === EventSource.CLOSED && !retried) {
          // Refused, perhaps for an expired access token (a stream shows no status): ask the
          // API, renew only on its 401, and follow again once. Renewing unasked raced other
          // renewals (a reload mid-renewal keeps the used refresh token, and a refresh token
          // presented twice ends the whole session).
          retried = true;
          fetch('/api/auth/me', { credentials: 'same-origin' }).then(async (me) => {
            if (me.ok || (me.status === 401 && await refreshSession())) open();
          }, () => {});
        }
      });
    };
    open();
  }
  const log = $('[data-job-events]');
  if (log) follow(log);
})();
